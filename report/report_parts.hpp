#pragma once

// The parts of report.html (html_report.cpp puts them together), each drawn from results.json's
// document as it is: a field that is missing or null reads as 0 or empty, so a results.json of
// a campaign still running, or written by an older kernelskill, draws what it has.

#include "report/bench_trace.hpp"
#include "report/html_writer.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ks::report {

// -- reading the document --------------------------------------------------------------------

/// Returns the number at `key` of `o`; 0 when it is missing or no number.
double number_at(const boost::json::object& o, std::string_view key);

/// Returns the string at `key` of `o`; empty when it is missing or no string.
std::string string_at(const boost::json::object& o, std::string_view key);

/// Returns the object at `key` of `o`; nullptr when it is missing or no object.
const boost::json::object* object_at(const boost::json::object& o, std::string_view key);

/// Returns the array at `key` of `o`; an empty array when it is missing or no array.
const boost::json::array& array_at(const boost::json::object& o, std::string_view key);

/// Returns the median time of node `n`, in ms; 0 when it was not timed.
double median_of(const boost::json::object& n);

/// Returns the ids of a task's winning lineage, the root first; empty without a winner.
std::vector<int64_t> lineage_of(const boost::json::object& task);

/// Returns `text` usable in an id attribute: letters, digits, '-' and '_' kept, the rest '_'.
std::string id_part(std::string_view text);

/// Returns the group a node's status and disposition fall in, its CSS class and legend:
/// "accepted", "rejected", "failed" or "open" (not judged yet, or only compiled in a dry run).
std::string_view status_group(const boost::json::object& n);

/// Returns the words of a status group's legend.
std::string_view status_group_label(std::string_view group);

// -- the parts -------------------------------------------------------------------------------

/// Writes one roofline plot per GPU of the campaign's environment: each task timed there as
/// its reference, best kernel, torch eager and torch.compile against the GPU's measured DRAM
/// bandwidth and FP32 peak; a paragraph instead where nothing can be placed.
void write_rooflines(markup& m, const boost::json::object& results);

/// Writes the search tree of `task`: nodes by status group, the winning lineage highlighted,
/// each node's plan and time in its tooltip and a link to its row in the node table.
void write_search_tree(markup& m, const boost::json::object& task, const std::string& id);

/// Writes the best time against the candidates tried of `task` (nothing when no node was
/// timed).
void write_progress_plot(markup& m, const boost::json::object& task, const std::string& id);

/// One round of a task's finals: a finalist re-timed (its median), as the bench trace has it.
struct final_round {
  int64_t node = 0;
  int32_t gpu = 0;
  double ms = 0;
};

/// Returns the finals' rounds of each task (by name) in `trace`: its final_round jobs that
/// timed, labelled TASK#NODE (final). A task whose finals ran in several runs (a resume) keeps
/// the last run's.
std::map<std::string, std::vector<final_round>>
final_rounds_of(const std::vector<trace_run>& trace);

/// Writes the fastest candidates of `task` with the spread of their trials, the winner's
/// median from the finals and each finalist's rounds in them (`rounds`, from the bench trace;
/// null or empty: none) (nothing when fewer than one candidate was timed).
void write_spread_plot(markup& m, const boost::json::object& task, const std::string& id,
                       const std::vector<final_round>* rounds = nullptr);

/// Writes the section of `task`: its numbers, search tree, progress and spread plots (with the
/// finals' `rounds`), its winner's counter diagnosis and source (`sources`: by task name), or
/// in a dry run (`dry_run`) what the dry run printed for it.
void write_task_section(markup& m, const boost::json::object& task,
                        const std::map<std::string, std::string>& sources, bool dry_run,
                        const std::vector<final_round>* rounds = nullptr);

/// Writes a timeline per GPU of the bench jobs of the last run in `trace`, with each GPU's
/// busy and idle time; a paragraph instead when the trace holds no job.
void write_timeline(markup& m, const std::vector<trace_run>& trace);

} // namespace ks::report
