// Evaluating a skill's expressions before it is stored. The facts of a task are not known
// when a skill is imported or distilled, so they are left unknown: unknown spreads through
// arithmetic (expression.cpp), so an expression fails here only for what does not depend on
// the task: its literals and its template's parameters, which are known in full. That is what
// a campaign would evaluate for every task, and an error there makes the template unusable
// everywhere (check_params fails the template), so it is refused here with its reason. Parsing
// and evaluation are bounded and total (expression.hpp), so this check cannot take the engine
// down; the walk is bounded by max_checked_instantiations per template.

#include "engine/skill_check.hpp"

#include "engine/skill_template.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace ks::engine {

namespace {

std::string values_text(const param_values& values) {
  std::string text;
  for (const auto& [name, value] : values)
    text += (text.empty() ? "" : ", ") + name + " = " + std::to_string(value);
  return text.empty() ? "no parameters" : text;
}

expected<void> check_instantiation(const skill& s, const skill_template& t,
                                   const param_values& values) {
  fact_map facts;
  for (const auto& [name, value] : values)
    facts[name] = value;
  for (const expression& c : t.constraints)
    if (auto held = c.holds(facts); !held)
      return fail(errc::invalid_input, "skill " + s.id + ", template " + t.name + ": constraint '" +
                                           c.text() + "' cannot be evaluated (" +
                                           values_text(values) + "): " + held.error().message());
  return {};
}

} // namespace

expected<void> check_skill_evaluates(const skill& s) {
  for (const expression& r : s.preconditions)
    if (auto held = r.holds({}); !held)
      return fail(errc::invalid_input, "skill " + s.id + ": requires '" + r.text() +
                                           "' cannot be evaluated: " + held.error().message());
  for (const skill_template& t : s.templates) {
    const std::vector<param_space>& space = t.params;
    if (auto ok = check_instantiation(s, t, defaults_of(space)); !ok)
      return ok;
    if (space.empty() || std::any_of(space.begin(), space.end(),
                                     [](const param_space& p) { return p.values.empty(); }))
      continue;
    // An odometer over the values, the last parameter fastest, as first_valid walks them.
    std::vector<size_t> index(space.size(), 0);
    for (int64_t walked = 0; walked < max_checked_instantiations; ++walked) {
      param_values values;
      for (size_t i = 0; i < space.size(); ++i)
        values[space[i].name] = space[i].values[index[i]];
      if (auto ok = check_instantiation(s, t, values); !ok)
        return ok;
      size_t i = space.size();
      bool wrapped = true;
      while (i > 0 && wrapped) {
        --i;
        wrapped = ++index[i] == space[i].values.size();
        if (wrapped)
          index[i] = 0;
      }
      if (wrapped)
        break;
    }
  }
  return {};
}

} // namespace ks::engine
