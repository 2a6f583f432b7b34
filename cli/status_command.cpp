// `kernelskill status` and `kernelskill inspect` read a campaign's output folder through its
// store, never through the actors: they work while the campaign runs (LMDB readers do not
// block the writer), after it finished, and after it was killed. They never create a store:
// a folder without one is an error, so that a typo in the path does not leave an empty
// store behind. What they say about a folder that holds no campaign is what is there: a dry
// run's candidates, a store that a run opened but never started a campaign in, or results
// whose store was deleted or emptied. A damaged store (its data file cut short, records that
// do not match their checksum) exits 5 naming what is damaged and what still holds the
// campaign; it is never opened past the check of its file, so it cannot crash them.

#include "cli/status_command.hpp"

#include "cli/environment.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "cli/result_json.hpp"
#include "json/encode.hpp"
#include "memory/store.hpp"
#include "report/campaign_store.hpp"
#include "report/html_report.hpp"
#include "report/report_writer.hpp"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <fstream>
#include <iostream>
#include <optional>
#include <set>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

// The folder, inside the output folder, where run_campaign keeps its store.
const std::string store_folder(report::state_folder);

// Returns the first line of `file`, or empty.
std::string first_line_of(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// Returns why `output` holds no campaign, saying what it does hold.
std::string no_campaign_because(const fs::path& output, const std::string& what_is_missing) {
  std::string text = "no campaign in '" + output.string() + "': " + what_is_missing;
  fs::path dry = output / "dry-run" / "summary.txt";
  std::error_code ec;
  if (fs::is_regular_file(dry, ec))
    text += "\n  it holds a dry run (" + first_line_of(dry) + "); its candidates are in " +
            (output / "dry-run").string() + "/<task>/ and every line it printed in " +
            dry.string() +
            (fs::is_regular_file(output / "dry-run" / report::report_html_file, ec)
                 ? ", its report in " + (output / "dry-run" / report::report_html_file).string()
                 : std::string()) +
            "\n  a dry run keeps no state: `kernelskill run CONFIG.toml` without --dry-run "
            "runs the campaign";
  else
    text += "\n  `kernelskill run CONFIG.toml` writes one into its campaign.output folder";
  return text;
}

// Returns the folder inside `output` that holds an LMDB store, or why there is none.
tl::expected<fs::path, command_error> store_dir_of(const fs::path& output) {
  std::error_code ec;
  if (!fs::exists(output, ec))
    return stop(stop_reason::usage, "'" + output.string() +
                                        "' does not exist (give the output folder of a "
                                        "campaign: campaign.output in its config)");
  if (!fs::is_directory(output, ec))
    return stop(stop_reason::usage, "'" + output.string() +
                                        "' is not a folder (give the output "
                                        "folder of a campaign)");
  fs::path dir = output / store_folder;
  // Checked before it is opened: LMDB maps the file, and a page past its end is a SIGBUS.
  auto file = memory::check_store_file(dir);
  if (!file && file.error().code() == engine::errc::damaged)
    return stop(stop_reason::damaged,
                file.error().message() +
                    report::damaged_store_advice(output, report::mention_inspect::no));
  if (!file)
    return stop(stop_reason::environment, file.error().message());
  if (*file == memory::store_file::present && fs::is_regular_file(dir / "data.mdb", ec))
    return dir;
  std::string what = *file == memory::store_file::empty
                         ? "its store (" + store_folder + "/data.mdb) is empty (0 bytes)"
                         : "it holds no store (" + store_folder + "/data.mdb)";
  if (std::vector<std::string> results = report::campaign_results(output); !results.empty()) {
    std::string names;
    for (const std::string& r : results)
      names += (names.empty() ? "" : ", ") + r;
    return stop(stop_reason::task,
                "no campaign in '" + output.string() + "': " + what +
                    ", though it holds a campaign's results (" + names +
                    "): the store they came from was deleted or emptied, and they hold the "
                    "campaign as it was last reported\n  `kernelskill run CONFIG.toml "
                    "--overwrite` starts a new campaign there (without --overwrite, run refuses "
                    "to write over the results)");
  }
  return stop(stop_reason::task, no_campaign_because(output, what));
}

tl::expected<memory::store, command_error> open_store(const fs::path& output) {
  auto dir = store_dir_of(output);
  if (!dir)
    return tl::unexpected(dir.error());
  auto store = memory::store::open(*dir);
  if (!store && store.error().code() == engine::errc::damaged)
    return stop(stop_reason::damaged,
                store.error().message() +
                    report::damaged_store_advice(output, report::mention_inspect::no));
  if (!store)
    return stop(stop_reason::environment,
                "cannot open the store in '" + dir->string() + "': " + store.error().message());
  return std::move(*store);
}

// Returns the command's error for `e`, met while doing `what` with the store of `output`: a
// damaged record makes the whole store checked, and every damaged record listed (exit 5);
// anything else is an environment error (exit 3).
command_error read_failure(const memory::store& store, const fs::path& output,
                           const engine::error& e, const std::string& what) {
  if (e.code() != engine::errc::damaged)
    return {stop_reason::environment, std::nullopt, what + ": " + e.message()};
  if (auto checked = report::check_records(store, output); !checked)
    return {stop_reason::damaged, std::nullopt, checked.error().message()};
  return {stop_reason::damaged, std::nullopt,
          e.message() + report::damaged_store_advice(output, report::mention_inspect::yes)};
}

// Checks that `store` holds a campaign: a run that stopped before it started one (no GPU, a
// worker that would not start) leaves an empty store behind.
command_result require_campaign(const memory::store& store, const fs::path& output) {
  auto campaign = store.campaign();
  if (!campaign)
    return tl::unexpected(read_failure(store, output, campaign.error(),
                                       "cannot read the store in '" + output.string() + "'"));
  if (*campaign)
    return {};
  auto tasks = store.tasks();
  if (tasks && !tasks->empty())
    return {};
  return stop(stop_reason::task,
              no_campaign_because(output, "its store is empty: a run opened it but stopped "
                                          "before the campaign started (without a GPU, `run` "
                                          "exits 19 there)"));
}

/// A campaign's folder as status and report read it: its store, checked to hold a campaign,
/// and the torch baselines its reports compare with (its checked copy).
struct campaign_folder {
  memory::store store;
  std::optional<report::torch_baselines> baselines;

  const report::torch_baselines* compared_with() const { return baselines ? &*baselines : nullptr; }
};

tl::expected<campaign_folder, command_error> open_campaign(const fs::path& output) {
  auto store = open_store(output);
  if (!store)
    return tl::unexpected(store.error());
  if (auto ok = require_campaign(*store, output); !ok)
    return tl::unexpected(ok.error());
  auto baselines = report::read_campaign_baselines(output);
  if (!baselines)
    return stop(stop_reason::task,
                "cannot read the campaign's torch baselines: " + baselines.error().message());
  return campaign_folder{std::move(*store), std::move(*baselines)};
}

// Returns results.json's text as the store of `folder` (in `output`) stands now.
tl::expected<std::string, command_error> results_json_of(const campaign_folder& folder,
                                                         const fs::path& output) {
  auto text = report::campaign_results_json(folder.store, folder.compared_with());
  if (!text)
    return tl::unexpected(read_failure(folder.store, output, text.error(),
                                       "cannot read the campaign in '" + output.string() + "'"));
  return std::move(*text);
}

void add_output_argument(CLI::App* cmd, output_dir_options& opt) {
  cmd->add_option("OUTPUT_DIR", opt.output, "The campaign's output folder (campaign.output)")
      ->required()
      ->type_name("");
  cmd->footer(exit_code_help(command_codes::output_folder(), help_width()));
}

} // namespace

