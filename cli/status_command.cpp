// `kernelskill status` and `kernelskill inspect` read a campaign's output folder through its
// store, never through the actors: they work while the campaign runs (LMDB readers do not
// block the writer), after it finished, and after it was killed. They never create a store:
// a folder without one is an error, so that a typo in the path does not leave an empty
// store behind.

#include "cli/status_command.hpp"

#include "actors/report_writer.hpp"
#include "cli/environment.hpp"
#include "memory/store.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

// The folder, inside the output folder, where run_campaign keeps its store.
constexpr const char* store_folder = "state";

// Returns the folder inside `output` that holds an LMDB store, or why there is none.
tl::expected<fs::path, command_error> store_dir_of(const fs::path& output) {
  std::error_code ec;
  if (!fs::exists(output, ec))
    return stop(stop_reason::task, "no campaign in '" + output.string() +
                                       "': the folder does not exist (give the output folder "
                                       "of a campaign: campaign.output in its config)");
  if (!fs::is_directory(output, ec))
    return stop(stop_reason::task, "no campaign in '" + output.string() + "': not a folder");
  fs::path dir = output / store_folder;
  if (fs::is_regular_file(dir / "data.mdb", ec))
    return dir;
  return stop(stop_reason::task, "no campaign in '" + output.string() + "': it holds no store (" +
                                     store_folder +
                                     "/data.mdb); `kernelskill run CONFIG.toml` writes one "
                                     "into its campaign.output folder");
}

tl::expected<memory::store, command_error> open_store(const fs::path& output) {
  auto dir = store_dir_of(output);
  if (!dir)
    return tl::unexpected(dir.error());
  auto store = memory::store::open(*dir);
  if (!store)
    return stop(stop_reason::environment,
                "cannot open the store in '" + dir->string() + "': " + store.error().message());
  return std::move(*store);
}

void add_output_argument(CLI::App* cmd, output_dir_options& opt) {
  cmd->add_option("output", opt.output, "The campaign's output folder (campaign.output)")
      ->required()
      ->type_name("OUTPUT_DIR");
  cmd->footer(exit_code_help());
}

} // namespace

CLI::App* add_status_command(CLI::App& app, output_dir_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "status",
      "Tells where a campaign stands, from its output folder's store: per task its phase, "
      "nodes (and how many are in flight), reference and best times, speedup, fraction of the "
      "roofline and why it stopped. Works while the campaign runs and after it was killed. A "
      "folder that does not exist or holds no campaign exits 2.");
  add_output_argument(cmd, opt);
  cmd->add_option("--export", opt.export_dir,
                  "Also write results.json, report.md and best/ as they stand now into DIR "
                  "(a snapshot of a running or killed campaign)")
    ->type_name("DIR");
  return cmd;
}

CLI::App* add_inspect_command(CLI::App& app, output_dir_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Prints every record of a campaign's store (campaign, tasks, nodes, sources, short-term "
      "memory, calibrations, skill statistics), one line each: its key, then a summary of its "
      "value. A folder that does not exist or holds no campaign exits 2.");
  add_output_argument(cmd, opt);
  return cmd;
}

command_result run_status(const output_dir_options& opt) {
  auto store = open_store(opt.output);
  if (!store)
    return tl::unexpected(store.error());
  auto text = actors::describe_campaign(*store);
  if (!text)
    return stop(stop_reason::environment, "cannot read the campaign in '" + opt.output.string() +
                                              "': " + text.error().message());
  std::cout << "output: " << opt.output.string() << "\n" << *text << std::flush;
  if (!opt.export_dir.empty()) {
    std::error_code ec;
    fs::create_directories(opt.export_dir, ec);
    if (auto written = actors::write_campaign_outputs(*store, opt.export_dir); !written)
      return stop(stop_reason::environment, "cannot export the campaign into '" +
                                                opt.export_dir.string() +
                                                "': " + written.error().message());
    std::cout << "exported results.json, report.md and best/ into " << opt.export_dir.string()
              << "\n" << std::flush;
  }
  return {};
}

command_result run_inspect(const output_dir_options& opt) {
  auto store = open_store(opt.output);
  if (!store)
    return tl::unexpected(store.error());
  auto records = store->dump();
  if (!records)
    return stop(stop_reason::environment, "cannot read the store in '" + opt.output.string() +
                                              "': " + records.error().message());
  for (const auto& [key, summary] : *records)
    std::cout << key << "\t" << summary << "\n";
  std::cout << std::flush;
  return {};
}

} // namespace ks::cli
