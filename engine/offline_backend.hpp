#pragma once

// The `offline` agent backend: rules and skill templates, no network (see offline_backend.cpp
// for the method). Every skill it applies is data in the skill library: launch parameters
// (the task's tunables over its reference), vectorized loops, row schemes, tiled products.

#include "engine/agent_backend.hpp"
#include "engine/skill_template.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ks::engine {

/// Returns the integer values of `p`'s params; nullopt when one is not an integer.
std::optional<param_values> params_of(const plan& p);

/// Returns the plan that instantiates template `t` of skill `s` with `values`: params hold
/// every value in decimal, so two such plans are the same plan (plan_key) exactly when their
/// skill, template and values are equal.
plan instantiation(const skill& s, const skill_template& t, const param_values& values,
                   std::string description);

/// Implements agent_backend without a network: proposes instantiations of the retrieved
/// skills' templates, writes their code by rendering the template, and gives up on repairs
/// (the next parameter set is the planner's next idea). Takes no settings.
class offline_backend final : public agent_backend {
public:
  /// Creates a backend that applies the skills of `skills` (null: none).
  explicit offline_backend(skill_library_ptr skills = nullptr);

  /// Returns "offline".
  std::string_view name() const noexcept override;

  /// Proposes up to request.count instantiations for the request's search target (a graph
  /// task's main node: search_target), none tried on this parent nor equal to a
  /// plan of the lineage: for the skill that made the parent, its neighbours (one parameter
  /// moved one step, nearest first); for another skill, its best instantiation remembered on
  /// this family and GPU, else its defaults (or their neighbours when those are taken). Takes
  /// one plan from each retrieved skill in turn, best ranked first, demoted skills only when
  /// the others have no plan left. Returns errc::invalid_input without a task.
  [[nodiscard]] expected<std::vector<plan>> propose(const planning_request& request) override;

  /// Returns the rendered template of request.plan (the reference itself for the reference
  /// plan); for a graph task, the template rendered for the main node's task, composed with
  /// the other nodes' references (graph_reference.hpp). Deterministic: equal plans (plan_key) give
  /// equal text. Returns errc::invalid_input for a skill or template the library lacks, a parameter
  /// that is not an integer, or an instantiation outside the template's space or constraints.
  [[nodiscard]] expected<std::string> write_code(const coding_request& request) override;

  /// Gives up (gave_up = true): the offline repairer cannot edit code. Its diagnosis names
  /// the plan and the first line of the error.
  [[nodiscard]] expected<repair_reply> repair(const repair_request& request) override;

private:
  /// Renders request.plan's template for `target` (the request's task or a graph's main node)
  /// over `reference`, that task's own reference.
  [[nodiscard]] expected<std::string>
  write_node_code(const coding_request& request, const task& target, const std::string& reference);

  skill_library_ptr skills_;
};

} // namespace ks::engine
