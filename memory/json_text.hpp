#pragma once

// Reads JSON text with numbers converted exactly. Boost.JSON 1.81's parser rounds some
// doubles to a neighbour (about 7.5% of random values come back one ulp off), and a store
// must give back the timings it was given: a resumed judge compares them with new ones. Its
// serializer already writes the shortest text that reads back exactly, so only parsing needs
// care: this parser hands each number's text to std::from_chars, which rounds correctly.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace ks::memory {

/// Parses `text` as one JSON value (nothing but blanks after it), reading every number with
/// std::from_chars; on malformed text returns null and sets `why` to the parser's message.
boost::json::value parse_exact(std::string_view text, std::string& why);

/// Returns the record `value` (one JSON object, parsed with parse_exact) once its format
/// version "v" is `version` and its type tag "type" is `tag`; throws decode::malformed
/// (json/decode.hpp) saying which is not.
boost::json::object open_record(std::string_view value, std::string_view tag, int64_t version);

} // namespace ks::memory
