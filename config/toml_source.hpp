#pragma once

// Reading a TOML file the way every file of ours is read: a syntax error is one
// FILE:LINE:COL: message, and every later problem is reported at the position toml++ gives
// the offending node. Private to the components that parse TOML (config/ and engine/'s task
// manifests), which both build toml++ header-only with the same settings.

#include "config/diagnostics.hpp"
#include "config/error.hpp"

#include <toml++/toml.h>

#include <string>
#include <string_view>

namespace ks::config {

/// Returns where `region` begins; 1:1 for nodes toml++ made without source (implicit tables).
position position_of(const toml::source_region& region);

/// Returns the type of `node` with its article, as messages say it: "an integer", "a string",
/// "an array"; "nothing" for no node.
std::string type_name(const toml::node& node);

/// Returns `node` as its author wrote it (-3, 2.5, "f8", []), else its type_name.
std::string describe(const toml::node& node);

/// Parses `text`, named `file` in messages; fails with invalid_input and the syntax error at
/// its FILE:LINE:COL.
[[nodiscard]] expected<toml::table> parse_toml(std::string_view text, const std::string& file);

} // namespace ks::config
