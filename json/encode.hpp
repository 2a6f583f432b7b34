#pragma once

// Writing JSON that reads back. Boost.JSON writes a string's bytes as they are, and its parser
// accepts only valid UTF-8: a store record holding one Latin-1 byte (a reference's comment
// quoted by nvcc, a candidate's source) was written, then read back as "not JSON", so every
// campaign on that task ended with its outputs unwritten and its store reported damaged. Every
// JSON text of ours that can hold outside bytes (store records, the skill memory, the compile
// cache, the worker protocol, requests to a model, transcripts, results and --json output) is
// written by serialize() below, which replaces each byte that is not part of a valid UTF-8
// sequence with U+FFFD. JSON's own syntax is ASCII, so only strings change.

#include <boost/json/serialize.hpp>

#include <string>
#include <string_view>

namespace ks::encode {

/// Checks whether `text` is valid UTF-8 as Boost.JSON's parser reads it (RFC 3629: no overlong
/// form, no surrogate, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view text) noexcept;

/// Returns `text` with every byte that does not belong to a valid UTF-8 sequence replaced by
/// U+FFFD (EF BF BD); valid text comes back unchanged.
std::string valid_utf8(std::string_view text);

/// Returns `v` (a boost::json value, object, array or string) as JSON text that is valid UTF-8.
template <class T>
std::string serialize(const T& v) {
  std::string text = boost::json::serialize(v);
  return is_valid_utf8(text) ? text : valid_utf8(text);
}

} // namespace ks::encode
