#pragma once

// Reading a TOML file the way every file of ours is read: a syntax error is one
// FILE:LINE:COL: message, and every later problem is reported at the position toml++ gives
// the offending node. Private to the components that parse TOML (config/, engine/'s task
// manifests and skills, cli/config_loading.cpp), which all build toml++ header-only with the
// same settings.
//
// What toml++ 3.3 does not guard against is refused here, before it parses:
//
//   - more than max_toml_bytes of text (a device such as /dev/zero named as a file);
//   - a dotted key or table header of more than max_key_parts parts: toml++ limits the nesting
//     of arrays and inline tables (256) but makes one table per part of a dotted key, then
//     walks and destroys them recursively (a 600 KB header of 300,000 parts overflowed the
//     stack: SIGSEGV in toml::impl::parser::update_region_ends);
//   - where toml++ 3.3 asks whether a code point is white space: its generated table reaches
//     __builtin_unreachable for U+00A1-U+0499, U+2C5E-U+2FFF, U+3001-U+3057 and
//     U+FB26-U+FEFE (undefined behaviour; fixed in toml++ 3.4; the fuzz targets found the
//     ranges after the first).
//     It asks (parser.inl: is_whitespace, is_horizontal_whitespace, is_value_terminator) of
//     every character outside strings and comments, where TOML 1.0 allows only ASCII, so any
//     other character there is refused; of the character after a backslash in a multi-line
//     basic string, and after a line-ending backslash of each until the first it keeps (its
//     white space, which it skips there, includes U+00A0, U+3000, U+FEFF and a few more); and,
//     reading a value that starts with a digit or a sign ahead to its end, of each character
//     up to a space, ']', '}', ',' or '#', strings included (found by the manifest fuzz
//     target: `x = -a"<U+017F>"`). The code points of those ranges are refused there.

#include "config/diagnostics.hpp"
#include "config/error.hpp"

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ks::config {

/// The largest TOML text parsed (a config, a task manifest, a skill), in bytes; ours are at
/// most a few KB, an imported manifest that keeps its module's source some tens of KB.
inline constexpr int64_t max_toml_bytes = int64_t{4} << 20;

/// The most parts one dotted key or table header may chain; ours chain at most 3.
inline constexpr int32_t max_key_parts = 64;

/// Checks `text` against the rules above without parsing it: nullopt when it passes, else
/// where the first problem is and what it is. Follows TOML's comments and four kinds of
/// strings as toml++ does, so that a dot inside either never counts; a run of parts joined by
/// dots outside them is a dotted key (a float's "1.5" is two parts, well within the bound).
std::optional<std::pair<position, std::string>> toml_limit_error(std::string_view text);

/// Returns where `region` begins; 1:1 for nodes toml++ made without source (implicit tables).
position position_of(const toml::source_region& region);

/// Returns the type of `node` with its article, as messages say it: "an integer", "a string",
/// "an array"; "nothing" for no node.
std::string type_name(const toml::node& node);

/// Returns `node` as its author wrote it (-3, 2.5, "f8", []), else its type_name.
std::string describe(const toml::node& node);

/// Parses `text`, named `file` in messages; fails with invalid_input and the syntax error at
/// its FILE:LINE:COL, or the bound of toml_limit_error() it passes.
[[nodiscard]] expected<toml::table> parse_toml(std::string_view text, const std::string& file);

} // namespace ks::config
