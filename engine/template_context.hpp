#pragma once

// Private to engine/ (it includes kainjow's Mustache): what every template sees of a task, a
// skill's (skill_template.cpp) and a family's reference (family_reference.cpp) alike, and
// strict rendering. The task's values sit under `task` (op_family.hpp's task_scalars and
// tensor_records): integers and reals as text, strings as they are, booleans as Mustache
// booleans (sections: {{#task.keepdim}}...{{/task.keepdim}}), lists of integers and the tensor
// lists as lists of records. A boolean or a list in a {{variable}} tag renders as nothing in
// Mustache, so render_strict reports it, as it reports a name that nothing provides.

#include "engine/error.hpp"
#include "engine/task.hpp"

#include <kainjow/mustache.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine::template_detail {

namespace mustache = kainjow::mustache;

/// Puts `value` at the dotted `name` ("task.cols") inside `root`.
void put_dotted(mustache::data& root, std::string_view name, mustache::data value);

/// Names whose values are booleans or lists: the {{variable}} tags render_strict refuses.
struct silent_names {
  std::set<std::string> top;    ///< full names ("task.keepdim", "task.inputs")
  std::set<std::string> fields; ///< fields of list records ("broadcast"), inside sections only
};

/// Puts the values of `subject` under `root`'s "task"; returns its booleans and lists.
silent_names put_task(mustache::data& root, const task& subject);

/// What rendering a template found.
struct render_outcome {
  std::string text;                ///< the rendered text, when the rest is empty
  std::string syntax_error;        ///< Mustache's message, if the template does not parse
  std::set<std::string> missing;   ///< names nothing provides
  std::vector<std::string> silent; ///< booleans or lists used as {{variables}}
};

/// Renders `text` with `root` (HTML escaping off): the outcome says what went wrong, if
/// anything; a variable tag naming one of `silent` is reported, not rendered as nothing.
render_outcome render_strict(const std::string& text, const mustache::data& root,
                             const silent_names& silent);

/// Returns `outcome`'s problems as one sentence for a message: "uses {{a}}, {{b}}, which
/// nothing provides; uses {{task.keepdim}} as a value, but it is a boolean or a list (write
/// {{#task.keepdim}}...{{/task.keepdim}})". Empty when there are none.
std::string problems_of(const render_outcome& outcome, const std::string& provided_by);

} // namespace ks::engine::template_detail
