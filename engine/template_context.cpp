#include "engine/template_context.hpp"

#include "base/text.hpp"
#include "engine/bounded_context.hpp"
#include "engine/expression.hpp"
#include "engine/op_family.hpp"

#include <cctype>

namespace ks::engine::template_detail {

namespace {

bool is_silent(const param_value& value) {
  return std::holds_alternative<bool>(value) || std::holds_alternative<std::vector<int64_t>>(value);
}

mustache::data data_of(const param_value& value) {
  if (const auto* i = std::get_if<int64_t>(&value))
    return mustache::data(std::to_string(*i));
  if (const auto* d = std::get_if<double>(&value))
    return mustache::data(to_text(fact_value(*d)));
  if (const auto* b = std::get_if<bool>(&value))
    return mustache::data(*b);
  if (const auto* s = std::get_if<std::string>(&value))
    return mustache::data(*s);
  mustache::data list(mustache::data::type::list);
  const auto& values = std::get<std::vector<int64_t>>(value);
  for (size_t i = 0; i < values.size(); ++i) {
    mustache::data item(mustache::data::type::object);
    // "at", not "index": inside a tensor's record, {{index}} stays the tensor's.
    item.set("at", mustache::data(std::to_string(i)));
    item.set("value", mustache::data(std::to_string(values[i])));
    list.push_back(item);
  }
  return list;
}

mustache::data list_of(const std::vector<template_record>& records, silent_names& silent) {
  mustache::data list(mustache::data::type::list);
  for (const template_record& record : records) {
    mustache::data item(mustache::data::type::object);
    for (const auto& [key, value] : record) {
      item.set(key, data_of(value));
      if (is_silent(value))
        silent.fields.insert(key);
    }
    list.push_back(item);
  }
  return list;
}

/// Returns the variable tags of `text` that name a boolean or a list. Stops at a tag that
/// changes the delimiters: past it, tags are not {{...}}.
std::vector<std::string> silent_variables(std::string_view text, const silent_names& silent) {
  std::vector<std::string> found;
  int depth = 0;
  size_t pos = 0;
  for (;;) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos)
      return found;
    bool triple = text.substr(open, 3) == "{{{";
    size_t body = open + (triple ? 3 : 2);
    size_t close = text.find(triple ? "}}}" : "}}", body);
    if (close == std::string_view::npos)
      return found;
    std::string_view tag = base::trim(text.substr(body, close - body));
    pos = close + (triple ? 3 : 2);
    if (tag.empty())
      continue;
    switch (tag.front()) {
    case '=':
      return found;
    case '#':
    case '^':
      ++depth;
      continue;
    case '/':
      --depth;
      continue;
    case '!':
    case '>':
      continue;
    case '&':
      tag = base::trim(tag.substr(1));
      break;
    default:
      break;
    }
    std::string name(tag);
    if (silent.top.count(name) > 0 || (depth > 0 && silent.fields.count(name) > 0))
      found.push_back(name);
  }
}

} // namespace

void put_dotted(mustache::data& root, std::string_view name, mustache::data value) {
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) {
    root.set(std::string(name), std::move(value));
    return;
  }
  std::string head(name.substr(0, dot));
  mustache::data child =
      root.get(head) != nullptr ? *root.get(head) : mustache::data(mustache::data::type::object);
  put_dotted(child, name.substr(dot + 1), std::move(value));
  root.set(head, std::move(child));
}

silent_names put_task(mustache::data& root, const task& subject) {
  silent_names silent;
  mustache::data object(mustache::data::type::object);
  for (const auto& [name, value] : task_scalars(subject)) {
    object.set(name, data_of(value));
    if (is_silent(value))
      silent.top.insert("task." + name);
  }
  for (std::string_view which : {"inputs", "outputs"}) {
    object.set(std::string(which), list_of(tensor_records(subject, which), silent));
    silent.top.insert("task." + std::string(which));
  }
  for (const auto& [name, records] : subject.derived.lists)
    if (name != "inputs" && name != "outputs") {
      object.set(name, list_of(records, silent));
      silent.top.insert("task." + name);
    }
  root.set("task", object);
  return silent;
}

render_outcome render_strict(const std::string& text, const mustache::data& root,
                             const silent_names& silent) {
  render_outcome outcome;
  if (auto problem = template_limit_error(text)) {
    outcome.syntax_error = problem->second + " at " + std::to_string(problem->first);
    return outcome;
  }
  mustache::mustache tmpl(text);
  if (!tmpl.is_valid()) {
    outcome.syntax_error = tmpl.error_message();
    return outcome;
  }
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  render_budget budget(text.size());
  bounded_context context(&root, budget);
  try {
    outcome.text = tmpl.render(context);
  } catch (const render_limit_reached& limit) {
    outcome.syntax_error = limit.what;
    return outcome;
  }
  if (!tmpl.is_valid())
    outcome.syntax_error = tmpl.error_message();
  outcome.missing = context.missing();
  outcome.silent = silent_variables(text, silent);
  return outcome;
}

std::string problems_of(const render_outcome& outcome, const std::string& provided_by) {
  std::string text;
  if (!outcome.syntax_error.empty())
    text = outcome.syntax_error;
  if (!outcome.missing.empty()) {
    std::string names;
    for (const std::string& name : outcome.missing)
      names += (names.empty() ? "{{" : ", {{") + name + "}}";
    text += (text.empty() ? "" : "; ") + std::string("uses ") + names + ", which " + provided_by;
  }
  for (const std::string& name : outcome.silent)
    text += (text.empty() ? "" : "; ") + std::string("uses {{") + name +
            "}} as a value, but it is a boolean or a list, which renders as nothing (write {{#" +
            name + "}}...{{/" + name + "}})";
  return text;
}

} // namespace ks::engine::template_detail
