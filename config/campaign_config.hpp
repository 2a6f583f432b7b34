#pragma once

// A campaign is configured by one TOML file. Every option has a default, so an empty file is
// a valid config; config/option_table.cpp declares each option once (its meaning, accepted
// values and field here) and `kernelskill config --defaults` prints the whole commented file
// (default_config_text()). In short:
//
//   gpus = "all"                  or a list of device numbers: [0, 1]  (a root key: before
//                                 the first [section])
//   [campaign]  tasks (globs), output, wall_time_s, candidates_per_task, gpu_seconds,
//               token_budget, cost_budget
//   [search]    branches, depth, policy, exploration, stop_roofline_fraction, stop_patience,
//               min_gain, finalists, profile, expand_max_fraction
//   [bench]     trials, warmup_ms, min_timing_trials, max_timing_ms, atol, rtol, norm_rel,
//               verify_timeout_s, time_timeout_s, compile_timeout_s, sandbox, secret_env,
//               allow_vendor_libraries, host_fault_retries, host_fault_retry_s, min_free_disk_mb,
//               stability_probe_s, stability_drift, stability_split, stability_pause_s,
//               stability_limit_s
//   [agents]    backend, endpoint, model, api_key_env, max_concurrency, request_timeout_s,
//               repair_rounds, max_retries, retry_base_s, retry_max_s, reply_tokens,
//               temperature, prompts, replay, distill, prices
//   [memory]    path, skills, exploration, demote_min_tries, demote_failure_rate,
//               demote_min_acceptance
//   [report]    torch_baselines
//
// Loading reports every problem it finds, one line each, `FILE:LINE:COL: message`, in source
// order: unknown keys (with a suggestion) at the key, wrong types and out-of-range values at
// the value, a TOML syntax error at the position toml++ gives; then it fails once.
//
// Paths (campaign.tasks, campaign.output, memory.path, report.torch_baselines) are kept as
// written; the accessors of
// campaign_config resolve relative ones against the config file's folder.

#include "config/error.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::config {

/// What to optimize, where results go, and when to stop the whole campaign.
struct campaign_section {
  std::vector<std::string> tasks = {"tasks/quickstart/*.toml"}; ///< globs of task manifests
  std::string output = "kernelskill-out";                       ///< output folder, as written
  double wall_time_s = 3600;        ///< wall-clock budget of the campaign; 0 = unlimited
  int64_t candidates_per_task = 64; ///< candidate kernels evaluated per task, at most
  double gpu_seconds = 0;           ///< GPU time budget over all GPUs; 0 = unlimited
  int64_t token_budget = 0; ///< model tokens (input + output) of the campaign; 0 = unlimited
  double cost_budget = 0;   ///< model cost at agents.prices; 0 = unlimited

  bool operator==(const campaign_section&) const = default;
};

/// How the search tree of each task grows and when it stops.
struct search_section {
  int64_t branches = 4;                 ///< children planned per expansion, run in parallel
  int64_t depth = 6;                    ///< deepest node below the reference (depth 0)
  std::string policy = "best_first";    ///< best_first, greedy or breadth_first
  double exploration = 0.5;             ///< weight of best_first's exploration term
  double stop_roofline_fraction = 0.95; ///< stops a task whose best reaches this roofline share
  int64_t stop_patience = 8;            ///< stops after this many expansions without min_gain
  double min_gain = 0.02;               ///< a speedup over the best counts from 1 + min_gain
  double torch_min_gain = 0.005; ///< the same, over a kernel slower than the task's torch baseline
  int64_t finalists = 3;         ///< best nodes re-timed interleaved before the winner
  std::string profile = "parents";   ///< nodes profiled: none, parents, improving or all
  double expand_max_fraction = 0.95; ///< nodes at this roofline share are not expanded

  bool operator==(const search_section&) const = default;
};

/// Which GPUs a campaign uses: every visible one, or the listed device numbers.
struct gpus_section {
  bool all = true;              ///< true: every visible GPU; devices is then empty
  std::vector<int32_t> devices; ///< CUDA device numbers, distinct, when all is false

  bool operator==(const gpus_section&) const = default;
};

/// How candidates are verified and timed.
struct bench_section {
  int64_t trials = 3;                  ///< correctness trials, each on fresh inputs
  double warmup_ms = 25;               ///< warm-up before timing, ms
  int64_t min_timing_trials = 10;      ///< timed launches, at least
  double max_timing_ms = 2000;         ///< timing stops adding trials after this, ms
  std::optional<double> atol;          ///< overrides every task's absolute tolerance
  std::optional<double> rtol;          ///< overrides every task's relative tolerance
  std::optional<double> norm_rel;      ///< overrides every task's norm-relative tolerance
  double verify_timeout_s = 60;        ///< a verify job running longer fails as timed out
  double time_timeout_s = 120;         ///< a timing job running longer fails as timed out
  double compile_timeout_s = 120;      ///< an nvcc run lasting longer fails as timed out
  bool sandbox = false;                ///< runs each bench worker inside bubblewrap
  std::vector<std::string> secret_env; ///< variables withheld from the worker, by name
  bool allow_vendor_libraries = false; ///< measures (labelled) a candidate using cuBLAS & co.
  int64_t host_fault_retries = 3;      ///< a step failed by the host runs again, at most
  double host_fault_retry_s = 10;      ///< first wait before that, doubling each time
  double min_free_disk_mb = 256;       ///< nvcc's write failure with less free: the host's
  double stability_probe_s = 2;        ///< a working GPU's stability probe, at most this
                                       ///< often (engine/card_stability.hpp); 0: never
  double stability_drift = 0.10;       ///< a probe median this far above the GPU's quiet level
  double stability_split = 0.10;       ///< a probe's p90 this far above its p10
  double stability_pause_s = 5;        ///< an unstable GPU is probed again after this
  double stability_limit_s = 60;       ///< unstable this long: its timings run, flagged

