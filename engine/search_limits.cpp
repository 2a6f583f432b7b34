#include "engine/search_limits.hpp"

#include <cmath>
#include <string>

namespace ks::engine {

expected<void> validate(const search_limits& limits) {
  auto bad = [](const char* field, const std::string& value, const char* rule) {
    return fail(errc::invalid_input,
                std::string{"search."} + field + " = " + value + ": must be " + rule);
  };
  if (limits.branches < 1)
    return bad("branches", std::to_string(limits.branches), "at least 1");
  if (limits.max_depth < 1)
    return bad("max_depth", std::to_string(limits.max_depth), "at least 1");
  if (limits.candidate_budget < 1)
    return bad("candidate_budget", std::to_string(limits.candidate_budget), "at least 1");
  if (!(limits.roofline_target >= 0 && limits.roofline_target <= 1))
    return bad("roofline_target", std::to_string(limits.roofline_target), "between 0 (off) and 1");
  if (limits.patience < 0)
    return bad("patience", std::to_string(limits.patience), "0 (off) or more");
  if (!(limits.min_gain >= 0 && limits.min_gain < 1))
    return bad("min_gain", std::to_string(limits.min_gain), "in [0, 1)");
  if (!(limits.torch_min_gain >= 0 && limits.torch_min_gain < 1))
    return bad("torch_min_gain", std::to_string(limits.torch_min_gain), "in [0, 1)");
  if (!(limits.torch_ms >= 0 && std::isfinite(limits.torch_ms)))
    return fail(errc::invalid_input, "a task's torch baseline of " +
                                         std::to_string(limits.torch_ms) +
                                         " ms: must be a finite time, 0 for none");
  return {};
}

} // namespace ks::engine
