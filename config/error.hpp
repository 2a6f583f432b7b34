#pragma once

// config/'s names for base/'s error type (base/error.hpp): a config error is errc::invalid_input
// (the file is not valid TOML, or holds unknown keys or bad values; one `FILE:LINE:COL:
// message` line per problem), errc::io (the file could not be read) or errc::not_found.

#include "base/error.hpp"

namespace ks::config {

using base::errc;
using base::error;
using base::expected;
using base::fail;
using base::to_string;

} // namespace ks::config
