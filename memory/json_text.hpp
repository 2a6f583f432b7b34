#pragma once

// Reads JSON text with numbers converted exactly. Boost.JSON 1.81's parser rounds some
// doubles to a neighbour (about 7.5% of random values come back one ulp off), and a store
// must give back the timings it was given: a resumed judge compares them with new ones. Its
// serializer already writes the shortest text that reads back exactly, so only parsing needs
// care: this parser hands each number's text to std::from_chars, which rounds correctly.

#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace ks::memory {

/// Parses `text` as one JSON value (nothing but blanks after it), reading every number with
/// std::from_chars; on malformed text returns null and sets `why` to the parser's message.
boost::json::value parse_exact(std::string_view text, std::string& why);

} // namespace ks::memory
