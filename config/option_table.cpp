#include "config/option_table.hpp"

#include "config/spelling.hpp"

#include <charconv>
#include <cmath>

namespace ks::config {

namespace {

/// Returns field `f` of section `s` of `config`; its address is an entry's field_ref.
template <auto s, auto f>
auto& field(campaign_config& config) {
  return (config.*s).*f;
}

/// Returns member `m` of `config`, for the root's options.
template <auto m>
auto& member(campaign_config& config) {
  return config.*m;
}

constexpr auto campaign = &campaign_config::campaign;
constexpr auto search = &campaign_config::search;
constexpr auto bench = &campaign_config::bench;
constexpr auto agents = &campaign_config::agents;
constexpr auto memory = &campaign_config::memory;
constexpr auto report = &campaign_config::report;

constexpr number_range at_least(double min) {
  return {min, bound_kind::inclusive, 0, bound_kind::none};
}

constexpr number_range above(double min) {
  return {min, bound_kind::exclusive, 0, bound_kind::none};
}

constexpr int64_t unbounded = std::numeric_limits<int64_t>::max();

constexpr std::string_view policies[] = {"best_first", "greedy", "breadth_first"};
constexpr std::string_view profile_policies[] = {"none", "parents", "improving", "all"};
constexpr std::string_view backends[] = {"offline", "openai", "anthropic", "replay"};

const section_info sections[] = {
    {"", ""},
    {"campaign", "What to optimize, where the results go, and the budgets of the whole "
                 "campaign."},
    {"search", "How each task's search tree grows, and when a task stops."},
    {"bench", "How candidates are verified and timed on the GPU."},
    {"agents", "Which backend the agents (planner, coder, repairer) think with."},
    {"memory", "Long-term memory: skills, their statistics and every run."},
    {"report", "What results.json, report.md and the final table put beside each result."},
};

const option options[] = {
    {"", "gpus",
     "GPUs the campaign runs on: \"all\" visible devices, or a list of CUDA device numbers "
     "such as [0, 1]. One bench worker runs on each. (A key of the root: it stays above the "
     "first [section].)",
     gpus_option{&member<&campaign_config::gpus>}},

    {"campaign", "tasks",
     "Task manifests to optimize: glob patterns, relative to this file's folder. Every "
     "manifest matched is one task.",
     text_list_option{&field<campaign, &campaign_section::tasks>}},
    {"campaign", "output",
     "Folder for results.json, best/<task>.cu and report.md, relative to this file's folder. "
     "Running again on the same folder resumes the campaign.",
     text_option{&field<campaign, &campaign_section::output>, text_rule::non_empty, {}}},
    {"campaign", "wall_time_s",
     "Wall-clock budget of the whole campaign, in seconds; 0 means unlimited. When it runs "
     "out, work in flight finishes and every task keeps its best so far.",
     number_option{&field<campaign, &campaign_section::wall_time_s>, at_least(0)}},
    {"campaign", "candidates_per_task", "Candidate kernels evaluated per task, at most.",
     integer_option{&field<campaign, &campaign_section::candidates_per_task>, 1, unbounded}},
    {"campaign", "gpu_seconds",
     "GPU time the campaign may spend, summed over its GPUs, in seconds; 0 means unlimited.",
     number_option{&field<campaign, &campaign_section::gpu_seconds>, at_least(0)}},
    {"campaign", "token_budget",
     "Model tokens (input and output, every request of every role) the campaign may spend; 0 "
     "means unlimited. Once spent no model request starts, and every task goes to its finals.",
     integer_option{&field<campaign, &campaign_section::token_budget>, 0, unbounded}},
    {"campaign", "cost_budget",
     "What the campaign's model requests may cost, at agents.prices; 0 means unlimited. Once "
     "spent no model request starts, and every task goes to its finals.",
     number_option{&field<campaign, &campaign_section::cost_budget>, at_least(0)}},

    {"search", "branches",
     "Children planned at each expansion; their branches are coded, compiled and measured in "
     "parallel.",
     integer_option{&field<search, &search_section::branches>, 1, 64}},
    {"search", "depth",
     "Deepest a node may lie below the reference kernel (depth 0); nodes this deep are not "
     "expanded.",
     integer_option{&field<search, &search_section::depth>, 1, 100}},
    {"search", "policy",
     "How the next node to expand is chosen: best_first (the fastest node, plus a bonus for "
     "little-explored ones), greedy (always the fastest) or breadth_first (level by level).",
     text_option{&field<search, &search_section::policy>, text_rule::non_empty, policies}},
    {"search", "exploration",
     "Weight of best_first's exploration bonus; 0 makes best_first greedy.",
     number_option{&field<search, &search_section::exploration>, at_least(0)}},
    {"search", "stop_roofline_fraction",
     "Stops a task once its best kernel reaches this fraction of the roofline, unless the "
     "task's torch baseline (report.torch_baselines, timed on this GPU) is faster beyond "
     "min_gain: then the search goes on.",
     number_option{&field<search, &search_section::stop_roofline_fraction>,
                   {0, bound_kind::exclusive, 1, bound_kind::inclusive}}},
    {"search", "stop_patience",
     "Stops a task after this many expansions in a row without a significant gain.",
     integer_option{&field<search, &search_section::stop_patience>, 1, unbounded}},
    {"search", "min_gain",
     "Smallest speedup over the best so far that counts as a gain, as a fraction: 0.02 means "
     "2% faster (and beyond the measured noise).",
     number_option{&field<search, &search_section::min_gain>,
                   {0, bound_kind::inclusive, 1, bound_kind::exclusive}}},
    {"search", "torch_min_gain",
     "Smallest speedup that counts as a gain over a kernel slower than the task's torch "
     "baseline (report.torch_baselines), as a fraction: 0.005 means 0.5% faster (and beyond "
     "the measured noise). While torch is faster than the best by more than this, the roofline "
     "does not end the search. Closing the gap to torch is worth a less simple kernel.",
     number_option{&field<search, &search_section::torch_min_gain>,
                   {0, bound_kind::inclusive, 1, bound_kind::exclusive}}},
    {"search", "finalists",
     "Best kernels of a task re-timed interleaved (A B A B ...) before its winner is "
     "declared.",
     integer_option{&field<search, &search_section::finalists>, 1, 64}},
    {"search", "profile",
     "Which nodes are profiled on the GPU (every kernel they launch, and hardware counters "
     "where the GPU lets them be read), so that their diagnosis comes from the counters: "
     "none, parents (a node just before it is expanded), improving (a node when it is "
     "accepted) or all (every timed node). A profile costs about a second of GPU time.",
     text_option{&field<search, &search_section::profile>, text_rule::non_empty, profile_policies}},
    {"search", "expand_max_fraction",
     "A node at or above this fraction of the roofline, or diagnosed at the roofline by its "
     "counters, is not expanded, unless the task's torch baseline is faster than it beyond "
     "min_gain; 0 expands every node.",
     number_option{&field<search, &search_section::expand_max_fraction>,
                   {0, bound_kind::inclusive, 1, bound_kind::inclusive}}},

    {"bench", "trials", "Correctness trials per candidate, each on freshly drawn inputs.",
     integer_option{&field<bench, &bench_section::trials>, 1, 1000}},
    {"bench", "warmup_ms", "Warm-up before a candidate is timed, in milliseconds.",
     number_option{&field<bench, &bench_section::warmup_ms>, at_least(0)}},
    {"bench", "min_timing_trials",
     "Timed launches per candidate, at least, each after an L2 flush.",
     integer_option{&field<bench, &bench_section::min_timing_trials>, 1, unbounded}},
    {"bench", "max_timing_ms",
     "Time spent timing one candidate, at most, in milliseconds, once min_timing_trials are "
     "done.",
     number_option{&field<bench, &bench_section::max_timing_ms>, above(0)}},
    {"bench", "atol",
     "Absolute tolerance for every task, overriding its manifest's; unset: each task's own.",
     optional_number_option{&field<bench, &bench_section::atol>, at_least(0), 1e-5}},
    {"bench", "rtol",
     "Relative tolerance for every task, overriding its manifest's; unset: each task's own.",
     optional_number_option{&field<bench, &bench_section::rtol>, at_least(0), 1e-5}},
    {"bench", "norm_rel",
     "Norm-relative tolerance for every task, overriding its manifest's; unset: each task's "
     "own.",
     optional_number_option{&field<bench, &bench_section::norm_rel>, at_least(0), 1e-5}},
    {"bench", "verify_timeout_s",
     "A verification job running longer than this, in seconds, fails its candidate as timed "
     "out.",
     number_option{&field<bench, &bench_section::verify_timeout_s>, above(0)}},
    {"bench", "time_timeout_s",
     "A timing job running longer than this, in seconds, fails its candidate as timed out.",
     number_option{&field<bench, &bench_section::time_timeout_s>, above(0)}},
    {"bench", "compile_timeout_s",
     "An nvcc run lasting longer than this, in seconds, fails its candidate as timed out.",
     number_option{&field<bench, &bench_section::compile_timeout_s>, above(0)}},
    {"bench", "sandbox",
     "Runs each bench worker inside bubblewrap (bwrap): no network, the file system read-only "
     "but for the worker's own temporary folder, the GPU device files; and nvcc inside one too, "
     "seeing only /usr, the CUDA toolkit and the candidate's own folder (so a candidate cannot "
     "make the compiler read the user's files). Needs bwrap installed "
     "(Debian and Ubuntu package bubblewrap) and a host that lets it create namespaces; the "
     "campaign stops at start when it cannot. Without it each worker still gets a scrubbed "
     "environment, a private temporary folder and resource limits.",
     bool_option{&field<bench, &bench_section::sandbox>}},
    {"bench", "secret_env",
     "Environment variables the bench worker never gets, besides agents.api_key_env and every "
     "variable whose name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH. "
     "(The worker gets only an allowlist anyway: PATH, LD_LIBRARY_PATH, HOME, LANG, LC_*, TZ, "
     "CUDA_*, NVIDIA_*, __NV_*, __GL_* and KS_*; name here a secret that one of those would "
     "pass.)",
     env_var_list_option{&field<bench, &bench_section::secret_env>}},
    {"bench", "allow_vendor_libraries",
     "Measures a candidate that needs or loads a vendor library (cuBLAS, cuBLASLt, cuDNN, cuFFT, "
     "NCCL, libtorch: anything but the C and C++ runtimes, the CUDA runtime and driver, and "
     "CUPTI) and names the libraries in its result, results.json and the report (\"uses "
     "cublas\"). false: such a candidate fails as vendor_library, for its time would not be "
     "its own kernels'.",
     bool_option{&field<bench, &bench_section::allow_vendor_libraries>}},
    {"bench", "host_fault_retries",
     "A step that failed by a fault of the host, not of the candidate (a full or unwritable "
     "disk under nvcc or the compile cache, a bench worker killed from outside twice, a GPU "
     "lost), runs again after a wait, at most this many times for one node; then the campaign "
     "stops naming the fault (exit 24), every finished step saved, and the same command "
     "resumes it once the host is healthy. A host fault is never a node's result.",
     integer_option{&field<bench, &bench_section::host_fault_retries>, 0, 100}},
    {"bench", "host_fault_retry_s",
     "The first wait, in seconds, before a step failed by the host runs again; each further "
     "wait doubles, up to ten minutes.",
     number_option{&field<bench, &bench_section::host_fault_retry_s>, at_least(0)}},
    {"bench", "min_free_disk_mb",
     "An nvcc run that says it could not write its files is the host's fault, not the "
     "candidate's compile error, when the compile cache or the temporary folder has less free "
     "space than this, in MiB (or refuses a small probe file).",
     number_option{&field<bench, &bench_section::min_free_disk_mb>, at_least(0)}},
    {"bench", "stability_probe_s",
     "Each GPU is probed through the campaign with a fixed copy of known cost, to notice a "
     "card that another process, a throttle or a busy neighbour slows (docs/measurement.md, "
     "\"An unstable GPU\"): a working GPU at most this often, in seconds (about 15 ms a probe), "
     "and a timing's result is trusted only once a probe within bounds follows it. 0 turns "
     "the probes off.",
     number_option{&field<bench, &bench_section::stability_probe_s>, at_least(0)}},
    {"bench", "stability_drift",
     "A GPU is unstable when two probes in a row take more than this fraction longer than its "
     "quiet time (its fastest probe); a quiet H100 moves by about 1%.",
     number_option{&field<bench, &bench_section::stability_drift>,
                   {0, bound_kind::exclusive, 10, bound_kind::inclusive}}},
    {"bench", "stability_split",
     "A GPU is unstable when, in two probes in a row, the p90 of a probe's samples is more than "
     "this fraction above their p10: they fell into levels (another process's time slices).",
     number_option{&field<bench, &bench_section::stability_split>,
                   {0, bound_kind::exclusive, 10, bound_kind::inclusive}}},
    {"bench", "stability_pause_s",
     "While a GPU is unstable its timing jobs wait (other jobs still run on it), and it is "
     "probed again after this many seconds; the timings made just before it turned unstable "
     "are made again once it is within bounds.",
     number_option{&field<bench, &bench_section::stability_pause_s>, above(0)}},
    {"bench", "stability_limit_s",
     "A GPU unstable this many seconds in a row stops waiting: its timings run, each flagged, "
     "and the campaign says its results are unreliable (the final summary, results.json, "
     "report.md).",
     number_option{&field<bench, &bench_section::stability_limit_s>, at_least(0)}},

    {"agents", "backend",
     "How the agents think: offline (rules and skill templates, no network), openai (any "
     "OpenAI-compatible chat-completions endpoint: a hosted API, vLLM, SGLang, llama.cpp, "
     "Ollama), anthropic, or replay (the recorded transcripts of an earlier run, agents.replay).",
     text_option{&field<agents, &agents_section::backend>, text_rule::non_empty, backends}},
    {"agents", "endpoint",
     "Base URL of the model endpoint, such as \"http://localhost:8000/v1\"; empty: the "
     "backend's public one.",
     text_option{&field<agents, &agents_section::endpoint>, text_rule::url, {}}},
    {"agents", "model", "Model name sent with every request; openai and anthropic need one.",
     text_option{&field<agents, &agents_section::model>, text_rule::any, {}}},
    {"agents", "api_key_env",
     "Name of the environment variable that holds the API key (never the key itself); empty: "
     "no key is sent.",
     text_option{&field<agents, &agents_section::api_key_env>, text_rule::env_var_name, {}}},
    {"agents", "max_concurrency", "Model requests in flight at once, at most.",
     integer_option{&field<agents, &agents_section::max_concurrency>, 1, 1024}},
    {"agents", "request_timeout_s",
     "One model request, at most, in seconds: an attempt still unanswered then is abandoned "
     "and tried again.",
     number_option{&field<agents, &agents_section::request_timeout_s>, above(0)}},
    {"agents", "repair_rounds",
     "Attempts to repair a candidate that failed to compile or verify, at most; 0 disables "
     "repair.",
     integer_option{&field<agents, &agents_section::repair_rounds>, 0, 100}},
    {"agents", "max_retries",
     "Tries of a model request after its first, at most, on 429, 5xx, a dropped connection, a "
     "timeout or an answer that is not the API's JSON.",
     integer_option{&field<agents, &agents_section::max_retries>, 0, 100}},
    {"agents", "retry_base_s",
     "The first wait before a retry, in seconds; it doubles with each retry, with jitter "
     "(times a factor drawn in [0.5, 1]). A Retry-After header replaces it.",
     number_option{&field<agents, &agents_section::retry_base_s>, above(0)}},
    {"agents", "retry_max_s",
     "The longest wait before a retry, in seconds; a Retry-After asking for longer ends the "
     "request instead (the planner is asked again later).",
     number_option{&field<agents, &agents_section::retry_max_s>, above(0)}},
    {"agents", "reply_tokens", "The longest reply asked of the model, in tokens.",
     integer_option{&field<agents, &agents_section::reply_tokens>, 1, 1000000}},
    {"agents", "temperature", "Sampling temperature of every model request.",
     number_option{&field<agents, &agents_section::temperature>,
                   {0, bound_kind::inclusive, 2, bound_kind::inclusive}}},
    {"agents", "prompts",
     "Folder of the role prompts (Mustache templates: system.md, planner.md, coder.md, "
     "repairer.md, distiller.md, ...), relative to this file's folder; empty: the prompts "
     "installed with kernelskill. docs/agents.md lists what a prompt sees.",
     text_option{&field<agents, &agents_section::prompts>, text_rule::any, {}}},
    {"agents", "replay",
     "With backend = \"replay\": the transcripts folder of an earlier run (its "
     "<output>/transcripts), relative to this file's folder.",
     text_option{&field<agents, &agents_section::replay>, text_rule::any, {}}},
    {"agents", "distill",
     "With a model backend: after a task found a faster kernel, the model proposes a skill "
     "from its winning lineage; it joins the skill memory (as learned) only once it loads, "
     "compiles and, re-applied to the task, beats the reference.",
     bool_option{&field<agents, &agents_section::distill>}},
    {"agents", "prices",
     "What each model's tokens cost, per million tokens, for campaign.cost_budget and the "
     "reports; a model not listed costs 0. For example, prices = [{ model = \"gpt-4o\", "
     "input_per_mtok = 2.5, output_per_mtok = 10.0 }].",
     price_list_option{&field<agents, &agents_section::prices>}},

    {"memory", "path",
     "Folder of the LMDB environment, relative to this file's folder. Campaigns that share it "
     "learn from each other.",
     text_option{&field<memory, &memory_section::path>, text_rule::non_empty, {}}},
    {"memory", "skills",
     "Folder of the built-in skills seeded into memory (one subfolder per skill), relative to "
     "this file's folder; empty: the skills installed with kernelskill. A skill a user "
     "imported is never overwritten by a built-in one.",
     text_option{&field<memory, &memory_section::skills>, text_rule::any, {}}},
    {"memory", "exploration",
     "Weight of the exploration bonus when skills are ranked (an upper confidence bound over "
     "their acceptance rate on the task's op family and GPU); 0 ranks by the rate alone.",
     number_option{&field<memory, &memory_section::exploration>, at_least(0)}},
    {"memory", "demote_min_tries",
     "Tries on an op family and GPU before a skill can be demoted (tried only when nothing "
     "else is left).",
     integer_option{&field<memory, &memory_section::demote_min_tries>, 1, unbounded}},
    {"memory", "demote_failure_rate",
     "Demotes a skill once at least this share of its tries failed (did not compile, were "
     "wrong, crashed).",
     number_option{&field<memory, &memory_section::demote_failure_rate>,
                   {0, bound_kind::exclusive, 1, bound_kind::inclusive}}},
    {"memory", "demote_min_acceptance",
     "Demotes a skill whose share of accepted tries is below this; 0 never demotes for it.",
     number_option{&field<memory, &memory_section::demote_min_acceptance>,
                   {0, bound_kind::inclusive, 1, bound_kind::inclusive}}},

    {"report", "torch_baselines",
     "Torch baselines file written by tools/torch_baselines.py on the GPU host (each task's "
     "torch expression timed eagerly and under torch.compile, with the bench worker's method), "
     "relative to this file's folder; empty: none. Results then show each task's speedup over "
     "torch eager and torch.compile and their geomeans; a task absent from the file shows "
     "\"-\", and a file measured on another GPU is flagged. `kernelskill run --baselines` "
     "overrides it.",
     text_option{&field<report, &report_section::torch_baselines>, text_rule::any, {}}},
};

/// Returns `value` the shortest way that reads back exactly, without forcing a decimal point.
std::string short_number(double value) {
  char buffer[64];
  std::to_chars_result result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string phrase(const number_range& range) {
  auto end = [](bound_kind kind, double value, const char* inclusive, const char* exclusive) {
    return std::string(kind == bound_kind::inclusive ? inclusive : exclusive) + " " +
           short_number(value);
  };
  std::string text = "a number";
  if (range.min_kind != bound_kind::none)
    text += " " + end(range.min_kind, range.min, ">=", ">");
  if (range.max_kind != bound_kind::none)
    text += (range.min_kind != bound_kind::none ? " and " : " ") +
            end(range.max_kind, range.max, "<=", "<");
  return text;
}

} // namespace

bool number_range::contains(double value) const noexcept {
  if (!std::isfinite(value))
    return false;
  if ((min_kind == bound_kind::inclusive && value < min) ||
      (min_kind == bound_kind::exclusive && value <= min))
    return false;
  if ((max_kind == bound_kind::inclusive && value > max) ||
      (max_kind == bound_kind::exclusive && value >= max))
    return false;
  return true;
}

std::span<const option> campaign_options() {
  return options;
}

std::span<const section_info> campaign_sections() {
  return sections;
}

const option* find_option(std::string_view section, std::string_view key) {
  for (const option& o : options)
    if (o.section == section && o.key == key)
      return &o;
  return nullptr;
}

std::vector<std::string_view> keys_of(std::string_view section) {
  std::vector<std::string_view> keys;
  for (const option& o : options)
    if (o.section == section)
      keys.push_back(o.key);
  if (section.empty())
    for (const section_info& s : sections)
      if (!s.name.empty())
        keys.push_back(s.name);
  return keys;
}

std::string label_of(const option& o) {
  return o.section.empty() ? std::string(o.key) : std::string(o.section) + "." + std::string(o.key);
}

std::string accepted_values(const option& o) {
  struct visitor {
    std::string operator()(const integer_option& i) const {
      if (i.max == unbounded)
        return "an integer >= " + std::to_string(i.min);
      return "an integer between " + std::to_string(i.min) + " and " + std::to_string(i.max);
    }
    std::string operator()(const number_option& n) const { return phrase(n.range); }
    std::string operator()(const optional_number_option& n) const { return phrase(n.range); }
    std::string operator()(const text_option& t) const {
      if (!t.choices.empty())
        return "one of " + joined(t.choices, "\"");
      switch (t.rule) {
      case text_rule::any:
        return "a string";
      case text_rule::non_empty:
        return "a non-empty string";
      case text_rule::url:
        return "an http:// or https:// URL, or \"\"";
      case text_rule::env_var_name:
        return "the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), or \"\"";
      }
      return "a string";
    }
    std::string operator()(const text_list_option&) const {
      return "a non-empty array of non-empty strings";
    }
    std::string operator()(const gpus_option&) const {
      return "\"all\" or a non-empty array of distinct device numbers (integers >= 0)";
    }
    std::string operator()(const bool_option&) const { return "true or false"; }
    std::string operator()(const price_list_option&) const {
      return "an array of { model = \"NAME\", input_per_mtok = N, output_per_mtok = N } "
             "tables (prices >= 0, each model once), possibly empty";
    }
    std::string operator()(const env_var_list_option&) const {
      return "an array of environment variable names ([A-Za-z_][A-Za-z0-9_]*), possibly empty";
    }
  };
  return std::visit(visitor{}, o.kind);
}

std::string format_number(double value) {
  if (std::isnan(value))
    return "nan";
  std::string text = short_number(value);
  if (text.find_first_of(".ei") == std::string::npos)
    text += ".0";
  return text;
}

} // namespace ks::config
