#include "memory/json_text.hpp"

#include "json/decode.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>

#include <charconv>

namespace json = boost::json;

namespace ks::memory {

namespace {

// Boost.JSON's own handler (detail/handler.hpp), except that a double is re-read from its
// text. A number may arrive in parts (on_number_part) when the input is split; here it never
// is, but the parts are collected anyway so that correctness does not depend on it.
struct exact_handler {
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  json::value_stack st;
  std::string number;

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) { return true; }
  bool on_object_end(std::size_t n, json::error_code&) {
    st.push_object(n);
    return true;
  }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t n, json::error_code&) {
    st.push_array(n);
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code&) {
    st.push_key(s);
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    st.push_string(s);
    return true;
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    number.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
    number.clear();
    st.push_int64(i);
    return true;
  }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
    number.clear();
    st.push_uint64(u);
    return true;
  }
  bool on_double(double d, json::string_view s, json::error_code&) {
    number.append(s.data(), s.size());
    double exact = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), exact);
    // Out of range (1e999): keep what Boost made of it (an infinity), as json::parse would.
    if (ec == std::errc() && end == number.data() + number.size())
      d = exact;
    number.clear();
    st.push_double(d);
    return true;
  }
  bool on_bool(bool b, json::error_code&) {
    st.push_bool(b);
    return true;
  }
  bool on_null(json::error_code&) {
    st.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

} // namespace

json::value parse_exact(std::string_view text, std::string& why) {
  json::basic_parser<exact_handler> parser(json::parse_options{});
  parser.handler().st.reset();
  json::error_code ec;
  std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && used < text.size())
    ec = json::error::extra_data;
  if (ec) {
    why = ec.message();
    return nullptr;
  }
  return parser.handler().st.release();
}

json::object open_record(std::string_view value, std::string_view tag, int64_t version) {
  std::string why;
  json::value v = parse_exact(value, why);
  if (!why.empty())
    throw decode::malformed("not JSON (" + why + ")");
  if (!v.is_object())
    throw decode::malformed("not a JSON object");
  json::object& o = v.get_object();
  auto ver = o.find("v");
  if (ver == o.end() || !ver->value().is_int64())
    throw decode::malformed("no format version 'v'");
  if (ver->value().get_int64() != version)
    throw decode::malformed("format version " + std::to_string(ver->value().get_int64()) +
                            " (this kernelskill reads version " + std::to_string(version) + ")");
  std::string type = decode::string_field(o, "type");
  if (type != tag)
    throw decode::malformed("type '" + type + "' where '" + std::string(tag) + "' belongs");
  return std::move(o);
}

} // namespace ks::memory
