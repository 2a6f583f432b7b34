#pragma once

// report.html: a campaign as pictures, in one self-contained file (inline SVG and CSS, a few
// lines of inline script that only sort the table and open a node's row; nothing fetched, no
// font, readable offline and as a mail attachment; a Content-Security-Policy forbids every
// request). Drawn from results.json's document, the winners' sources (best/<task>.cu) and the
// bench trace (bench_trace.hpp) of the output folder:
//
//   - the speedup table (sortable), with the geomeans, and the campaign's warnings;
//   - a roofline per GPU (roofline_plot.cpp);
//   - per task: the search tree (search_tree_plot.cpp), the best time against the candidates
//     tried and the fastest candidates' spread (task_plots.cpp), the winner's counter
//     diagnosis and its source;
//   - per GPU, the bench jobs over time with busy and idle time (timeline_plot.cpp);
//   - the environment, the config as started, the budgets used.
//
// A dry run has no results.json: dry_run_document() gives its report the same shape (its tasks'
// reference and candidates as nodes, nothing timed), so one renderer draws both.

#include "engine/error.hpp"
#include "engine/search_tree.hpp"
#include "report/bench_trace.hpp"

#include <boost/json/object.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ks::report {

/// The report's file name in a campaign's output folder (a dry run's: in its dry-run/ folder).
inline constexpr std::string_view report_html_file = "report.html";

/// What report.html is drawn from.
struct report_input {
  boost::json::object results;                       ///< results.json's document
  std::map<std::string, std::string> winner_sources; ///< task name -> its winner's source
  std::vector<trace_run> trace;                      ///< the bench trace's runs
};

/// Returns the text of report.html for `input`.
std::string render_report_html(const report_input& input);

/// Writes <output_dir>/report.html from `results_json` (results.json's text) and what the
/// folder holds: best/<task>.cu and the bench trace. Fails with errc::io when it cannot be
/// written, errc::invalid_input when `results_json` is no results document.
[[nodiscard]] engine::expected<void> write_report_html(const std::filesystem::path& output_dir,
                                                       const std::string& results_json);

/// Writes <output_dir>/report.html as above from the folder's results.json (`kernelskill
/// report`); fails with errc::not_found when the folder holds none.
[[nodiscard]] engine::expected<void> write_report_html(const std::filesystem::path& output_dir);

/// One task of a dry run: its reference (node 0) and its candidates (children of node 0, as
/// planned and compiled).
struct dry_run_task {
  std::string name;
  bool could_run = true;
  std::string why_not; ///< why it could not run; empty when it could
  std::vector<engine::node_record> nodes;
  std::vector<std::string> lines; ///< what the dry run printed for it
};

/// What a dry run's report says of the run as a whole.
struct dry_run_facts {
  std::string arch;
  std::string started_at; ///< ISO 8601, UTC
  std::string config_text;
  bool interrupted = false;
};

/// Returns the results document of a dry run (results.json's shape, "dry_run": true).
boost::json::object dry_run_document(const dry_run_facts& facts,
                                     const std::vector<dry_run_task>& tasks);

} // namespace ks::report
