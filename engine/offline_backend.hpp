#pragma once

// The `offline` agent backend: rules and templates, no network. Until the skill library
// lands it knows one skill, launch_params: varying the launch parameters that a task's
// manifest lists as tunables (see offline_backend.cpp for the method).

#include "engine/agent_backend.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ks::engine {

/// Names the skill of the offline planner's plans: another value for launch parameters.
inline constexpr std::string_view launch_params_skill = "launch_params";

/// Maps each tunable macro (KS_BLOCK_THREADS, ...) to its value: one launch configuration.
using launch_config = std::map<std::string, int64_t>;

/// Returns VALUE of the first `#define NAME VALUE` that directly follows `#ifndef NAME` in
/// `source` (an overridable default); nullopt when there is none or VALUE is not a decimal
/// integer.
std::optional<int64_t> macro_default(std::string_view source, std::string_view name);

/// Returns the launch_params plan that assigns `config`: params hold every value in decimal,
/// so two such plans are the same plan (plan_key) exactly when their configurations are equal.
plan launch_plan(const launch_config& config, std::string description);

/// Returns the configuration a launch_params plan assigns; nullopt for another skill or for a
/// value that is not an integer.
std::optional<launch_config> launch_config_of(const plan& p);

/// Implements agent_backend without a network: proposes one-parameter steps through the
/// task's tunables, writes their code by prepending `#define`s to the reference, and gives up
/// on repairs (the planner's next step is the next parameter set). Takes no settings.
class offline_backend final : public agent_backend {
public:
  /// Returns "offline".
  std::string_view name() const noexcept override;

  /// Proposes up to request.count configurations that differ from the parent's in one
  /// parameter, moved to a neighbouring value of its list, nearest first; none tried on this
  /// parent nor equal to a configuration of the lineage. Returns errc::invalid_input without
  /// a task, and when the reference lacks the overridable default of a tunable.
  expected<std::vector<plan>> propose(const planning_request& request) override;

  /// Returns the reference source with `#define NAME VALUE` lines for request.plan's params
  /// (and a comment naming the plan) prepended; the reference itself for the reference plan.
  /// Deterministic: equal plans (plan_key) give equal text. Returns errc::invalid_input for
  /// another skill, a parameter that is not a tunable of the task or has no overridable
  /// default in the reference, or a value that is not an integer.
  expected<std::string> write_code(const coding_request& request) override;

  /// Gives up (gave_up = true): the offline repairer cannot edit code. Its diagnosis names
  /// the parameter set and the first line of the error.
  expected<repair_reply> repair(const repair_request& request) override;
};

} // namespace ks::engine
