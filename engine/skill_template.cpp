// Rendering a skill's template for a task. Templates are Mustache (kainjow's header-only
// implementation, Debian's libkainjow-mustache-dev), rendered strictly: Mustache renders a
// name it cannot find as nothing, which in CUDA would turn a typo into a kernel that compiles
// to something else, so the context records every name that resolves to nothing and the
// render fails naming it. Escaping is off (CUDA is not HTML): {{x}} and {{{x}}} are the same.
//
// A template's parameters are integers; the planner walks their spaces. The facts of a task
// (its manifest's params, what its op family derives from them, element counts; see
// op_family.hpp and template_context.hpp) come as `task.*`, so the same template serves every
// shape of its family; constraints between parameters and facts ("threads * items <= 4096",
// "task.cols % 4 == 0 || vec == 1") are the skill's own expressions and decide which
// instantiations exist for a task.

#include "engine/skill_template.hpp"

#include "base/text.hpp"
#include "engine/mustache_limits.hpp"
#include "engine/op_family.hpp"
#include "engine/template_context.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <system_error>

namespace ks::engine {

namespace mustache = kainjow::mustache;
using template_detail::put_dotted;

namespace {

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::optional<int64_t> parse_integer(std::string_view text) {
  text = base::trim(text);
  if (!text.empty() && text.front() == '+')
    text.remove_prefix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!text.empty() && ec == std::errc{} && end == text.data() + text.size())
    return value;
  return std::nullopt;
}

/// A preprocessor line split into its directive ("define"), its first word and the rest.
struct directive {
  std::string_view name;
  std::string_view word;
  std::string_view rest;
};

std::optional<directive> parse_directive(std::string_view line) {
  line = base::trim(line);
  if (line.empty() || line.front() != '#')
    return std::nullopt;
  line = base::trim(line.substr(1));
  auto split_word = [](std::string_view& text) {
    size_t length = 0;
    while (length < text.size() && is_identifier_char(text[length]))
      ++length;
    std::string_view word = text.substr(0, length);
    text = base::trim(text.substr(length));
    return word;
  };
  directive result;
  result.name = split_word(line);
  result.word = split_word(line);
  result.rest = line;
  return result;
}

std::string_view strip_comment(std::string_view line) {
  size_t at = std::min(line.find("//"), line.find("/*"));
  return base::trim(line.substr(0, at));
}

std::string plan_line(const skill& s, const skill_template& t, const param_values& values) {
  std::string line = s.id + "/" + t.name + "(";
  bool first = true;
  for (const auto& [name, value] : values) {
    line += (first ? "" : ",") + name + "=" + std::to_string(value);
    first = false;
  }
  return line + ")";
}

} // namespace

fact_map task_facts(const task& subject) {
  fact_map facts;
  for (const auto& [name, value] : task_scalars(subject)) {
    std::string key = "task." + name;
    if (const auto* i = std::get_if<int64_t>(&value))
      facts[key] = *i;
    else if (const auto* d = std::get_if<double>(&value))
      facts[key] = *d;
    else if (const auto* b = std::get_if<bool>(&value))
      facts[key] = int64_t{*b ? 1 : 0};
    else if (const auto* text = std::get_if<std::string>(&value))
      facts[key] = *text;
    // A list of integers (dims = [1, 2]) is for templates to walk, not for expressions.
  }
  return facts;
}

std::optional<int64_t> macro_default(std::string_view source, std::string_view name) {
  bool guarded = false;
  size_t start = 0;
  while (start < source.size()) {
    size_t end = source.find('\n', start);
    std::string_view line =
        source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? source.size() : end + 1;
    if (base::trim(line).empty())
      continue;
    std::optional<directive> d = parse_directive(line);
    if (guarded && d && d->name == "define" && d->word == name)
      if (std::optional<int64_t> value = parse_integer(strip_comment(d->rest)))
        return value;
    guarded = d && d->name == "ifndef" && d->word == name;
  }
  return std::nullopt;
}

expected<std::vector<param_space>> space_of(const skill_template& t, const task& subject,
                                            std::string_view reference_source) {
  if (!t.params_from_tunables)
    return t.params;
  std::vector<param_space> space;
  for (const auto& [name, values] : subject.tunables) {
    std::optional<int64_t> value = macro_default(reference_source, name);
    if (!value)
      return fail(errc::invalid_input,
                  "task '" + subject.name + "': the reference " + subject.reference_path.string() +
                      " has no overridable default for tunable " + name + " (#ifndef " + name +
                      " / #define " + name + " VALUE / #endif)");
    space.push_back(param_space{name, values, *value, std::nullopt});
  }
  return space;
}

param_values defaults_of(const std::vector<param_space>& space) {
  param_values values;
  for (const param_space& p : space)
    values[p.name] = p.default_value;
  return values;
}