CLI::App* add_status_command(CLI::App& app, output_dir_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "status",
      "Tells where a campaign stands. It reads the output folder's store: per task its phase, "
      "nodes (and how many are in flight), reference and best times, speedup (against the "
      "task's reference kernel on the same GPU), fraction of the roofline and why it stopped. "
      "Works while the campaign runs and after it was killed. A folder that holds no campaign "
      "(only a dry run, or a run that never started) exits 2 and says what it holds; a damaged "
      "store (its data file cut short, records that do not match their checksum) exits 5, "
      "naming what is damaged.");
  add_output_argument(cmd, opt);
  cmd->add_flag("--json", opt.json,
                "Print results.json as the store stands now (every task and node) instead of "
                "the table");
  cmd->add_option(
         "--export", opt.export_dir,
         "Also write results.json, report.md, report.html and best/ as they stand now into DIR "
         "(a snapshot of a running or killed campaign)")
      ->type_name("DIR");
  return cmd;
}

CLI::App* add_report_command(CLI::App& app, output_dir_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Writes report.html into a campaign's output folder: one self-contained file (nothing "
      "fetched) with a roofline per GPU, the speedup table, each task's search tree, progress "
      "and winner, and each GPU's timeline of bench jobs. Drawn from the folder's store as it "
      "stands now (read, never written: it works while the campaign runs), or from its "
      "results.json when it holds no store. A campaign writes report.html itself as it goes; "
      "this rewrites it, e.g. for a folder written by an older kernelskill. A dry run's report "
      "is dry-run/report.html.");
  add_output_argument(cmd, opt);
  return cmd;
}

command_result run_report(const output_dir_options& opt) {
  std::error_code ec;
  const bool has_store = fs::is_regular_file(opt.output / store_folder / "data.mdb", ec);
  if (!has_store && fs::is_regular_file(opt.output / "results.json", ec)) {
    if (auto written = report::write_report_html(opt.output); !written)
      return stop(stop_reason::environment, written.error().message());
  } else {
    auto folder = open_campaign(opt.output);
    if (!folder)
      return tl::unexpected(folder.error());
    auto text = results_json_of(*folder, opt.output);
    if (!text)
      return tl::unexpected(text.error());
    if (auto written = report::write_report_html(opt.output, *text); !written)
      return stop(stop_reason::environment, written.error().message());
  }
  std::cout << "wrote " << (opt.output / report::report_html_file).string() << "\n" << std::flush;
  return {};
}

