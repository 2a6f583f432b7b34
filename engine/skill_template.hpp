#pragma once

// Applying a skill's template to a task: the facts a template and its constraints see, the
// parameter space for the task, the checks that an instantiation is valid, and the rendering
// itself (Mustache, through kainjow's header-only library; see skill_template.cpp).

#include "engine/diagnosis.hpp"
#include "engine/error.hpp"
#include "engine/skill.hpp"
#include "engine/task.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ks::engine {

/// Maps each parameter of a template to its value: one instantiation.
using param_values = std::map<std::string, int64_t>;

/// Returns the facts of `subject` that constraints and preconditions see: "task.NAME" for every
/// scalar of task_scalars() (op_family.hpp: name, family, counts, element counts, the manifest's
/// params, the family's derived values), a boolean as 0 or 1; lists of integers are left out.
/// Templates see the same values, booleans as Mustache booleans, and the tensor lists.
fact_map task_facts(const task& subject);

/// Returns VALUE of the first `#define NAME VALUE` that directly follows `#ifndef NAME` in
/// `source` (an overridable default); nullopt when there is none or VALUE is not a decimal
/// integer.
std::optional<int64_t> macro_default(std::string_view source, std::string_view name);

/// Returns the parameter space of `t` for `subject`: the template's own, or, for a template
/// whose space is the task's tunables, one parameter per tunable with the manifest's values
/// and the reference's overridable default (read from `reference_source`). Fails with
/// invalid_input when the reference lacks the default of a tunable.
[[nodiscard]] expected<std::vector<param_space>>
space_of(const skill_template& t, const task& subject, std::string_view reference_source);

/// Returns the default instantiation of `space`: every parameter at its fixed `default`, for
/// any task (a `prefer` is not evaluated; preferred_defaults is the task's).
param_values defaults_of(const std::vector<param_space>& space);

/// Returns `values` ordered by their distance to `wanted`, nearest first; of two as near, the
/// smaller first. Empty when `wanted` is not a finite number (a string, NaN, infinity).
std::vector<int64_t> by_nearness(const std::vector<int64_t>& values, const fact_value& wanted);

/// Returns the default instantiation of template `t` for `subject`: each parameter with a
/// `prefer`, in the order of `space`, takes the value of `values` nearest to its expression's
/// value (over task_facts and the parameters before it, as resolved so far), or the next
/// nearest while that one breaks a constraint (the other parameters as they stand; none
/// valid: the nearest); every other parameter keeps its fixed default. A `prefer` that cannot
/// be evaluated for `subject` (an error such as a division by zero, a fact the task lacks, a
/// string or a value that is not finite) leaves its parameter at the fixed default. Total:
/// never fails; without any `prefer` it is defaults_of(space).
param_values preferred_defaults(const skill_template& t, const std::vector<param_space>& space,
                                const task& subject);

/// Says whether a skill applies and, when not, why.
struct applicability {
  bool applies = false;
  std::string why_not; ///< empty when it applies
};

/// Checks a skill's preconditions for `subject` and its parent's `diagnosis` (null: none yet):
/// its families, the bottleneck classes it addresses (an undiagnosed parent passes), every
/// `requires` expression (a fact not known passes), its text tables (the task's key must have
/// an entry) and that a template with a valid instantiation exists. With `by_bottleneck`
/// false, the bottleneck classes are not checked (retrieval ranks those skills last instead).
applicability check_applies(const skill& s, const task& subject, const diagnosis* diagnosis,
                            std::string_view reference_source, bool by_bottleneck = true);

/// Checks whether `s` addresses the bottleneck of `diagnosis`: true when there is no
/// diagnosis yet, or the skill names no class.
bool addresses_bottleneck(const skill& s, const diagnosis* diagnosis) noexcept;

/// Checks `values` against `space` (every parameter given, each one of its values) and the
/// template's constraints for `subject`. Returns nullopt when valid, else why not; errc::
/// invalid_input when a constraint cannot be evaluated (a type error, a name nothing defines).
[[nodiscard]] expected<std::optional<std::string>>
check_params(const skill_template& t, const std::vector<param_space>& space,
             const param_values& values, const task& subject);

/// Returns the first valid instantiation of `t` for `subject`: its preferred defaults
/// (preferred_defaults) when valid, else its fixed defaults when valid, else the first valid
/// one in the order of the values (the last parameter varying fastest); nullopt when none is
/// valid.
[[nodiscard]] expected<std::optional<param_values>>
first_valid(const skill_template& t, const std::vector<param_space>& space, const task& subject);

/// Renders template `t` of skill `s` for `subject` with `values`. The template sees each
/// parameter by name, `task.*` (task_facts, with booleans as Mustache booleans, and the lists
/// task.inputs and task.outputs of op_family.hpp's tensor_records), `text.NAME` (the skill's
/// tables), `reference` (the reference's source, verbatim), `defines` (a list of {name, value}:
/// the parameters, for templates that prepend #defines), `flag.NAME` (parameter NAME as a
/// boolean, for sections), `skill.id`, `skill.version`, `skill.template` and `plan` (a one-line
/// description). Nothing is HTML-escaped. Fails with invalid_input when the template names
/// something none of these provides, uses a boolean or a list as a {{variable}} (it would render
/// as nothing), or on a Mustache error.
[[nodiscard]] expected<std::string> render(const skill& s, const skill_template& t,
                                           const task& subject, const param_values& values,
                                           std::string_view reference_source);

/// Checks the Mustache syntax of `text` and its size and section depth (mustache_limits.hpp):
/// nullopt when it parses within them, else the byte offset of the problem and what is wrong.
std::optional<std::pair<size_t, std::string>> template_syntax_error(const std::string& text);

} // namespace ks::engine
