#pragma once

#include "cli/command_result.hpp"

#include <cstdint>
#include <filesystem>
#include <string>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill profile`.
struct profile_command_options {
  std::filesystem::path task;      ///< the task manifest (TOML)
  std::filesystem::path candidate; ///< the candidate's CUDA source
  bool json = false;
  std::string arch;                ///< empty: the device's own
  bool counters = true;            ///< false: the activity records only (--no-counters)
  int32_t max_ranges = 64;         ///< more launches per call: one range around the call
  uint64_t seed = 20261126;        ///< draws the inputs, as timing draws them
  std::filesystem::path cache_dir; ///< empty: the default cache
  int32_t device = 0;
  std::filesystem::path worker;        ///< empty: gpu::default_worker_executable()
  double job_timeout_s = 0;            ///< the watchdog of every worker job; 0: the defaults
  bool sandbox = false;                ///< runs the worker inside bubblewrap
  bool allow_vendor_libraries = false; ///< profiles a candidate that uses cuBLAS & co.
};

/// Adds the `profile` subcommand to `app`, its options stored in `opt`; returns it.
CLI::App* add_profile_command(CLI::App& app, profile_command_options& opt);

/// Compiles one candidate, profiles one call of it on the GPU (every kernel it launches, and
/// the hardware counters where the GPU lets them be read) and diagnoses its bottleneck;
/// prints the per-kernel table and the diagnosis with its evidence (text or JSON) on stdout,
/// progress on stderr.
[[nodiscard]] command_result run_profile(const profile_command_options& opt);

} // namespace ks::cli
