#pragma once

#include "base/fwd.hpp"

namespace ks::engine {

struct tensor_spec;
struct tolerance;
struct task_cost;
struct task;
using base::error;

} // namespace ks::engine
