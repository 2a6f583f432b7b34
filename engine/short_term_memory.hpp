#pragma once

// Short-term memory of one task: what was tried where, so that the search never repeats
// itself. For each parent node it keeps the plans tried on it and what came of each; for each
// failed branch, its repair rounds. Plans are compared by plan_key (skill and canonical
// parameters), never by description, so a planner cannot repeat a plan by rewording it; a
// failed method may be tried again only with a stated change (other parameters), which makes
// it another plan.
//
// A plan counts as tried from the moment it is recorded, with outcome pending: the supervisor
// records it when the branch starts, not when it ends, so parallel expansions of one parent
// cannot pick it twice. The store persists the two maps as they are (outcomes(), repairs());
// the restoring constructor takes them back.

#include "engine/plan.hpp"
#include "engine/search_tree.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// Names what came of a plan tried on a parent. The numbers are stable ("storage order").
enum class outcome_kind : int32_t {
  pending = 0,  ///< the branch is still running
  accepted = 1, ///< the child beat its parent beyond the noise
  rejected = 2, ///< the child was correct but not faster beyond the noise
  failed = 3,   ///< the child did not compile, was incorrect, crashed or hung (see failure_kind)
};

/// Returns the stable name of `k` ("pending", ...).
const char* to_string(outcome_kind k) noexcept;

/// Parses a stable name back; nullopt if unknown.
std::optional<outcome_kind> parse_outcome_kind(std::string_view name) noexcept;

/// Records one plan tried on a parent and what came of it.
struct plan_outcome {
  engine::plan plan;
  node_id child = no_node; ///< the node the plan made
  outcome_kind outcome = outcome_kind::pending;
  std::string failure_kind; ///< gpu::failure_kind's stable name when failed ("wrong_result")
  double gain = 0;          ///< 1 - child median / parent median; 0 when not timed

  friend bool operator==(const plan_outcome&, const plan_outcome&) = default;
};

/// Records one round of repair of a failed branch.
struct repair_round {
  int64_t round = 0;       ///< 1, 2, ... in the order they ran
  std::string error_text;  ///< what the compiler or the verifier said
  std::string diagnosis;   ///< what the repairer thinks is wrong
  std::string fix_summary; ///< what it changed
  std::string source_hash; ///< the source its fix produced (a repeat of an earlier one is refused)
  std::string repaired_hash; ///< the source it was asked to repair

  friend bool operator==(const repair_round&, const repair_round&) = default;
};

/// Returns the round of `rounds` whose fix produced the source `hash`, or 0 when `hash` is a
/// source a round was asked to repair or `failing_hash` (the one being repaired now); nullopt
/// for a source that has not failed on this branch. A repairer that returns one of these
/// repeats a fix that already failed.
std::optional<int64_t> repeated_fix(const std::vector<repair_round>& rounds,
                                    std::string_view failing_hash, std::string_view hash);

/// Holds the short-term memory of one task; see the top of the file.
class short_term_memory {
public:
  // -- member types ----------------------------------------------------------------------------

  /// Maps each parent to the plans tried on it, oldest first.
  using outcome_map = std::map<node_id, std::vector<plan_outcome>>;

  /// Maps each repaired branch (the child node) to its rounds, oldest first.
  using repair_map = std::map<node_id, std::vector<repair_round>>;

  // -- constructors ----------------------------------------------------------------------------

  /// Creates an empty memory.
  short_term_memory() = default;

  /// Restores a memory from what outcomes() and repairs() returned.
  short_term_memory(outcome_map outcomes, repair_map repairs);

  // -- mutations -------------------------------------------------------------------------------

  /// Records `outcome` for `parent`: replaces the entry of the same plan (plan_key) if there
  /// is one, keeping its place, and appends it otherwise.
  void record_outcome(node_id parent, plan_outcome outcome);

  /// Appends `round` to the repairs of `branch`, numbering it (1, 2, ...) when its round is 0;
  /// returns its round number.
  int64_t record_repair(node_id branch, repair_round round);

  // -- queries ---------------------------------------------------------------------------------

  /// Checks whether `p` (by plan_key) was tried on `parent`, whatever came of it.
  bool was_tried(node_id parent, const plan& p) const;

  /// Returns the plans tried on `parent` and their outcomes, oldest first.
  std::vector<plan_outcome> tried_plans(node_id parent) const;

  /// Returns the outcome of `p` on `parent`; nullopt if it was not tried there.
  std::optional<plan_outcome> outcome_of(node_id parent, const plan& p) const;

  /// Returns the repair rounds of `branch`, oldest first.
  std::vector<repair_round> repairs(node_id branch) const;

  /// Returns everything recorded per parent (what the store persists).
  const outcome_map& outcomes() const noexcept { return outcomes_; }

  /// Returns every repair round per branch (what the store persists).
  const repair_map& repairs() const noexcept { return repairs_; }

  friend bool operator==(const short_term_memory&, const short_term_memory&) = default;

private:
  outcome_map outcomes_;
  repair_map repairs_;
};

} // namespace ks::engine
