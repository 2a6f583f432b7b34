#include "engine/stop_rule.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

namespace ks::engine {

namespace {

constexpr std::array<const char*, 6> reason_names{"none",   "roofline",  "patience",
                                                  "budget", "exhausted", "reference_failed"};

std::string percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", fraction * 100);
  return buffer;
}

} // namespace

const char* to_string(stop_reason r) noexcept {
  auto index = static_cast<size_t>(r);
  return index < reason_names.size() ? reason_names[index] : "unknown";
}

std::optional<stop_reason> parse_stop_reason(std::string_view name) noexcept {
  for (size_t i = 0; i < reason_names.size(); ++i)
    if (name == reason_names[i])
      return static_cast<stop_reason>(i);
  return std::nullopt;
}

int64_t expansions_without_gain(const search_tree& tree, double min_gain) {
  const node_record& root = tree.root();
  if (!root.time.measured())
    return 0;
  double bar = root.time.median_ms;
  int64_t without_gain = 0;
  // One pass groups the children by expansion number (index 0 holds the root).
  std::vector<std::vector<node_id>> groups(static_cast<size_t>(tree.total_expansions()) + 1);
  for (const node_record& n : tree.nodes())
    groups[static_cast<size_t>(n.expansion)].push_back(n.id);
  for (size_t expansion = 1; expansion < groups.size(); ++expansion) {
    const std::vector<node_id>& members = groups[expansion];
    if (members.empty())
      continue;
    bool settled = std::all_of(members.begin(), members.end(),
                               [&](node_id id) { return is_final(tree.node(id)); });
    if (!settled)
      continue;
    double best = bar;
    for (node_id id : members)
      if (tree.node(id).status == node_status::accepted)
        best = std::min(best, tree.node(id).time.median_ms);
    if (best < bar * (1 - min_gain)) {
      bar = best;
      without_gain = 0;
    } else {
      ++without_gain;
    }
  }
  return without_gain;
}

bool torch_beats(const search_limits& limits, double median_ms) {
  return limits.torch_ms > 0 &&
         median_ms > limits.torch_ms * (1 + std::min(limits.min_gain, limits.torch_min_gain));
}

stop_decision check_stop(const search_tree& tree, const search_limits& limits) {
  const node_record& root = tree.root();
  if (!is_final(root))
    return {stop_reason::none, "waiting for the reference's timing"};
  if (root.status != node_status::accepted)
    return {stop_reason::reference_failed,
            std::string{"the reference has no measurement (it is "} + to_string(root.status) +
                (root.failure_kind.empty() ? "" : ": " + root.failure_kind) + ")"};

  std::optional<node_id> best = tree.best_accepted();
  if (best && limits.roofline_target > 0 && !torch_beats(limits, tree.node(*best).time.median_ms)) {
    double fraction = tree.node(*best).fraction_of_roofline;
    if (fraction >= limits.roofline_target)
      return {stop_reason::roofline, "node " + std::to_string(*best) + " runs at " +
                                         percent(fraction) + " of the roofline (target " +
                                         percent(limits.roofline_target) + ")"};
  }

  if (tree.candidates() >= limits.candidate_budget)
    return {stop_reason::budget,
            "the budget of " + std::to_string(limits.candidate_budget) + " candidates is spent"};

  if (limits.patience > 0) {
    int64_t idle = expansions_without_gain(tree, limits.min_gain);
    if (idle >= limits.patience)
      return {stop_reason::patience, std::to_string(idle) +
                                         " expansions in a row brought no gain above " +
                                         percent(limits.min_gain)};
  }

  if (tree.expandable(limits.max_depth).empty() && tree.in_flight() == 0)
    return {stop_reason::exhausted, "no node is left to expand and none is in flight"};

  return {stop_reason::none, "the search goes on"};
}

int64_t branches_allowed(const search_tree& tree, const search_limits& limits) {
  int64_t left = limits.candidate_budget - tree.candidates();
  return std::clamp<int64_t>(left, 0, limits.branches);
}

} // namespace ks::engine
