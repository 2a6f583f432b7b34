#include "json/decode.hpp"
#include "json/encode.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <string>

using ks::encode::is_valid_utf8;
using ks::encode::valid_utf8;
namespace json = boost::json;

TEST_CASE("JSON written from bytes that are not UTF-8 reads back, each bad byte as U+FFFD",
          "[json]") {
  // A Latin-1 comment of a reference (r\xe9f), a cut character, a lone continuation byte, an
  // overlong slash, an encoded surrogate, a code point above U+10FFFF: Boost.JSON writes them
  // as they are and reads none of them back.
  const std::string bad = "r\xe9"
                          "f \xc3 \x80 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80";
  json::object o{{"text", bad}, {bad, 1}};
  std::string raw = json::serialize(o);
  CHECK_FALSE(is_valid_utf8(raw));
  CHECK_THROWS_AS(ks::decode::parse(raw, 1 << 20), ks::decode::malformed);

  std::string text = ks::encode::serialize(o);
  CHECK(is_valid_utf8(text));
  json::value back = ks::decode::parse(text, 1 << 20);
  const std::string fffd = "\xef\xbf\xbd";
  const std::string repaired = "r" + fffd + "f " + fffd + " " + fffd + " " + fffd + fffd + " " +
                               fffd + fffd + fffd + " " + fffd + fffd + fffd + fffd;
  CHECK(std::string(back.as_object().at("text").as_string()) == repaired);
  CHECK(back.as_object().contains(repaired));

  // Valid text, ASCII or not, is written as Boost.JSON writes it.
  json::object fine{{"text", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf"}};
  CHECK(ks::encode::serialize(fine) == json::serialize(fine));
  CHECK(valid_utf8("") == "");
  CHECK(is_valid_utf8("\xf4\x8f\xbf\xbf")); // U+10FFFF, the last code point
}