CLI::App* add_inspect_command(CLI::App& app, output_dir_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Prints every record of a campaign's store. Campaign, tasks, nodes, sources, short-term "
      "memory, calibrations, skill statistics: one line each, its key, then a summary of its "
      "value. A folder that holds no campaign exits 2. Every record's checksum is checked: a "
      "damaged record is listed as \"damaged: why\" among the others, and then the command "
      "exits 5, naming them.");
  add_output_argument(cmd, opt);
  cmd->add_flag("--json", opt.json,
                "Print one JSON object: {\"records\": [{\"key\", \"database\", \"summary\", "
                "\"damaged\"}, ...]}");
  return cmd;
}

command_result run_status(const output_dir_options& opt) {
  auto folder = open_campaign(opt.output);
  if (!folder)
    return tl::unexpected(folder.error());
  const memory::store& store = folder->store;
  const report::torch_baselines* b = folder->compared_with();
  // The export first: with --json, stdout then holds one document, the results or the failure.
  if (!opt.export_dir.empty()) {
    std::error_code ec;
    fs::create_directories(opt.export_dir, ec);
    if (auto written = report::write_campaign_outputs(store, opt.export_dir, b); !written)
      return tl::unexpected(
          read_failure(store, opt.output, written.error(),
                       "cannot export the campaign into '" + opt.export_dir.string() + "'"));
    // Not on stdout with --json: that stays one JSON document.
    (opt.json ? std::cerr : std::cout)
        << "exported results.json, report.md, report.html and best/ into "
        << opt.export_dir.string() << "\n"
        << std::flush;
  }
  if (opt.json) {
    auto text = results_json_of(*folder, opt.output);
    if (!text)
      return tl::unexpected(text.error());
    std::cout << *text << std::flush;
  } else {
    auto text = report::describe_campaign(store, b);
    if (!text)
      return tl::unexpected(
          read_failure(store, opt.output, text.error(),
                       "cannot read the campaign in '" + opt.output.string() + "'"));
    std::cout << "output: " << opt.output.string() << "\n" << *text;
    std::error_code ec;
    const fs::path html = opt.output / report::report_html_file;
    std::cout << (fs::exists(html, ec) ? "report: " + html.string() + " (open it in a browser)"
                                       : "report: `kernelskill report " + opt.output.string() +
                                             "` writes " + html.string())
              << "\n"
              << std::flush;
  }
  return {};
}

command_result run_inspect(const output_dir_options& opt) {
  auto store = open_store(opt.output);
  if (!store)
    return tl::unexpected(store.error());
  if (auto ok = require_campaign(*store, opt.output); !ok)
    return ok;
  auto records = store->dump();
  if (!records)
    return tl::unexpected(read_failure(*store, opt.output, records.error(),
                                       "cannot read the store in '" + opt.output.string() + "'"));
  // Every record is listed, the damaged ones among them; then, if there are any, the command
  // says so and fails, so that a script notices.
  auto checked = store->check();
  if (!checked)
    return tl::unexpected(read_failure(*store, opt.output, checked.error(),
                                       "cannot read the store in '" + opt.output.string() + "'"));
  std::set<std::string> damaged;
  for (const auto& [key, why] : checked->damaged)
    damaged.insert(key);
  command_result outcome;
  if (const size_t n = checked->damaged.size(); n > 0)
    outcome = stop(stop_reason::damaged,
                   "the store " + (opt.output / store_folder).string() + " is damaged: " +
                       std::to_string(n) + " of its " + std::to_string(checked->records) +
                       (n == 1 ? " records does" : " records do") +
                       " not read back (listed above as damaged or corrupt):\n" +
                       report::list_damaged(*checked) +
                       report::damaged_store_advice(opt.output, report::mention_inspect::no));
  if (opt.json) {
    boost::json::array list;
    for (const auto& [key, summary] : *records)
      list.push_back(boost::json::object{{"key", key},
                                         {"database", key.substr(0, key.find('/'))},
                                         {"summary", summary},
                                         {"damaged", damaged.count(key) > 0}});
    // A damaged store: the records, and the failure main would otherwise print alone.
    boost::json::object report;
    if (!outcome) {
      report = failure_json(exit_code_of(outcome.error()), outcome.error().message);
      outcome.error().json_written = true;
    }
    report["records"] = std::move(list);
    std::cout << encode::serialize(report) << "\n" << std::flush;
  } else {
    for (const auto& [key, summary] : *records)
      std::cout << key << "\t" << summary << "\n";
    std::cout << std::flush;
  }
  return outcome;
}

} // namespace ks::cli
