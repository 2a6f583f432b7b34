#include "config/toml_source.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace ks::config;
using Catch::Matchers::Contains;
using ks::test::repeated;

namespace {

/// Returns the message of parsing `text` as t.toml, failing the test if it parsed.
std::string refusal_of(const std::string& text) {
  auto parsed = parse_toml(text, "t.toml");
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().code() == errc::invalid_input);
  return parsed.error().message();
}

/// Checks that `text` parses, showing the error if not.
void check_parses(const std::string& text) {
  auto parsed = parse_toml(text, "t.toml");
  INFO(text.substr(0, 200) << "\n" << (parsed ? std::string() : parsed.error().message()));
  CHECK(parsed);
}

/// Returns the UTF-8 encoding of `code`, a code point below U+0800.
std::string utf8(uint32_t code) {
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else {
    out += static_cast<char>(0xc0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3f));
  }
  return out;
}

} // namespace

TEST_CASE("a table header or dotted key of 300,000 parts is refused before toml++ recurses "
          "through it",
          "[config][toml]") {
  // 600 KB: toml++ 3.3 made 300,000 nested tables and overflowed the stack walking them.
  std::string header = "[a" + repeated(".a", 299999) + "]\n";
  CHECK_THAT(refusal_of(header),
             Contains("t.toml:1:2: a dotted key or table header of more than 64 parts"));
  std::string key = "x = 1\ny = 2\n  b" + repeated(" . b", 99999) + " = 1\n";
  CHECK_THAT(refusal_of(key), Contains("t.toml:3:3: a dotted key or table header of more than"));
  CHECK_THAT(refusal_of("x = { " + std::string("c") + repeated(".\"c\"", 64) + " = 1 }\n"),
             Contains("t.toml:1:7: a dotted key"));

  // 64 parts are fine, and dots in strings, comments and numbers join no key.
  check_parses("[a" + repeated(".a", 63) + "]\nb" + repeated(".b", 63) + " = 1\n");
  check_parses("x = \"" + repeated("a.", 1000) + "\"\n# " + repeated("a.", 1000) + "\n");
  check_parses("x = '" + repeated("a.", 1000) + "'\ny = '''\n" + repeated("a.\n", 100) + "'''\n");
  check_parses("x = \"\"\"\\\"\"\" " + repeated("a.", 100) + "\"\"\"\n"); // an escaped quote
  check_parses("x = [" + repeated("1.5, ", 1000) + "2.5]\nt = 1979-05-27T07:32:00.999\n");
}

TEST_CASE("more than 4 MiB of TOML is refused before it is parsed", "[config][toml]") {
  std::string text = "# " + std::string(static_cast<size_t>(max_toml_bytes), 'x') + "\n";
  CHECK_THAT(refusal_of(text), Contains("t.toml:1:1: holds 4194307 bytes, more than the 4 MiB"));
  check_parses("# " + std::string(static_cast<size_t>(max_toml_bytes) - 3, 'x') + "\n");
}

TEST_CASE("a character outside ASCII is refused outside strings and comments, as are the code "
          "points toml++ 3.3 cannot classify after a backslash in a multi-line string",
          "[config][toml]") {
  // U+00A1 to U+0499 in a table header reached __builtin_unreachable in toml++ 3.3; every one
  // of them, and the ends of the range, is now refused by us with its position.
  for (uint32_t code = 0xa0; code <= 0x49a; ++code) {
    INFO("U+" << std::hex << code);
    CHECK_THAT(refusal_of("x = 1\n[a" + utf8(code) + ".c]\n"),
               Contains("t.toml:2:3: a character outside ASCII outside a string or a comment"));
  }
  CHECK_THAT(refusal_of("k" + utf8(0x3dd) + " = 1\n"), Contains("t.toml:1:2: a character outside"));
  CHECK_THAT(refusal_of("x = 1\xe3\x80\x80\n"), Contains("t.toml:1:6: a character outside"));
  // Where TOML allows them, in strings and comments, they pass.
  check_parses("\xef\xbb\xbf\"cl" + utf8(0xe9) + "\" = \"" + utf8(0x3dd) + "\" # " + utf8(0xa1) +
               "\n");
  check_parses("x = '''\n" + utf8(0x400) + "'''\ny = \"\"\"a\\\n  b" + utf8(0x400) + "\"\"\"\n");

  // After a backslash in a multi-line basic string toml++ asks whether the next character, and
  // after a line-ending backslash each one until the first it keeps, is white space.
  CHECK_THAT(refusal_of("y = \"\"\"a\\\n   " + utf8(0x400) + "\"\"\"\n"),
             Contains("t.toml:2:4: a character of U+00A1 to U+0499 right after a backslash"));
  CHECK_THAT(refusal_of("y = \"\"\"a\\" + utf8(0xa1) + "\"\"\"\n"),
             Contains("t.toml:1:10: a character of U+00A1 to U+0499"));
  check_parses("y = \"\"\"a\\\n   " + utf8(0x4a0) + "\"\"\"\n"); // above the range: toml++ is right
}
