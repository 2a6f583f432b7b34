#pragma once

// The stop rule of one task's search. It is asked before every expansion and answers "go on"
// or "stop, because ...". Stopping means starting no new expansion: branches in flight still
// finish and are judged, and a later one may still become the winner.
//
// The checks, in order:
//   1. the reference is not final yet: go on (nothing can be compared before it is timed);
//      it is final but not accepted (it failed): stop, reference_failed;
//   2. roofline: the best accepted node reached limits.roofline_target of the roofline, and no
//      torch baseline of the task is faster than it beyond limits.torch_min_gain (torch_beats);
//   3. budget: the tree holds limits.candidate_budget candidates;
//   4. patience: the last limits.patience settled expansions brought no significant gain;
//   5. exhausted: no node is expandable and none is in flight.
//
// Patience walks the settled expansions (every child final) in expansion-number order and
// keeps a bar: the median of the best node at the last significant gain, starting at the
// reference's. An expansion gains when one of its accepted children beats the bar by more than
// limits.min_gain (median < bar * (1 - min_gain)); the bar then drops to that median and the
// count restarts. Comparing with the bar rather than with the running best lets many small
// gains add up to a significant one, and counting only settled expansions keeps a slow branch
// in flight from being counted as a failure before it is judged.

#include "engine/search_limits.hpp"
#include "engine/search_tree.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ks::engine {

/// Says why a search stopped. The numbers are stable ("storage order"): they are persisted.
enum class stop_reason : int32_t {
  none = 0,             ///< not stopped: go on
  roofline = 1,         ///< the best is within the target fraction of the roofline
  patience = 2,         ///< P settled expansions in a row brought no significant gain
  budget = 3,           ///< the candidate budget is spent
  exhausted = 4,        ///< nothing left to expand and nothing in flight
  reference_failed = 5, ///< the reference has no measurement: nothing can be compared
};

/// Returns the stable name of `r` ("roofline", ...).
const char* to_string(stop_reason r) noexcept;

/// Parses a stable name back; nullopt if unknown.
std::optional<stop_reason> parse_stop_reason(std::string_view name) noexcept;

/// Holds the stop rule's answer: the reason and a sentence for people.
struct stop_decision {
  stop_reason reason = stop_reason::none;
  std::string text;

  /// Checks whether the search must start no new expansion.
  bool stop() const noexcept { return reason != stop_reason::none; }
};

/// Returns whether `tree` must stop growing under `limits`, and why (see the top of the file).
stop_decision check_stop(const search_tree& tree, const search_limits& limits);

/// Checks whether the task's torch baseline (limits.torch_ms) runs faster than `median_ms` by
/// more than the smaller of limits.min_gain and limits.torch_min_gain: then a kernel of that time
/// is not at the limit, whatever its roofline fraction says (its roofline counts bytes and flops
/// that torch's kernel evidently does not need, or the GPU delivers more than the calibration
/// measured).
bool torch_beats(const search_limits& limits, double median_ms);

/// Returns the number of settled expansions since the last significant gain (a gain of more
/// than `min_gain`, see the top of the file).
int64_t expansions_without_gain(const search_tree& tree, double min_gain);

/// Returns how many plans the next expansion may ask for: limits.branches, cut to the
/// candidate budget left (0 when it is spent).
int64_t branches_allowed(const search_tree& tree, const search_limits& limits);

} // namespace ks::engine
