#pragma once

// Search policies choose which node of a task's tree to expand next. Each policy lives in its
// own file behind the tiny interface below and is registered in one name -> factory table
// (search_policy.cpp), with each of its options declared once as {name, description,
// default}: that declaration validates the config and writes --help (kernel_tuner's pattern).
// A policy only ever selects among search_tree::expandable(limits.max_depth): accepted, open
// nodes above the depth limit. Whether to expand at all is the stop rule's call, not the
// policy's; a policy returns nullopt only when nothing is expandable.

#include "engine/error.hpp"
#include "engine/search_limits.hpp"
#include "engine/search_tree.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// Chooses the node to expand next.
class search_policy {
public:
  virtual ~search_policy() = default;

  /// Returns the name the policy is registered under.
  virtual std::string_view name() const noexcept = 0;

  /// Returns the node of `tree` to expand next, among tree.expandable(limits.max_depth);
  /// nullopt when that is empty.
  virtual std::optional<node_id> select(const search_tree& tree, const search_limits& limits) = 0;
};

/// Maps option names to values, as the config gives them to make_policy.
using policy_options = std::map<std::string, double>;

/// Declares one option of a policy.
struct policy_option {
  std::string_view name;
  std::string_view description;
  double default_value = 0;
  double min_value = 0; ///< the smallest value allowed
};

/// Makes a policy from options that make_policy has completed with defaults and checked.
using policy_factory = std::unique_ptr<search_policy> (*)(const policy_options& options);

/// Describes one registered policy.
struct policy_info {
  std::string_view name;
  std::string_view description;
  std::vector<policy_option> options;
  policy_factory make = nullptr;
};

/// Returns every registered policy, in the table's order.
const std::vector<policy_info>& policy_registry();

/// Returns the names of every registered policy, in the table's order.
std::vector<std::string> policy_names();

/// Returns a new policy `name` with `options` (missing ones take their defaults). Fails with
/// invalid_input listing the valid names when `name` is unknown, and the valid options when an
/// option is unknown or below its minimum.
[[nodiscard]] expected<std::unique_ptr<search_policy>>
make_policy(std::string_view name, const policy_options& options = {});

// -- built-in policies (one file each) ---------------------------------------------------------

/// Returns a best_first policy (best_first_policy.cpp); reads option "exploration".
std::unique_ptr<search_policy> make_best_first_policy(const policy_options& options);

/// Returns a greedy policy (greedy_policy.cpp); takes no option.
std::unique_ptr<search_policy> make_greedy_policy(const policy_options& options);

/// Returns a breadth_first policy (breadth_first_policy.cpp); takes no option.
std::unique_ptr<search_policy> make_breadth_first_policy(const policy_options& options);

} // namespace ks::engine
