#pragma once

// How a role thinks: the agent backend interface. The planner, coder and repairer actors
// hold a backend and call it; the backend knows nothing of actors. `offline` (rules and
// templates, no network) is the default; an LLM backend (openai, anthropic) implements the
// same interface with prompts built from the same requests.

#include "engine/error.hpp"
#include "engine/plan.hpp"
#include "engine/search_tree.hpp"
#include "engine/short_term_memory.hpp"
#include "engine/task.hpp"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// What the planner knows when it proposes plans for one parent.
struct planning_request {
  const task* subject = nullptr;
  node_id parent = no_node;
  std::vector<plan> parent_lineage;        ///< root .. parent
  std::string parent_source;
  std::vector<plan_outcome> tried;         ///< short-term memory: plans tried on this parent
  std::string diagnosis;                   ///< the analyst's bottleneck diagnosis, may be empty
  double parent_fraction_of_roofline = 0;
  int64_t count = 1;                       ///< how many distinct plans are wanted (K)
};

/// What the coder needs to turn a plan into source.
struct coding_request {
  const task* subject = nullptr;
  engine::plan plan;
  std::vector<engine::plan> lineage;       ///< root .. the new node (plan last)
  std::string parent_source;
  std::string reference_source;
};

/// A failed build or verification to repair.
struct repair_request {
  const task* subject = nullptr;
  engine::plan plan;
  std::string source;                      ///< the source that failed
  std::string failure_kind;                ///< gpu::failure_kind's name ("compile_error", ...)
  std::string error_text;                  ///< compiler diagnostics or the verifier's message
  std::vector<repair_round> history;       ///< earlier rounds on this branch
};

/// The repairer's answer.
struct repair_reply {
  bool gave_up = false;                    ///< no fix to offer: the branch ends
  std::string source;                      ///< the fixed source (when not gave_up)
  std::string diagnosis;
  std::string fix_summary;
};

/// Settings of a backend, from the config's [agents] section.
using backend_settings = std::map<std::string, std::string>;

/// The interface every backend implements. Calls may block (an LLM backend waits on HTTP);
/// the role actors run them off the scheduler's threads.
class agent_backend {
public:
  virtual ~agent_backend() = default;

  /// Returns the backend's name ("offline", ...).
  virtual std::string_view name() const noexcept = 0;

  /// Proposes up to request.count plans, none already in request.tried; fewer (or none)
  /// when the backend has run out of ideas for this parent.
  virtual expected<std::vector<plan>> propose(const planning_request& request) = 0;

  /// Returns the CUDA source that applies request.plan.
  virtual expected<std::string> write_code(const coding_request& request) = 0;

  /// Returns a fix for a failed source, or gave_up.
  virtual expected<repair_reply> repair(const repair_request& request) = 0;
};

/// Creates the backend named `name` ("offline"); lists the valid names otherwise.
expected<std::unique_ptr<agent_backend>> make_backend(std::string_view name,
                                                      const backend_settings& settings);

/// Returns the names make_backend accepts, in registration order ("offline").
std::vector<std::string_view> backend_names();

} // namespace ks::engine
