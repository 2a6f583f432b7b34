#pragma once

// engine/'s names for base/'s error type (base/error.hpp): the code across engine/,
// memory/, gpu/ and agents/ says engine::error, engine::errc, engine::expected<T> and
// engine::fail.

#include "base/error.hpp"

namespace ks::engine {

using base::errc;
using base::error;
using base::expected;
using base::fail;
using base::to_string;

} // namespace ks::engine
