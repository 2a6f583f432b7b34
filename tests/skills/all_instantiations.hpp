#pragma once

// The whole space of a skill template's parameters, for the skill tests that walk it.

#include "engine/skill_template.hpp"
#include "engine/task.hpp"

#include <catch2/catch.hpp>

#include <string_view>
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

/// Every instantiation of `tp` whose constraints hold for `t` (its space read with the
/// reference `reference`), in the odometer's order; fails the test when one cannot be checked.
inline std::vector<engine::param_values> valid_instantiations(const engine::skill_template& tp,
                                                              const engine::task& t,
                                                              std::string_view reference) {
  auto space = engine::space_of(tp, t, reference);
  REQUIRE(space.has_value());
  std::vector<engine::param_values> valid;
  for (const engine::param_values& v : all_instantiations(*space)) {
    auto why = engine::check_params(tp, *space, v, t);
    REQUIRE(why.has_value());
    if (!*why)
      valid.push_back(v);
  }
  return valid;
}

} // namespace ks::test
