#pragma once

#include "cli/command_result.hpp"

#include <boost/json/object.hpp>

#include <filesystem>
#include <vector>

namespace CLI {
class App;
}

namespace ks::engine {
struct task;
}

namespace ks::cli {

/// The options of `kernelskill task show`.
struct task_show_options {
  std::vector<std::filesystem::path> paths; ///< manifests, or suite folders (their *.toml)
  bool json = false;
};

/// Adds `show` below the `task` command `task`, its options stored in `opt`; returns it.
CLI::App* add_task_show_command(CLI::App& task, task_show_options& opt);

/// Prints each task of `opt.paths` as the engine resolves it (what a family derived: cost and
/// torch expression; every tensor with its dtype, shape and init), as text or as one JSON
/// document. A manifest that does not load stops it: usage error when missing, task error
/// (every problem, FILE:LINE:COL) when invalid.
[[nodiscard]] command_result run_task_show(const task_show_options& opt);

/// Returns task `t` as one element of `task show --json`'s "tasks" (the grammar at the top of
/// task_show_command.cpp); `kernelskill export` hands its generator the same object.
boost::json::object task_show_json(const engine::task& t);

} // namespace ks::cli
