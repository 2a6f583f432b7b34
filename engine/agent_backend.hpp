#pragma once

// How a role thinks: the agent backend interface. The planner, coder and repairer actors
// hold a backend and call it; the backend knows nothing of actors. `offline` (rules and skill
// templates, no network) is the default; an LLM backend (openai, anthropic) implements the
// same interface with prompts built from the same requests. Backends are made by name in the
// registry of agents/ (agents/backend_registry.hpp), outside engine/, so that a backend that
// speaks HTTP never makes engine/ link an HTTP library.

#include "engine/diagnosis.hpp"
#include "engine/error.hpp"
#include "engine/plan.hpp"
#include "engine/retrieval.hpp"
#include "engine/search_tree.hpp"
#include "engine/short_term_memory.hpp"
#include "engine/skill.hpp"
#include "engine/task.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// What was tried on one ancestor of the parent, for the short-term memory of a branch.
struct ancestor_memory {
  node_id node = no_node;
  std::vector<plan_outcome> tried;

  friend bool operator==(const ancestor_memory&, const ancestor_memory&) = default;
};

/// What the planner knows when it proposes plans for one parent.
struct planning_request {
  const task* subject = nullptr;
  node_id parent = no_node;
  std::vector<plan> parent_lineage; ///< root .. parent: the parent's genotype is last
  std::string parent_source;
  std::string reference_source;        ///< the task's reference (tunables' defaults)
  std::vector<plan_outcome> tried;     ///< short-term memory: plans tried on this parent
  std::vector<ancestor_memory> branch; ///< ... and on each ancestor, root first
  std::vector<plan> in_tree;           ///< the plan of every node of the task's tree
  engine::diagnosis diagnosis;         ///< the parent's, typed; default: not diagnosed
  std::vector<retrieved_skill> skills; ///< retrieved for the parent, best first
  double parent_fraction_of_roofline = 0;
  int64_t count = 1;          ///< how many distinct plans are wanted (K)
  engine::timing parent_time; ///< the parent's measurement; not measured: unknown
  std::string gpu_name;       ///< the task's home GPU; empty: unknown (a dry run)
  double peak_gbps = 0;       ///< its measured DRAM peak; 0: unknown
  double peak_gflops = 0;     ///< its measured FP32 peak; 0: unknown
};

/// What the coder needs to turn a plan into source.
struct coding_request {
  const task* subject = nullptr;
  engine::plan plan;
  std::vector<engine::plan> lineage; ///< root .. the new node (plan last)
  std::string parent_source;
  std::string reference_source;
  node_id node = no_node; ///< the node being coded (transcripts); no_node: unknown
};

/// A failed build or verification to repair.
struct repair_request {
  const task* subject = nullptr;
  engine::plan plan;
  std::string source;                ///< the source that failed
  std::string failure_kind;          ///< gpu::failure_kind's name ("compile_error", ...)
  std::string error_text;            ///< compiler diagnostics or the verifier's message
  std::vector<repair_round> history; ///< earlier rounds on this branch
  node_id node = no_node;            ///< the branch being repaired; no_node: unknown
};

/// The repairer's answer.
struct repair_reply {
  bool gave_up = false; ///< no fix to offer: the branch ends
  std::string source;   ///< the fixed source (when not gave_up)
  std::string diagnosis;
  std::string fix_summary;
};

/// Settings of a backend, from the config's [agents] section.
struct backend_settings {
  std::string endpoint;           ///< base URL; empty: the backend's public one
  std::string model;              ///< model name (LLM backends)
  std::string api_key_env;        ///< the environment variable holding the key; empty: none
  int64_t max_concurrency = 4;    ///< requests in flight at once, at most
  double request_timeout_s = 120; ///< one request, at most
  std::string prompts_dir;        ///< the role prompts' folder; empty: the installed one
  int64_t reply_tokens = 8192;    ///< the longest reply asked for, in tokens
  double temperature = 0.2;       ///< sampling temperature sent with every request

  friend bool operator==(const backend_settings&, const backend_settings&) = default;
};

/// What every backend may use beyond its settings: the campaign's skill library, and what a
/// language model is told about the machine.
struct backend_context {
  skill_library_ptr skills; ///< null: an empty library
  std::string arch;         ///< the architecture candidates are compiled for ("sm_90a")
  std::string abi_header;   ///< the text of kernelskill/abi.h; empty: unknown
};

/// The interface every backend implements. Calls may block (an LLM backend waits on HTTP);
/// the role actors run them off the scheduler's threads. A backend that cannot answer for now
/// (rate limited, unavailable, timed out) fails with errc::transient: the supervisor then
/// asks again later instead of giving up on the parent.
class agent_backend {
public:
  virtual ~agent_backend() = default;

  /// Returns the backend's name ("offline", ...).
  virtual std::string_view name() const noexcept = 0;

  /// Proposes up to request.count plans, none already in request.tried (the offline backend:
  /// nor in request.in_tree); fewer (or none) when the backend has run out of ideas for this
  /// parent.
  [[nodiscard]] virtual expected<std::vector<plan>> propose(const planning_request& request) = 0;

  /// Returns the CUDA source that applies request.plan.
  [[nodiscard]] virtual expected<std::string> write_code(const coding_request& request) = 0;

  /// Returns a fix for a failed source, or gave_up.
  [[nodiscard]] virtual expected<repair_reply> repair(const repair_request& request) = 0;
};

} // namespace ks::engine
