#pragma once

// The whole space of a skill template's parameters, for the skill tests that walk it.

#include "engine/skill_template.hpp"

#include <utility>
#include <vector>

namespace ks::test {

/// Every instantiation of `space` (the odometer, last parameter fastest).
inline std::vector<engine::param_values>
all_instantiations(const std::vector<engine::param_space>& space) {
  std::vector<engine::param_values> out{engine::param_values{}};
  for (const engine::param_space& p : space) {
    std::vector<engine::param_values> next;
    for (const engine::param_values& partial : out)
      for (int64_t v : p.values) {
        engine::param_values one = partial;
        one[p.name] = v;
        next.push_back(std::move(one));
      }
    out = std::move(next);
  }
  return out;
}

} // namespace ks::test
