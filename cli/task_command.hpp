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
  std::string arch = "sm_90a";                  ///< what the reference is compiled for
  std::filesystem::path cache_dir;              ///< empty: the default cache

  // -- new -----------------------------------------------------------------------------------
  std::string name; ///< the task's name, [a-z0-9_]+
  std::string family = "elementwise";
  std::filesystem::path dir = "."; ///< where NAME.toml and NAME_ref.cu are written
  std::vector<int64_t> shape = {1024, 1024};
  bool force = false; ///< overwrite existing files
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
/// values, and (unless opt.no_compile) that its reference compiles for opt.arch.
[[nodiscard]] command_result run_task_check(const task_options& opt);

/// Writes opt.dir/NAME.toml and opt.dir/NAME_ref.cu: a manifest and an elementwise reference
/// that check, compile and run as they are, for the user to turn into their op.
[[nodiscard]] command_result run_task_new(const task_options& opt);

} // namespace ks::cli
