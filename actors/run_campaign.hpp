#pragma once

// The entry point of a campaign: builds the actor system, wires the actors of DESIGN.md,
// runs until every task stops (or a budget, or Ctrl-C), and returns a summary. Running it
// again on the same output folder resumes: finished nodes are read back from the store and
// never redone; work that was in flight when the campaign died is redone.

#include "actors/output_folder.hpp"
#include "actors/torch_baselines.hpp"
#include "config/campaign_config.hpp"
#include "engine/bench_memory.hpp"
#include "engine/error.hpp"
#include "gpu/failure.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ks::actors {

/// Options that are not part of the campaign config (they come from the command line).
struct run_options {
  bool dry_run = false;                        ///< plan, code, compile one round; no GPU;
                                               ///< writes <output>/dry-run/, no state
  std::string arch;                            ///< nvcc arch when there is no GPU to ask ("sm_90a")
  std::filesystem::path worker_executable;     ///< empty: gpu::default_worker_executable()
  std::filesystem::path nvcc;                  ///< empty: the compiler's own lookup
  std::filesystem::path include_dir;           ///< where kernelskill/abi.h is; empty: default
  std::filesystem::path cache_dir;             ///< compile cache; empty: <output>/cache
  std::filesystem::path baselines;             ///< torch baselines file; empty: the config's
                                               ///< report.torch_baselines
  double progress_interval_s = 5;              ///< live progress on stderr; 0 = none
  std::atomic<bool>* stop_requested = nullptr; ///< set by a SIGINT handler: stop cleanly
  foreign_output foreign = foreign_output::refuse; ///< an output folder holding something else
  /// A dry run: the GPU whose memory each task's tensors must fit (task warnings); unset:
  /// engine::assumed_gpu_memory()
  std::optional<engine::gpu_memory> gpu_memory;
};

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
  bool results_unreliable = false;          ///< a GPU stayed unstable past bench.stability_limit_s
  std::optional<torch_baselines> baselines; ///< the torch baselines compared with, if any
};

/// Says why a campaign could not run: the error, and what kind of failure it was, so that the
/// command line maps it to an exit code without reading the message.
struct campaign_error {
  campaign_error(engine::error e) : error(std::move(e)) {} // NOLINT: every engine error is one
  campaign_error(engine::errc code, std::string message) : error(code, std::move(message)) {}

  engine::error error;
  std::optional<gpu::failure_kind> gpu_failure; ///< a GPU's bench worker failed this way
  /// The machine lacks what the campaign needs (nvcc, the ABI header, the bench worker,
  /// bubblewrap for bench.sandbox): exit 3, whatever the code.
  bool environment = false;

  engine::errc code() const noexcept { return error.code(); }
  const std::string& message() const noexcept { return error.message(); }
};

/// Runs (or resumes) the campaign `config` describes; with options.dry_run, one round of
/// planning, coding and compiling per task instead.
[[nodiscard]] tl::expected<campaign_summary, campaign_error>
run_campaign(const config::campaign_config& config, const run_options& options);

} // namespace ks::actors
