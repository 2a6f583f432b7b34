#pragma once

// What `kernelskill export` hands its generator (tools/ks_export.py): one JSON document read
// from a campaign's output folder, every kernel in it checked to be the one the campaign
// verified.
//
//   SPEC := {"format": "kernelskill-export-spec", "version": 1, "package": NAME,
//            "exported_by": "kernelskill V (commit C)", "output": ABS_OUTPUT_DIR,
//            "campaign": {"started_at", "runs", "environment"} (results.json's, without its
//            config), "torch_baselines": results.json's or null, "abi_header": PATH,
//            "tasks": [TASK...]}
//   TASK := task show --json's task (cli/task_show_command.hpp) + {"op": IDENTIFIER,
//            "kernel": ABS_PATH of best/<task>.cu, "source_hash": results.json's,
//            "nvcc_flags": [the campaign's flags for its arch, then the kernel's ks-flags],
//            "result": results.json's task without its nodes, "gpu": the environment's GPU the
//            task was timed on or null, "notes": [STR...]}

#include "cli/command_result.hpp"

#include <boost/json/object.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace ks::cli {

/// What to read from a campaign's output folder.
struct export_request {
  std::filesystem::path output;    ///< the campaign's output folder
  std::vector<std::string> tasks;  ///< only these tasks; empty: every task with a winner
  std::filesystem::path manifests; ///< where the manifests are now; empty: results.json's paths
  std::string package;             ///< the Python package's name (an identifier)
};

/// One task the spec holds, for the command's summary.
struct exported_task {
  std::string name;
  std::string op;         ///< its op name, kernelskill::<op>
  std::string line;       ///< "1.19x its reference, 0.54x torch eager, on NVIDIA H100 ..."
  bool reference = false; ///< the winner is the task's reference (no candidate beat it)
};

/// The spec and what the command says of it.
struct export_plan {
  boost::json::object spec;         ///< SPEC above
  std::vector<exported_task> tasks; ///< in results.json's order
  std::vector<std::string> skipped; ///< one line per task left out, with why
};

/// Reads `r.output` (results.json, best/, the manifests results.json names) into the spec of
/// a package. Fails with stop_reason::usage for a folder that does not exist or a --task that
/// names no task (with a suggestion), stop_reason::task for a folder that holds no measured
/// campaign (a dry run, a store without results.json), a winner whose best/ file is missing
/// or is not the source the campaign verified (content hash), a manifest that is missing,
/// does not load or no longer states the task the kernel was tuned for (its cost differs),
/// and when no task is left to export; every message says what to do.
[[nodiscard]] tl::expected<export_plan, command_error> plan_export(const export_request& r);

/// Returns `text` as a Python identifier: characters other than letters, digits and '_'
/// become '_', a leading digit gets a prefix of `prefix`, a Python keyword a trailing '_'.
std::string python_identifier(const std::string& text, const std::string& prefix);

} // namespace ks::cli
