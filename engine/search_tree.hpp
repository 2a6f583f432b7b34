#pragma once

// The search tree of one task. Node 0 is the root: the task's reference kernel. Every other
// node is a candidate made by applying one plan to its parent, so a node's lineage (the plans
// from the root down to it) says how it was made. Nodes are created by expansions: one call
// of expand() picks K plans for one parent and creates K children that share a serial
// expansion number (1, 2, ...), which the policies and the stop rule count.
//
// Invariants, checked by every mutation and by from_records(): ids are dense (a node's id is
// its index), a parent is created before its children, depth = parent's depth + 1, a parent
// never has two children with the same plan (plan_key), only an accepted and open node is
// expanded, and a node whose status says it was timed (timed, rejected, accepted) carries a
// timing and the disposition "passed". The identity of a node (id, parent, depth, expansion,
// plan) never changes after creation; update() changes only its progress.
//
// Children are not stored in a node_record: they are derived from the parents, so a persisted
// record can never disagree with its parent. A node_record is a plain value the store
// persists; from_records() rebuilds the tree on resume.

#include "engine/error.hpp"
#include "engine/plan.hpp"
#include "engine/timing.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// Identifies a node within its task's tree; the root is 0.
using node_id = int64_t;

/// Marks "no node" (the root's parent).
inline constexpr node_id no_node = -1;

/// Says how far a node's life got: planned -> coded -> compiled -> verified -> timed ->
/// accepted or rejected, or one of the failure ends. Whether its outputs were right is the
/// separate `disposition`. The numbers are stable ("storage order"): they are persisted.
enum class node_status : int32_t {
  planned = 0,        ///< the plan is chosen; no source yet
  coded = 1,          ///< the source exists (source_hash is set); also after a repair
  compiled = 2,       ///< the shared object is built
  compile_failed = 3, ///< nvcc rejected the source and repairs ran out (final)
  verified = 4,       ///< verification ran: the disposition says passed (timing comes next)
                      ///< or incorrect (final)
  failed = 5,         ///< the worker reported another failure: load, launch, escaped stream,
                      ///< out of memory... (final; failure_kind names it)
  timed = 6,          ///< the timing is in; waiting for the judge
  crashed = 7,        ///< the worker died or the kernel faulted (final)
  timed_out = 8,      ///< the job ran past its watchdog (final)
  rejected = 9,       ///< timed, but not faster than its parent beyond the noise (final)
  accepted = 10,      ///< faster than its parent beyond the noise; may be expanded (final).
                      ///< The root is accepted once the reference is timed.
};

/// Counts the node statuses; they are numbered 0 .. status_count - 1.
inline constexpr int32_t status_count = 11;

/// Returns the stable name of `s` ("compile_failed", ...).
const char* to_string(node_status s) noexcept;

/// Parses a stable name back; nullopt if unknown.
std::optional<node_status> parse_node_status(std::string_view name) noexcept;

/// Says what verification concluded about a node's outputs, independently of its status.
/// The numbers are stable ("storage order").
enum class disposition : int32_t {
  not_verified = 0, ///< verification has not run (or could not: it failed before)
  passed = 1,       ///< every output within tolerance, inputs unchanged
  incorrect = 2,    ///< some output outside tolerance, unwritten, or an input changed
};

/// Returns the stable name of `d` ("not_verified", "passed", "incorrect").
const char* to_string(disposition d) noexcept;

/// Parses a stable name back; nullopt if unknown.
std::optional<disposition> parse_disposition(std::string_view name) noexcept;

/// Says whether a node may still be expanded. The numbers are stable ("storage order").
enum class expansion_state : int32_t {
  open = 0,      ///< the planner may still find untried plans for it
  exhausted = 1, ///< the planner found no untried plan: never select it again
};

/// Holds everything known about one node: a plain value, persisted by the store.
struct node_record {
  node_id id = 0;
  node_id parent = no_node;
  int64_t depth = 0;
  int64_t expansion = 0; ///< serial number of the expansion that made it; 0 for the root
  engine::plan plan;
  std::string source_hash; ///< content hash of the CUDA source; empty until coded
  node_status status = node_status::planned;
  engine::disposition disposition = engine::disposition::not_verified;
  timing time;                     ///< trials == 0 until timed
  double fraction_of_roofline = 0; ///< roofline floor / median; 0 when unknown
  std::string failure_kind;        ///< gpu::failure_kind's stable name; empty if none
  engine::expansion_state expansion_state = engine::expansion_state::open;

  friend bool operator==(const node_record&, const node_record&) = default;
};

/// Checks whether `n` reached a final state (nothing more will happen to it): compile_failed,
/// failed, crashed, timed_out, rejected, accepted, or verified with disposition incorrect.
bool is_final(const node_record& n) noexcept;

