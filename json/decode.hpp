#pragma once

// Field readers for decoding our JSON records and protocol lines (memory/'s store records and
// skill store, gpu/'s worker protocol): each reads one field of an object and checks its type,
// so that a decoder reads a field in one line. They throw decode::malformed with the message a
// reader of a corrupt record needs ("field 'median_ms' must be a number"). The exception never
// leaves the decoder that calls them: each decoder's entry point catches it and returns its own
// error (docs/coding-guidelines.md: no exception crosses a component's interface).

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace ks::decode {

/// The deepest nesting of arrays and objects parse() accepts by default (Boost.JSON's own
/// default is 32; a record or reply of ours nests at most 6).
inline constexpr std::size_t max_depth = 64;

/// Says what is wrong with a record or line being decoded.
struct malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Parses `text` as one JSON value: throws malformed when it is longer than `max_bytes`,
/// nested deeper than `depth`, or not JSON ("not JSON (syntax error)"). Boost.JSON's parser
/// is not recursive, so a deep text costs no stack; the limits bound memory.
boost::json::value parse(std::string_view text, std::size_t max_bytes,
                         std::size_t depth = max_depth);

/// Returns the field `key` of `o`; throws ("missing field 'key'") when there is none.
const boost::json::value& field(const boost::json::object& o, std::string_view key);

/// Returns `v` as an object; throws, naming it `what`, when it is not one.
const boost::json::object& as_object(const boost::json::value& v, std::string_view what);

/// Returns `v` as an array; throws, naming it `what`, when it is not one.
const boost::json::array& as_array(const boost::json::value& v, std::string_view what);

/// Returns the object field `key` of `o`; throws when it is missing or no object.
const boost::json::object& object_field(const boost::json::object& o, std::string_view key);

/// Returns the string field `key` of `o`; throws when it is missing or no string.
std::string string_field(const boost::json::object& o, std::string_view key);

/// Returns the string field `key` of `o`, or `fallback` when there is none; throws when it is
/// there but no string.
std::string string_field_or(const boost::json::object& o, std::string_view key,
                            std::string fallback);

/// Returns the integer field `key` of `o`; throws when it is missing, no number, or a number
/// with a fraction or exponent (3.0 too: the writers write integers without).
int64_t integer_field(const boost::json::object& o, std::string_view key);

/// Returns the number field `key` of `o` (an integer too); throws when it is missing or no
/// number.
double number_field(const boost::json::object& o, std::string_view key);

/// Returns the field `key` of `o` as a T: integer_field for an integral T, number_field for a
/// floating-point one.
template <class T>
T number(const boost::json::object& o, std::string_view key) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(number_field(o, key));
  else
    return static_cast<T>(integer_field(o, key));
}

/// Returns number<T>(o, key), or `fallback` when `o` has no field `key`.
template <class T>
T number_or(const boost::json::object& o, std::string_view key, T fallback) {
  return o.contains(key) ? number<T>(o, key) : fallback;
}

/// Returns the boolean field `key` of `o`, or `fallback` when there is none; throws when it is
/// there but no boolean.
bool bool_field_or(const boost::json::object& o, std::string_view key, bool fallback);

} // namespace ks::decode
