#include "engine/search_policy.hpp"

#include <algorithm>
#include <cstdio>

namespace ks::engine {

namespace {

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

} // namespace

const std::vector<policy_info>& policy_registry() {
  // The one table of policies: a new policy adds its file and one line here.
  static const std::vector<policy_info> table{
      {"best_first",
       "expand the accepted node with the best speedup plus an exploration bonus (UCB-like)",
       {{"exploration",
         "weight of the bonus sqrt(ln(expansions + 1) / (node's expansions + 1)) against the "
         "speedup relative to the best",
         0.5, 0.0}},
       &make_best_first_policy},
      {"greedy", "always expand the fastest accepted node", {}, &make_greedy_policy},
      {"breadth_first",
       "expand every node once, shallowest first, before any node a second time",
       {},
       &make_breadth_first_policy},
  };
  return table;
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const policy_info& info : policy_registry())
    names.emplace_back(info.name);
  return names;
}

expected<std::unique_ptr<search_policy>> make_policy(std::string_view name,
                                                     const policy_options& options) {
  const policy_info* found = nullptr;
  std::string valid;
  for (const policy_info& info : policy_registry()) {
    if (info.name == name)
      found = &info;
    valid += valid.empty() ? "" : ", ";
    valid += info.name;
  }
  if (found == nullptr)
    return fail(errc::invalid_input,
                "unknown search policy \"" + std::string{name} + "\"; valid: " + valid);
  policy_options complete;
  std::string valid_options;
  for (const policy_option& option : found->options) {
    complete[std::string{option.name}] = option.default_value;
    valid_options += valid_options.empty() ? "" : ", ";
    valid_options += option.name;
  }
  for (const auto& [key, value] : options) {
    // The init-capture: clang 14 (clang-tidy's) cannot capture a structured binding.
    auto declared =
        std::find_if(found->options.begin(), found->options.end(),
                     [&wanted = key](const policy_option& o) { return o.name == wanted; });
    if (declared == found->options.end())
      return fail(errc::invalid_input,
                  "search policy " + std::string{name} + " has no option \"" + key +
                      "\"; valid: " + (valid_options.empty() ? "none" : valid_options));
    if (!(value >= declared->min_value))
      return fail(errc::invalid_input, "search policy " + std::string{name} + " option " + key +
                                           " = " + number(value) + ": must be at least " +
                                           number(declared->min_value));
    complete[key] = value;
  }
  return found->make(complete);
}

} // namespace ks::engine
