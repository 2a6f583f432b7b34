#pragma once

namespace ks::engine {

struct tensor_spec;
struct tolerance;
struct task_cost;
struct task;
class error;

} // namespace ks::engine
