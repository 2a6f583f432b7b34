#pragma once

#include "cli/command_result.hpp"

#include <filesystem>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill config`.
struct config_options {
  bool defaults = false;       ///< print the commented default config
  std::filesystem::path check; ///< validate this config file
  bool overwrite = false;      ///< as `run --overwrite`: a folder holding something else is fine
};

/// Adds the `config` subcommand to `app`, its options stored in `opt`; returns it.
CLI::App* add_config_command(CLI::App& app, config_options& opt);

/// Prints the default config, or validates a config file and prints "ok" or its errors.
[[nodiscard]] command_result run_config(const config_options& opt);

} // namespace ks::cli
