#include "json/decode.hpp"

#include <boost/json/parse.hpp>

#include <limits>

namespace json = boost::json;

namespace ks::decode {

namespace {

[[noreturn]] void refuse(std::string_view key, std::string_view what) {
  throw malformed("field '" + std::string(key) + "' " + std::string(what));
}

} // namespace

json::value parse(std::string_view text, std::size_t max_bytes, std::size_t depth) {
  if (text.size() > max_bytes)
    throw malformed("the text is " + std::to_string(text.size()) + " bytes, more than the " +
                    std::to_string(max_bytes) + " allowed");
  json::parse_options options;
  options.max_depth = depth;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec, {}, options);
  if (ec)
    throw malformed("not JSON (" + ec.message() + ")");
  return v;
}

const json::value& field(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end())
    throw malformed("missing field '" + std::string(key) + "'");
  return it->value();
}

const json::object& as_object(const json::value& v, std::string_view what) {
  if (!v.is_object())
    throw malformed("'" + std::string(what) + "' must be an object");
  return v.get_object();
}

const json::array& as_array(const json::value& v, std::string_view what) {
  if (!v.is_array())
    throw malformed("'" + std::string(what) + "' must be an array");
  return v.get_array();
}

const json::object& object_field(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  if (!v.is_object())
    refuse(key, "must be an object");
  return v.get_object();
}

std::string string_field(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  if (!v.is_string())
    refuse(key, "must be a string");
  return std::string(v.get_string());
}

std::string string_field_or(const json::object& o, std::string_view key, std::string fallback) {
  return o.contains(key) ? string_field(o, key) : fallback;
}

int64_t integer_field(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  if (v.is_int64())
    return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(v.get_uint64());
  refuse(key, "must be an integer");
}

double number_field(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  if (!v.is_number())
    refuse(key, "must be a number");
  return v.to_number<double>();
}

bool bool_field_or(const json::object& o, std::string_view key, bool fallback) {
  if (!o.contains(key))
    return fallback;
  const json::value& v = field(o, key);
  if (!v.is_bool())
    refuse(key, "must be true or false");
  return v.get_bool();
}

} // namespace ks::decode
