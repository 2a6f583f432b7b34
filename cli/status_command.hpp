#pragma once

#include "cli/command_result.hpp"

#include <filesystem>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill status` and `kernelskill inspect`: the campaign's output folder.
struct output_dir_options {
  std::filesystem::path output;
  std::filesystem::path export_dir; ///< status only: also write results.json etc. there
  bool json = false;                ///< print JSON instead of text
};

/// Adds the `status` subcommand to `app`, its options stored in `opt`; returns it.
CLI::App* add_status_command(CLI::App& app, output_dir_options& opt);

/// Adds the `inspect` subcommand to `app`, its options stored in `opt`; returns it.
CLI::App* add_inspect_command(CLI::App& app, output_dir_options& opt);

/// Prints where the campaign in `opt.output` stands: its tasks, nodes and best times (with
/// opt.json, results.json as the store stands now).
[[nodiscard]] command_result run_status(const output_dir_options& opt);

/// Adds the `report` subcommand to `app`, its options stored in `opt`; returns it.
CLI::App* add_report_command(CLI::App& app, output_dir_options& opt);

/// Writes report.html into `opt.output` from its store as it stands now (read, never written),
/// or from its results.json when it holds no store.
[[nodiscard]] command_result run_report(const output_dir_options& opt);

/// Prints every record of the store in `opt.output`, one line each: key, then a summary (with
/// opt.json, one JSON object holding them).
[[nodiscard]] command_result run_inspect(const output_dir_options& opt);

} // namespace ks::cli
