#pragma once

#include "report/torch_baselines.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks::campaign {

/// One task's outcome (a dry run: whether it would run).
struct task_summary {
  std::string name;
  std::string stop_reason;
  int64_t nodes = 0;
  double reference_ms = 0;
  double best_ms = 0;
  double speedup = 0;
  double fraction_of_roofline = 0;
  bool failed = false;    ///< ended with no result: its reference failed, or its supervisor
                          ///< did; a dry run: it could not run (the reference does not compile,
                          ///< the planner or the coder failed)
  std::string stop_text;  ///< why it stopped, for people
  int64_t warnings = 0;   ///< a dry run: the manifest's warnings (engine/task_warnings.hpp)
  double best_p10_ms = 0; ///< best_ms scaled by the best node's p10 / median: its noise
};

/// What a campaign did.
struct campaign_summary {
  std::vector<task_summary> tasks;
  int64_t candidates_verified = 0;
  int64_t candidates_timed = 0;
  double wall_s = 0;
  std::vector<double> gpu_busy_share; ///< per bench actor: busy time / wall time
  bool interrupted = false;           ///< stopped by stop_requested
  std::string host_fault;             ///< the fault of the host that stopped the campaign (a
                                      ///< task's step failed by it past bench.host_fault_retries)
  bool resumed = false;               ///< the output folder held an earlier run
  std::filesystem::path dry_run_dir;  ///< a dry run: where its candidates and summary.txt are
  bool model_used = false;            ///< the agents thought with a model (the rest is its use,
                                      ///< over every run of the campaign, as llm_usage.json)
  int64_t model_requests = 0;         ///< answered model requests
  int64_t model_retries = 0;          ///< HTTP attempts beyond each request's first
  int64_t model_input_tokens = 0;
  int64_t model_output_tokens = 0;
  double model_cost = 0;          ///< at agents.prices
  std::string model_budget_spent; ///< why no model request started any more; empty: none
  int64_t model_answered_now = 0; ///< answered model requests of this run
  int64_t model_failed_now = 0;   ///< model requests of this run that failed
  std::string model_last_error;   ///< why the last failed model request failed
  std::string outputs_error; ///< why results.json or report.md could not be written; empty: written
  std::vector<std::string> gpu_names; ///< the campaign's GPUs, by bench actor
  /// What the GPUs' stability monitor saw (engine/card_stability.hpp): each episode of an
  /// unstable GPU, timings made again or flagged; empty when every GPU stayed quiet
  std::vector<std::string> gpu_warnings;
  bool results_unreliable = false; ///< a GPU stayed unstable past bench.stability_limit_s
  std::optional<report::torch_baselines> baselines; ///< the torch baselines compared with, if any
};

} // namespace ks::campaign