std::vector<int64_t> by_nearness(const std::vector<int64_t>& values, const fact_value& wanted) {
  std::vector<int64_t> order;
  const auto* integer = std::get_if<int64_t>(&wanted);
  const auto* real = std::get_if<double>(&wanted);
  if (integer == nullptr && (real == nullptr || !std::isfinite(*real)))
    return order;
  // Distances without overflow: an integer's exactly (as unsigned), a real's in long double.
  auto distance = [&](int64_t v) -> long double {
    if (integer != nullptr)
      return static_cast<long double>(
          v >= *integer ? static_cast<uint64_t>(v) - static_cast<uint64_t>(*integer)
                        : static_cast<uint64_t>(*integer) - static_cast<uint64_t>(v));
    return std::fabs(static_cast<long double>(v) - static_cast<long double>(*real));
  };
  order = values;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    long double da = distance(a);
    long double db = distance(b);
    return da != db ? da < db : a < b;
  });
  return order;
}

param_values preferred_defaults(const skill_template& t, const std::vector<param_space>& space,
                                const task& subject) {
  param_values values = defaults_of(space);
  if (std::none_of(space.begin(), space.end(),
                   [](const param_space& p) { return p.prefer.has_value(); }))
    return values;
  fact_map facts = task_facts(subject);
  for (const param_space& p : space) {
    if (p.prefer) {
      // The loader lets a prefer name only the parameters before it: those are in `facts`.
      auto wanted = p.prefer->evaluate(facts);
      std::vector<int64_t> order =
          wanted && *wanted ? by_nearness(p.values, **wanted) : std::vector<int64_t>{};
      if (!order.empty()) {
        values[p.name] = order.front();
        for (int64_t candidate : order) {
          param_values trial = values;
          trial[p.name] = candidate;
          auto invalid = check_params(t, space, trial, subject);
          if (!invalid)
            break; // a constraint that cannot be evaluated: first_valid reports it
          if (!*invalid) {
            values[p.name] = candidate;
            break;
          }
        }
      }
    }
    facts[p.name] = values[p.name];
  }
  return values;
}

expected<std::optional<std::string>> check_params(const skill_template& t,
                                                  const std::vector<param_space>& space,
                                                  const param_values& values, const task& subject) {
  fact_map facts = task_facts(subject);
  for (const param_space& p : space) {
    auto it = values.find(p.name);
    if (it == values.end())
      return std::optional<std::string>("parameter " + p.name + " has no value");
    // A tunable may sit at a reference default outside its list: the walk starts there.
    bool listed = std::find(p.values.begin(), p.values.end(), it->second) != p.values.end();
    if (!listed && !(t.params_from_tunables && it->second == p.default_value))
      return std::optional<std::string>(p.name + " = " + std::to_string(it->second) +
                                        " is not one of its values");
    facts[p.name] = it->second;
  }
  // The init-capture: clang 14 (clang-tidy's) cannot capture a structured binding.
  for (const auto& [name, value] : values)
    if (std::none_of(space.begin(), space.end(),
                     [&wanted = name](const param_space& p) { return p.name == wanted; }))
      return std::optional<std::string>("'" + name + "' is not a parameter of template " + t.name);
  for (const expression& c : t.constraints) {
    auto held = c.holds(facts);
    if (!held)
      return tl::unexpected(held.error());
    if (*held == truth::unknown)
      return fail(errc::invalid_input, "template " + t.name + ": constraint '" + c.text() +
                                           "' names something neither a parameter nor a fact "
                                           "of task '" +
                                           subject.name + "'");
    if (*held == truth::no)
      return std::optional<std::string>("constraint '" + c.text() + "' does not hold");
  }
  return std::optional<std::string>{};
}

expected<std::optional<param_values>>
first_valid(const skill_template& t, const std::vector<param_space>& space, const task& subject) {
  param_values values = preferred_defaults(t, space, subject);
  auto ok = check_params(t, space, values, subject);
  if (!ok)
    return tl::unexpected(ok.error());
  if (!*ok)
    return std::optional<param_values>(values);
  if (param_values fixed = defaults_of(space); fixed != values) {
    auto fixed_ok = check_params(t, space, fixed, subject);
    if (!fixed_ok)
      return tl::unexpected(fixed_ok.error());
    if (!*fixed_ok)
      return std::optional<param_values>(fixed);
  }
  // An odometer over the values, the last parameter fastest; spaces are small (a few hundred).
  std::vector<size_t> index(space.size(), 0);
  if (std::any_of(space.begin(), space.end(),
                  [](const param_space& p) { return p.values.empty(); }))
    return std::optional<param_values>{};
  for (;;) {
    for (size_t i = 0; i < space.size(); ++i)
      values[space[i].name] = space[i].values[index[i]];
    auto valid = check_params(t, space, values, subject);
    if (!valid)
      return tl::unexpected(valid.error());
    if (!*valid)
      return std::optional<param_values>(values);
    size_t i = space.size();
    while (i > 0) {
      --i;
      if (++index[i] < space[i].values.size())
        break;
      index[i] = 0;
      if (i == 0)
        return std::optional<param_values>{};
    }
    if (space.empty())
      return std::optional<param_values>{};
  }
}

bool addresses_bottleneck(const skill& s, const diagnosis* diagnosis) noexcept {
  return diagnosis == nullptr || !diagnosis->diagnosed || s.addresses.empty() ||
         std::find(s.addresses.begin(), s.addresses.end(), diagnosis->bound) != s.addresses.end();
}

