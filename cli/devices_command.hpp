#pragma once

#include "cli/command_result.hpp"

#include <filesystem>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill devices`.
struct devices_options {
  bool json = false;
  bool recalibrate = false;
  std::filesystem::path cache_dir; ///< empty: the default cache
  std::filesystem::path worker;    ///< empty: gpu::default_worker_executable()
};

/// Adds the `devices` subcommand to `app`, its options stored in `opt`; returns it.
CLI::App* add_devices_command(CLI::App& app, devices_options& opt);

/// Lists every CUDA device with its properties and calibrated peaks.
[[nodiscard]] command_result run_devices(const devices_options& opt);

} // namespace ks::cli
