#pragma once

#include "cli/command_result.hpp"

#include <atomic>
#include <filesystem>
#include <string>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill run`.
struct run_command_options {
  std::filesystem::path config;    ///< the campaign config (TOML)
  bool dry_run = false;            ///< plan, code and compile one round; no GPU
  std::string arch;                ///< empty: the GPU's own (sm_90a with --dry-run)
  std::filesystem::path worker;    ///< empty: gpu::default_worker_executable()
  std::filesystem::path cache_dir; ///< empty: <output>/cache
  std::filesystem::path baselines; ///< torch baselines file; empty: report.torch_baselines
  double progress_s = 5;           ///< live progress on stderr every this many seconds; 0: none
  bool overwrite = false;          ///< use an output folder that holds something else
};

/// Adds the `run` subcommand to `app`, its options stored in `opt`; returns it.
CLI::App* add_run_command(CLI::App& app, run_command_options& opt);

/// Runs (or resumes) the campaign of `opt.config` until it finishes or `stop` is set; prints
/// the summary table on stdout. Stops with `interrupted` when `stop` ended it.
[[nodiscard]] command_result run_run(const run_command_options& opt, std::atomic<bool>& stop);

} // namespace ks::cli