applicability check_applies(const skill& s, const task& subject, const diagnosis* diagnosis,
                            std::string_view reference_source, bool by_bottleneck) {
  if (!s.applies_to(subject.family))
    return {false, "not for family " + subject.family};
  if (by_bottleneck && !addresses_bottleneck(s, diagnosis))
    return {false,
            std::string("does not address a ") + to_string(diagnosis->bound) + "-bound kernel"};
  fact_map facts = task_facts(subject);
  if (diagnosis != nullptr)
    facts.merge(diagnosis->facts());
  for (const expression& r : s.preconditions) {
    auto held = r.holds(facts);
    if (!held)
      return {false, held.error().message()};
    if (*held == truth::no)
      return {false, "requires " + r.text()};
    // A diagnosis not made yet passes; a task fact missing means the task lacks that param.
    if (*held == truth::unknown)
      for (const std::string& name : r.names())
        if (name.rfind("task.", 0) == 0 && facts.count(name) == 0)
          return {false, "requires " + r.text() + ", but the task has no " + name.substr(5)};
  }
  for (const text_table& table : s.tables) {
    auto it = facts.find(table.key);
    if (it == facts.end() || table.entries.count(to_text(it->second)) == 0)
      return {false, "text table " + table.name + " has no entry for " + table.key +
                         (it == facts.end() ? "" : " = '" + to_text(it->second) + "'")};
  }
  if (s.templates.empty())
    return {true, {}};
  std::string last_reason = "no template";
  for (const skill_template& t : s.templates) {
    auto space = space_of(t, subject, reference_source);
    if (!space) {
      last_reason = space.error().message();
      continue;
    }
    if (t.params_from_tunables && space->empty()) {
      last_reason = "the task has no tunables";
      continue;
    }
    auto found = first_valid(t, *space, subject);
    if (found && *found)
      return {true, {}};
    last_reason = found ? "no instantiation of template " + t.name + " satisfies its constraints"
                        : found.error().message();
  }
  return {false, last_reason};
}

expected<std::string> render(const skill& s, const skill_template& t, const task& subject,
                             const param_values& values, std::string_view reference_source) {
  mustache::data root(mustache::data::type::object);
  mustache::data defines(mustache::data::type::list);
  for (const auto& [name, value] : values) {
    root.set(name, mustache::data(std::to_string(value)));
    mustache::data entry(mustache::data::type::object);
    entry.set("name", mustache::data(name));
    entry.set("value", mustache::data(std::to_string(value)));
    defines.push_back(entry);
    // Mustache treats any non-empty string as true: a 0/1 parameter is a section as flag.NAME.
    put_dotted(root, "flag." + name,
               mustache::data(value != 0 ? mustache::data::type::bool_true
                                         : mustache::data::type::bool_false));
  }
  root.set("defines", defines);
  template_detail::silent_names silent = template_detail::put_task(root, subject);
  fact_map facts = task_facts(subject);
  for (const text_table& table : s.tables) {
    auto key = facts.find(table.key);
    auto entry =
        key == facts.end() ? table.entries.end() : table.entries.find(to_text(key->second));
    if (entry == table.entries.end())
      return fail(errc::invalid_input, "skill " + s.id + ": text table " + table.name +
                                           " has no entry for task '" + subject.name + "'");
    put_dotted(root, "text." + table.name, mustache::data(entry->second));
  }
  root.set("reference", mustache::data(std::string(reference_source)));
  put_dotted(root, "skill.id", mustache::data(s.id));
  put_dotted(root, "skill.version", mustache::data(std::to_string(s.version)));
  put_dotted(root, "skill.template", mustache::data(t.name));
  root.set("plan", mustache::data(plan_line(s, t, values)));

  template_detail::render_outcome outcome = template_detail::render_strict(t.text, root, silent);
  if (!outcome.syntax_error.empty())
    return fail(errc::invalid_input,
                "skill " + s.id + ", template " + t.file + ": " + outcome.syntax_error);
  std::string problems = template_detail::problems_of(
      outcome, "no parameter, task fact or table provides for task '" + subject.name + "'");
  if (!problems.empty())
    return fail(errc::invalid_input, "skill " + s.id + ", template " + t.file + " " + problems);
  return std::move(outcome.text);
}

std::optional<std::pair<size_t, std::string>> template_syntax_error(const std::string& text) {
  if (auto problem = template_limit_error(text))
    return problem;
  mustache::mustache tmpl(text);
  if (tmpl.is_valid())
    return std::nullopt;
  // kainjow says "Unclosed tag at 123": the offset is the number after the last " at ".
  std::string message = tmpl.error_message();
  size_t offset = 0;
  size_t at = message.rfind(" at ");
  if (at != std::string::npos) {
    if (auto n = parse_integer(std::string_view(message).substr(at + 4)))
      offset = static_cast<size_t>(std::max<int64_t>(0, *n));
    message.resize(at);
  }
  return std::make_pair(offset, message);
}

} // namespace ks::engine
