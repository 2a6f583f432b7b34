#include "engine/search_policy.hpp"

namespace ks::engine {

namespace {

// greedy: always the fastest expandable node (the older one on a tie). It never looks back at
// a slower branch until the fastest is exhausted or at the depth limit, so it is quick on
// tasks whose gains compose and stuck on tasks that need a detour.
class greedy_policy final : public search_policy {
public:
  std::string_view name() const noexcept override { return "greedy"; }

  std::optional<node_id> select(const search_tree& tree, const search_limits& limits) override {
    std::optional<node_id> chosen;
    for (node_id id : tree.expandable(limits.max_depth))
      if (!chosen || tree.node(id).time.median_ms < tree.node(*chosen).time.median_ms)
        chosen = id;
    return chosen;
  }
};

} // namespace

std::unique_ptr<search_policy> make_greedy_policy(const policy_options&) {
  return std::make_unique<greedy_policy>();
}

} // namespace ks::engine
