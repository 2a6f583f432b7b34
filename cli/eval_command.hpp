#pragma once

#include "cli/command_result.hpp"

#include <cstdint>
#include <filesystem>
#include <string>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill eval`.
struct eval_options {
  std::filesystem::path task;      ///< the task manifest (TOML)
  std::filesystem::path candidate; ///< the candidate's CUDA source
  bool json = false;
  std::string arch;         ///< empty: the device's own
  int32_t trials = 3;       ///< correctness trials, each on fresh inputs
  uint64_t seed = 20261126; ///< trial i draws its inputs with seed + i
  bool no_time = false;
  std::filesystem::path cache_dir; ///< empty: the default cache
  int32_t device = 0;
  std::filesystem::path worker;        ///< empty: gpu::default_worker_executable()
  double job_timeout_s = 0;            ///< the watchdog of every worker job; 0: the defaults
  bool sandbox = false;                ///< runs the worker inside bubblewrap
  std::filesystem::path baselines;     ///< torch baselines file; empty: no torch comparison
  bool allow_vendor_libraries = false; ///< measures a candidate that uses cuBLAS & co., labelled
};

/// Adds the `eval` subcommand to `app`, its options stored in `opt`; returns it.
CLI::App* add_eval_command(CLI::App& app, eval_options& opt);

/// Compiles, verifies and times one candidate against its task's reference; prints the
/// report (text or JSON) on stdout and progress on stderr.
[[nodiscard]] command_result run_eval(const eval_options& opt);

} // namespace ks::cli
