#pragma once

#include "engine/error.hpp"

#include <cstdint>

namespace ks::engine {

/// Bounds one task's search: how wide each expansion is, how deep and how many candidates
/// the tree may grow, and when the stop rule (stop_rule.hpp) ends it.
struct search_limits {
  int64_t branches = 4;          ///< K: children per expansion (branches run in parallel)
  int64_t max_depth = 6;         ///< a node at this depth is never expanded
  int64_t candidate_budget = 64; ///< candidates per task, the reference not counted
  double roofline_target = 0.9;  ///< stop once the best reaches this fraction; 0 disables
  int64_t patience = 8;          ///< P: stop after P settled expansions without a gain;
                                 ///< 0 disables
  double min_gain = 0.02;        ///< a gain is significant above this fraction of the best
  /// The task's fastest torch baseline (eager or torch.compile, timed on this campaign's GPU),
  /// in ms; 0: none. While the best is slower than it by more than min_gain, torch proves the
  /// kernel is not at the limit: the roofline does not end the search.
  double torch_ms = 0;
  /// While torch is faster than the best by more than this fraction, the roofline does not
  /// end the search (the judge accepts gains this small against a kernel slower than torch).
  double torch_min_gain = 0.005;

  friend bool operator==(const search_limits&, const search_limits&) = default;
};

/// Checks `limits`: branches, max_depth and candidate_budget >= 1, roofline_target in
/// [0, 1], patience >= 0, min_gain and torch_min_gain in [0, 1), torch_ms >= 0. Fails with
/// invalid_input naming the field.
[[nodiscard]] expected<void> validate(const search_limits& limits);

} // namespace ks::engine
