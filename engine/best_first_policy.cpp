// best_first: node selection as in UCB1, the bandit rule behind Monte Carlo tree search. Each
// expandable node (accepted, open, above the depth limit) scores
//
//   score(n) = best median / median(n)  +  exploration * sqrt(ln(N + 1) / (e(n) + 1))
//
// where N is the number of expansions in the whole tree, e(n) the expansions of n, and "best"
// the fastest expandable node. The first term is n's speedup over the reference divided by the
// best one's, so it lies in (0, 1] and the best node has 1: normalizing makes one exploration
// constant fit a task whose best is 1.2x and one whose best is 30x, where a raw speedup would drown
// the bonus (or the bonus the speedup). The second term grows slowly with N and shrinks as n is
// expanded, so a slower but rarely expanded node eventually gets its turn, and a node whose
// expansions keep failing stops monopolizing the budget. exploration = 0 is greedy.
//
// Ties (equal scores) go to the shallower node, then the older one, so selection is
// deterministic for a given tree: a resumed campaign picks what the killed one would have.

#include "engine/search_policy.hpp"

#include <algorithm>
#include <cmath>

namespace ks::engine {

namespace {

class best_first_policy final : public search_policy {
public:
  explicit best_first_policy(double exploration) : exploration_(exploration) {}

  std::string_view name() const noexcept override { return "best_first"; }

  std::optional<node_id> select(const search_tree& tree, const search_limits& limits) override {
    std::vector<node_id> candidates = tree.expandable(limits.max_depth);
    if (candidates.empty())
      return std::nullopt;
    double best_ms = tree.node(candidates.front()).time.median_ms;
    for (node_id id : candidates)
      best_ms = std::min(best_ms, tree.node(id).time.median_ms);
    auto total = static_cast<double>(tree.total_expansions());
    std::optional<node_id> chosen;
    double chosen_score = 0;
    for (node_id id : candidates) {
      const node_record& n = tree.node(id);
      auto own = static_cast<double>(tree.expansions_of(id));
      double score =
          best_ms / n.time.median_ms + exploration_ * std::sqrt(std::log(total + 1) / (own + 1));
      // candidates come in id order, so on equal scores only a shallower node displaces.
      if (!chosen || score > chosen_score ||
          (score == chosen_score && n.depth < tree.node(*chosen).depth)) {
        chosen = id;
        chosen_score = score;
      }
    }
    return chosen;
  }

private:
  double exploration_;
};

} // namespace

std::unique_ptr<search_policy> make_best_first_policy(const policy_options& options) {
  // A caller that skips make_policy still gets the default declared in the registry's table.
  double exploration = 0;
  for (const policy_info& info : policy_registry())
    for (const policy_option& option : info.options)
      if (info.name == "best_first" && option.name == "exploration")
        exploration = option.default_value;
  if (auto found = options.find("exploration"); found != options.end())
    exploration = found->second;
  return std::make_unique<best_first_policy>(exploration);
}

} // namespace ks::engine