/// Holds the search tree of one task; see the top of this file for its invariants.
class search_tree {
public:
  // -- constructors ----------------------------------------------------------------------------

  /// Creates a tree holding only the root (the reference, plan reference_plan(), planned).
  search_tree();

  /// Rebuilds a tree from persisted records, checking every invariant; fails with
  /// invalid_input naming the first offending record.
  [[nodiscard]] static expected<search_tree> from_records(std::vector<node_record> records);

  // -- mutations -------------------------------------------------------------------------------

  /// Expands `parent` once: creates one child per plan (status planned), all with the next
  /// expansion number, and returns their ids in the order of `plans`. Fails, changing nothing,
  /// if `parent` is unknown, not accepted or exhausted, if `plans` is empty, or if a plan has
  /// no skill or repeats a plan of the batch or of an existing child of `parent`.
  [[nodiscard]] expected<std::vector<node_id>> expand(node_id parent,
                                                      const std::vector<engine::plan>& plans);

  /// Expands `parent` with the single plan `p`; equal to expand(parent, {p}).
  [[nodiscard]] expected<node_id> add_child(node_id parent, engine::plan p);

  /// Replaces the progress of node `record.id` (source hash, status, disposition, timing,
  /// roofline fraction, failure kind, expansion state) with `record`'s. Fails if the id is
  /// unknown, if its identity (parent, depth, expansion, plan) differs, or if the record
  /// breaks an invariant (a timed status without a timing or without disposition passed;
  /// status verified with disposition not_verified).
  [[nodiscard]] expected<void> update(const node_record& record);

  /// Marks `id` exhausted: no policy selects it again. Fails if `id` is unknown.
  [[nodiscard]] expected<void> mark_exhausted(node_id id);

  // -- queries ---------------------------------------------------------------------------------

  /// Returns the number of nodes, the root included.
  int64_t size() const noexcept { return static_cast<int64_t>(nodes_.size()); }

  /// Returns the number of candidates: every node but the root.
  int64_t candidates() const noexcept { return size() - 1; }

  /// Checks whether `id` names a node of this tree.
  bool contains(node_id id) const noexcept { return id >= 0 && id < size(); }

  /// Returns node `id`; `id` must satisfy contains().
  const node_record& node(node_id id) const { return nodes_[static_cast<size_t>(id)]; }

  /// Returns the root: node 0, the reference.
  const node_record& root() const { return nodes_.front(); }

  /// Returns every node, indexed by id (what the store persists).
  const std::vector<node_record>& nodes() const noexcept { return nodes_; }

  /// Returns the children of `id`, oldest first; `id` must satisfy contains().
  std::span<const node_id> children(node_id id) const;

  /// Returns how many expansions of `id` made children; `id` must satisfy contains().
  int64_t expansions_of(node_id id) const;

  /// Returns the number of expansions made in the whole tree (the last expansion number).
  int64_t total_expansions() const noexcept { return total_expansions_; }

  /// Returns the ids of the children made by expansion number `expansion`, oldest first.
  std::vector<node_id> expansion_members(int64_t expansion) const;

  /// Returns the fastest accepted node (smallest median; the lower id on a tie), the root
  /// included; nullopt if none is accepted yet.
  std::optional<node_id> best_accepted() const;

  /// Returns the plans from the root to `id`, both included (the root's plan first).
  [[nodiscard]] expected<std::vector<engine::plan>> lineage(node_id id) const;

  /// Returns the node ids from the root to `id`, both included.
  [[nodiscard]] expected<std::vector<node_id>> lineage_ids(node_id id) const;

  /// Returns the nodes a policy may select: accepted, open, and shallower than `max_depth`,
  /// in id order.
  std::vector<node_id> expandable(int64_t max_depth) const;

  /// Returns reference median / median of `id`: how much faster than the reference it is;
  /// 0 if either is not timed. `id` must satisfy contains().
  double speedup(node_id id) const;

  /// Returns the number of nodes with status `s`.
  int64_t count(node_status s) const noexcept;

  /// Returns the number of nodes per status, indexed by the status's number.
  std::array<int64_t, status_count> counts() const noexcept;

  /// Returns the number of nodes with disposition `d`.
  int64_t count(engine::disposition d) const noexcept;

  /// Returns the number of nodes not yet final (see is_final): the work in flight.
  int64_t in_flight() const noexcept;

private:
  struct links {
    std::vector<node_id> children;
    std::vector<int64_t> expansions; // distinct expansion numbers among the children
  };

  [[nodiscard]] expected<void> check_progress(const node_record& record) const;
  void link(const node_record& child);

  std::vector<node_record> nodes_;
  std::vector<links> links_;
  int64_t total_expansions_ = 0;
};

} // namespace ks::engine
