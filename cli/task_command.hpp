#pragma once

#include "cli/command_result.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill task check` and `kernelskill task new`.
struct task_options {
  // -- check ---------------------------------------------------------------------------------
  std::vector<std::filesystem::path> manifests; ///< the manifests to check
  bool no_compile = false;                      ///< skip compiling the reference
  bool strict = false;                          ///< a warning fails the manifest
  std::string arch = "sm_90a";                  ///< what the reference is compiled for
  std::filesystem::path cache_dir;              ///< empty: the default cache
  double gpu_memory_gb = 0; ///< the target GPU's memory; 0: the calibration cache's, or assumed

  // -- new -----------------------------------------------------------------------------------
  std::string name; ///< the task's name, [a-z0-9_]+
  std::string family = "elementwise";
  std::filesystem::path dir = "."; ///< where NAME.toml (and for custom NAME_ref.cu) are written
  std::vector<int64_t> shape;      ///< empty: the family's default
  bool force = false;              ///< overwrite existing files
};

/// The two commands below `task`, for main to tell which one ran.
struct task_commands {
  CLI::App* check = nullptr;
  CLI::App* create = nullptr;
};

/// Adds `task` with its subcommands `check` and `new` to `app`, options stored in `opt`.
task_commands add_task_command(CLI::App& app, task_options& opt);

/// Checks each manifest of `opt.manifests`: its keys and values (FILE:LINE:COL), that its
/// tunables are overridable macros of its reference with their defaults among the listed
/// values, and (unless opt.no_compile) that its reference compiles for opt.arch; then prints
/// its warnings (engine/task_warnings.hpp), which fail it with opt.strict.
[[nodiscard]] command_result run_task_check(const task_options& opt);

/// Writes the skeleton of task opt.name of opt.family (engine/task_skeleton.hpp) into opt.dir:
/// NAME.toml, a family manifest, or for custom also NAME_ref.cu, a hand-written reference;
/// they check, compile and run as they are, for the user to turn into their op.
[[nodiscard]] command_result run_task_new(const task_options& opt);

} // namespace ks::cli