  bool operator==(const bench_section&) const = default;
};

/// What one model's tokens cost, per million, in the currency of campaign.cost_budget.
struct model_price_entry {
  std::string model;
  double input_per_mtok = 0;
  double output_per_mtok = 0;

  bool operator==(const model_price_entry&) const = default;
};

/// Which backend the agents think with, and its settings.
struct agents_section {
  std::string backend = "offline"; ///< offline, openai, anthropic or replay
  std::string endpoint;            ///< base URL; empty: the backend's public one
  std::string model;               ///< model name; required by openai and anthropic
  std::string api_key_env;         ///< environment variable holding the API key; empty: none
  int64_t max_concurrency = 4;     ///< model requests in flight, at most
  double request_timeout_s = 120;  ///< one model request (one attempt), at most
  int64_t repair_rounds = 2;       ///< repair attempts of a failed candidate, at most
  int64_t max_retries = 4;         ///< tries of a request after its first, at most
  double retry_base_s = 1;         ///< the first backoff before a retry (doubling, jittered)
  double retry_max_s = 60;         ///< the longest wait before a retry (Retry-After included)
  int64_t reply_tokens = 8192;     ///< the longest reply asked of the model, in tokens
  double temperature = 0.2;        ///< sampling temperature
  std::string prompts;             ///< the role prompts' folder, as written; "": installed
  std::string replay;              ///< backend replay: the transcripts folder, as written
  bool distill = true;             ///< a model backend proposes a skill from each task's winner
  std::vector<model_price_entry> prices; ///< per model; a model not listed costs 0

  bool operator==(const agents_section&) const = default;
};

/// Where long-term memory lives, and the rule that ranks and demotes its skills.
struct memory_section {
  std::string path = "kernelskill-memory"; ///< the LMDB environment's folder, as written
  std::string skills;                      ///< built-in skill folder, as written; "": the
                                           ///< installed one (engine::default_skills_dir)
  double exploration = 1.0;                ///< weight of the UCB bonus in skill ranking
  int64_t demote_min_tries = 8;            ///< tries before a skill can be demoted
  double demote_failure_rate = 0.5;        ///< demoted at this share of failed tries ...
  double demote_min_acceptance = 0.05;     ///< ... or below this share of accepted ones

  bool operator==(const memory_section&) const = default;
};

/// What the campaign's reports put beside its results.
struct report_section {
  std::string torch_baselines; ///< baselines file (tools/torch_baselines.py), as written; "": none

  bool operator==(const report_section&) const = default;
};

/// One campaign's configuration; a default-constructed one holds every default.
struct campaign_config {
  campaign_section campaign;
  search_section search;
  gpus_section gpus;
  bench_section bench;
  agents_section agents;
  memory_section memory;
  report_section report;
  std::filesystem::path source; ///< the config file, absolute; empty for the defaults

  // -- resolved paths ------------------------------------------------------------------------

  /// Returns `written` made absolute against the folder of `source` (against the working
  /// directory when `source` is empty), lexically normalized; absolute input stays as is.
  std::filesystem::path resolve(const std::string& written) const;

  /// Returns campaign.tasks resolved (still globs), in the order written.
  std::vector<std::filesystem::path> task_patterns() const;

  /// Returns campaign.output resolved.
  std::filesystem::path output_dir() const { return resolve(campaign.output); }

  /// Returns memory.path resolved.
  std::filesystem::path memory_dir() const { return resolve(memory.path); }

  /// Returns agents.prompts resolved; empty when it is "" (the installed prompts).
  std::filesystem::path prompts_dir() const {
    return agents.prompts.empty() ? std::filesystem::path{} : resolve(agents.prompts);
  }

  /// Returns agents.replay resolved; empty when it is "".
  std::filesystem::path replay_dir() const {
    return agents.replay.empty() ? std::filesystem::path{} : resolve(agents.replay);
  }

  /// Returns memory.skills resolved; empty when it is "" (the installed skills).
  std::filesystem::path skills_dir() const {
    return memory.skills.empty() ? std::filesystem::path{} : resolve(memory.skills);
  }

  /// Returns report.torch_baselines resolved; empty when it is "" (no baselines).
  std::filesystem::path torch_baselines_file() const {
    return report.torch_baselines.empty() ? std::filesystem::path{}
                                          : resolve(report.torch_baselines);
  }

  bool operator==(const campaign_config&) const = default;
};

/// Loads and validates the config file at `path`. Returns the config with `source` set to
/// its absolute path; errc::not_found or errc::io (naming `path`) when the file is missing,
/// a folder or unreadable; errc::invalid_input whose message holds one `FILE:LINE:COL:
/// message` line per problem, FILE being `path` as given (a file of more than max_toml_bytes,
/// a device such as /dev/zero included: toml_source.hpp).
[[nodiscard]] expected<campaign_config> load_campaign_config(const std::filesystem::path& path);

/// Parses and validates config `text` as if read from `name_for_errors`, which names the file
/// in error messages and, made absolute, becomes `source` (relative paths resolve against its
/// folder). Fails only with errc::invalid_input.
[[nodiscard]] expected<campaign_config>
parse_campaign_config(std::string_view text, const std::filesystem::path& name_for_errors);

/// Returns `config` as a commented TOML file: every option of the table with its description
/// and accepted values, an unset optional one commented out. Parsing it gives `config` back
/// (all but `source`).
std::string config_text(const campaign_config& config);

/// Returns the commented default config file: config_text(campaign_config{}).
std::string default_config_text();

} // namespace ks::config
