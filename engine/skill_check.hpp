#pragma once

// Checks that a skill from outside (a model's distillation, `skills import`) evaluates: every
// expression it holds is computed on sample values before the skill is stored, so that a
// constraint that can only fail (an overflow, a division by zero, a string in arithmetic) is
// refused with its reason instead of reaching a campaign. See skill_check.cpp.

#include "engine/error.hpp"
#include "engine/skill.hpp"

#include <cstdint>

namespace ks::engine {

/// The most instantiations of one template that check_skill_evaluates walks.
inline constexpr int64_t max_checked_instantiations = 4096;

/// Evaluates every constraint of every template of `s` on each instantiation of its parameter
/// space (the defaults first, then in the planner's order, at most max_checked_instantiations),
/// and every precondition, with no task or diagnosis fact known. Fails with errc::invalid_input
/// naming the skill, the template, the expression and the values where one fails to evaluate.
[[nodiscard]] expected<void> check_skill_evaluates(const skill& s);

} // namespace ks::engine
