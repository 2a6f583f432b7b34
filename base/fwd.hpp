#pragma once

#include <cstdint>

namespace ks::base {

enum class errc : int32_t;
class error;

} // namespace ks::base
