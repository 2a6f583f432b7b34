#pragma once

#include <cstdint>

namespace ks::base {

enum class errc : int32_t;
class error;
struct step_stats;
class step_timer;

} // namespace ks::base
