#include "engine/search_policy.hpp"

#include <tuple>

namespace ks::engine {

namespace {

// breadth_first: the expandable node with the fewest expansions, then the shallowest, then the
// oldest. Every accepted node is expanded once, level by level, before any node is expanded a
// second time: the baseline that ignores timings when choosing.
class breadth_first_policy final : public search_policy {
public:
  std::string_view name() const noexcept override { return "breadth_first"; }

  std::optional<node_id> select(const search_tree& tree, const search_limits& limits) override {
    std::optional<node_id> chosen;
    auto key = [&](node_id id) {
      return std::tuple{tree.expansions_of(id), tree.node(id).depth, id};
    };
    for (node_id id : tree.expandable(limits.max_depth))
      if (!chosen || key(id) < key(*chosen))
        chosen = id;
    return chosen;
  }
};

} // namespace

std::unique_ptr<search_policy> make_breadth_first_policy(const policy_options&) {
  return std::make_unique<breadth_first_policy>();
}

} // namespace ks::engine
