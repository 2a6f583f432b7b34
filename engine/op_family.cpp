// The family table, the param reader every family uses, and what templates see of any task.
// A family is one function over a family_reader (op_family_reader.hpp): it reads the params it
// knows, each with its type, default and range, checks the tensors the op needs, and sets the
// derived values, the cost and the torch expression. Reading a param marks it known, so what
// is left afterwards is a param no family reads, a typo most often: it is reported with the
// closest known name. Problems never stop the reading; the manifest loader reports them all.

#include "engine/op_family.hpp"

#include "config/spelling.hpp"
#include "engine/op_family_reader.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <utility>

namespace ks::engine {

namespace {

using family_detail::family_reader;

struct family_entry {
  std::string_view name;
  void (*analyze)(family_reader&);
};

// Sorted by name.
constexpr std::array<family_entry, 12> families{{
    {"channel_norm", family_detail::analyze_channel_norm},
    {"concat", family_detail::analyze_concat},
    {"conv", family_detail::analyze_conv},
    {"elementwise", family_detail::analyze_elementwise},
    {"gather", family_detail::analyze_gather},
    {"matmul", family_detail::analyze_matmul},
    {"matvec", family_detail::analyze_matvec},
    {"norm", family_detail::analyze_norm},
    {"pool", family_detail::analyze_pool},
    {"reduce", family_detail::analyze_reduce},
    {"scan", family_detail::analyze_scan},
    {"softmax", family_detail::analyze_softmax},
}};

std::string value_text(const param_value& value) {
  if (const auto* i = std::get_if<int64_t>(&value))
    return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value))
    return family_detail::python_float(*d);
  if (const auto* b = std::get_if<bool>(&value))
    return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&value))
    return "\"" + *s + "\"";
  return family_detail::shape_text(std::get<std::vector<int64_t>>(value));
}

} // namespace

namespace family_detail {

const char* abi_name(dtype t) {
  switch (t) {
  case dtype::f32:
    return "KS_F32";
  case dtype::f16:
    return "KS_F16";
  case dtype::bf16:
    return "KS_BF16";
  case dtype::f64:
    return "KS_F64";
  case dtype::i32:
    return "KS_I32";
  case dtype::i64:
    return "KS_I64";
  case dtype::u8:
    return "KS_U8";
  }
  return "KS_F32";
}

const char* c_type(dtype t) {
  switch (t) {
  case dtype::f32:
    return "float";
  case dtype::f16:
    return "__half";
  case dtype::bf16:
    return "__nv_bfloat16";
  case dtype::f64:
    return "double";
  case dtype::i32:
    return "int32_t";
  case dtype::i64:
    return "int64_t";
  case dtype::u8:
    return "uint8_t";
  }
  return "float";
}

// -- family_reader: params ------------------------------------------------------------------

const param_value* family_reader::find(std::string_view name) {
  if (std::find(asked_.begin(), asked_.end(), name) == asked_.end())
    asked_.emplace_back(name);
  auto it = subject_.params.find(std::string(name));
  return it == subject_.params.end() ? nullptr : &it->second;
}

config::position family_reader::param_position(std::string_view name) const {
  auto it = sources_.param.find(std::string(name));
  return it == sources_.param.end() ? sources_.params : it->second;
}

std::string family_reader::kind_of(const param_value& value) const {
  const char* kind = std::holds_alternative<int64_t>(value)       ? "an integer"
                     : std::holds_alternative<double>(value)      ? "a float"
                     : std::holds_alternative<bool>(value)        ? "a boolean"
                     : std::holds_alternative<std::string>(value) ? "a string"
                                                                  : "an array";
  return std::string(kind) + " (" + value_text(value) + ")";
}

bool family_reader::has(std::string_view name) {
  return find(name) != nullptr;
}

std::optional<int64_t> family_reader::integer(std::string_view name,
                                              std::optional<int64_t> fallback) {
  const param_value* value = find(name);
  if (value == nullptr) {
    if (!fallback)
      at_params("family " + subject_.family + " needs param '" + std::string(name) +
                "' (an integer)");
    return fallback;
  }
  if (const auto* i = std::get_if<int64_t>(value))
    return *i;
  at_param(name, "params." + std::string(name) + " must be an integer, got " + kind_of(*value));
  return std::nullopt;
}

std::optional<double> family_reader::real(std::string_view name, std::optional<double> fallback) {
  const param_value* value = find(name);
  if (value == nullptr) {
    if (!fallback)
      at_params("family " + subject_.family + " needs param '" + std::string(name) +
                "' (a number)");
    return fallback;
  }
  std::optional<double> number;
  if (const auto* i = std::get_if<int64_t>(value))
    number = static_cast<double>(*i);
  else if (const auto* d = std::get_if<double>(value))
    number = *d;
  if (!number || !std::isfinite(*number)) {
    at_param(name,
             "params." + std::string(name) + " must be a finite number, got " + kind_of(*value));
    return std::nullopt;
  }
  return number;
}

bool family_reader::flag(std::string_view name, bool fallback) {
  const param_value* value = find(name);
  if (value == nullptr)
    return fallback;
  if (const auto* b = std::get_if<bool>(value))
    return *b;
  at_param(name, "params." + std::string(name) + " must be true or false, got " + kind_of(*value));
  return fallback;
}

std::optional<std::string> family_reader::choice(std::string_view name,
                                                 std::span<const std::string_view> choices,
                                                 std::optional<std::string_view> fallback) {
  const param_value* value = find(name);
  std::string list = config::joined(choices, "\"");
  if (value == nullptr) {
    if (!fallback)
      at_params("family " + subject_.family + " needs param '" + std::string(name) + "' (one of " +
                list + ")");
    return fallback ? std::optional<std::string>(*fallback) : std::nullopt;
  }
  const auto* text = std::get_if<std::string>(value);
  if (text == nullptr) {
    at_param(name, "params." + std::string(name) + " must be one of " + list + ", got " +
                       kind_of(*value));
    return std::nullopt;
  }
  if (std::find(choices.begin(), choices.end(), *text) != choices.end())
    return *text;
  std::string message = "unknown " + subject_.family + " " + std::string(name) + " '" + *text + "'";
  if (auto guess = config::closest(*text, choices))
    message += " (did you mean '" + std::string(*guess) + "'?)";
  at_param(name, message + "; valid: " + list);
  return std::nullopt;
}

std::optional<std::string> family_reader::text(std::string_view name) {
  const param_value* value = find(name);
  if (value == nullptr) {
    at_params("family " + subject_.family + " needs param '" + std::string(name) + "' (a string)");
    return std::nullopt;
  }
  if (const auto* text = std::get_if<std::string>(value))
    return *text;
  at_param(name, "params." + std::string(name) + " must be a string, got " + kind_of(*value));
  return std::nullopt;
}

std::optional<std::vector<int64_t>> family_reader::integers(std::string_view name, size_t most) {
  const param_value* value = find(name);
  if (value == nullptr)
    return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(value))
    return std::vector<int64_t>{*i};
  const auto* list = std::get_if<std::vector<int64_t>>(value);
  if (list == nullptr || list->empty() || list->size() > most) {
    std::string expected =
        most == 1 ? "an integer"
                  : "an integer or an array of 1 to " + std::to_string(most) + " integers";
    at_param(name,
             "params." + std::string(name) + " must be " + expected + ", got " + kind_of(*value));
    return std::nullopt;
  }
  return *list;
}

void family_reader::report_unknown_params() {
  std::vector<std::string_view> known(asked_.begin(), asked_.end());
  std::sort(known.begin(), known.end());
  for (const auto& [name, value] : subject_.params) {
    if (std::find(known.begin(), known.end(), name) != known.end())
      continue;
    std::string message = "unknown param '" + name + "' for family " + subject_.family;
    if (auto guess = config::closest(name, known))
      message += " (did you mean '" + std::string(*guess) + "'?)";
    else
      message += " (its params: " + config::joined(known) + ")";
    at_param(name, message);
  }
}

// -- family_reader: problems and tensors ---------------------------------------------------

void family_reader::at_param(std::string_view name, std::string message) {
  out_.problems.push_back({param_position(name), std::move(message)});
}

void family_reader::at_param_text(std::string_view name, size_t offset, std::string message) {
  config::position at = param_position(name);
  if (sources_.param.count(std::string(name)) > 0)
    at.column += static_cast<uint32_t>(offset + 1); // past the opening quote
  out_.problems.push_back({at, std::move(message)});
}

void family_reader::at_expression_error(std::string_view name, const engine::error& problem) {
  const std::string& message = problem.message();
  size_t colon = message.find(": ");
  size_t offset = std::stoul(message.substr(0, colon));
  at_param_text(name, offset, "params." + std::string(name) + ": " + message.substr(colon + 2));
}

void family_reader::at_params(std::string message) {
  out_.problems.push_back({sources_.params, std::move(message)});
}

void family_reader::at_shape(role which, size_t index, std::string message) {
  const auto& where = which == role::input ? sources_.input_shapes : sources_.output_shapes;
  out_.problems.push_back(
      {index < where.size() ? where[index] : sources_.params, std::move(message)});
}

void family_reader::at_type(role which, size_t index, std::string message) {
  const auto& where = which == role::input ? sources_.input_types : sources_.output_types;
  out_.problems.push_back(
      {index < where.size() ? where[index] : sources_.params, std::move(message)});
}

const tensor_spec& family_reader::tensor(role which, size_t index) const {
  return which == role::input ? subject_.inputs.at(index) : subject_.outputs.at(index);
}

bool family_reader::counts(size_t least_inputs, size_t most_inputs, size_t outputs,
                           std::string_view why) {
  bool ok = true;
  size_t have = subject_.inputs.size();
  if (have < least_inputs || have > most_inputs) {
    std::string wanted = least_inputs == most_inputs
                             ? std::to_string(least_inputs)
                             : std::to_string(least_inputs) + " to " + std::to_string(most_inputs);
    at_params("family " + subject_.family + " takes " + wanted + " input" +
              (most_inputs == 1 ? "" : "s") + " (" + std::string(why) + "), the task has " +
              std::to_string(have));
    ok = false;
  }
  if (subject_.outputs.size() != outputs) {
    at_params("family " + subject_.family + " writes " + std::to_string(outputs) + " output" +
              (outputs == 1 ? "" : "s") + ", the task has " +
              std::to_string(subject_.outputs.size()));
    ok = false;
  }
  return ok;
}

void family_reader::require_type(role which, size_t first, dtype type, size_t end) {
  const auto& tensors = which == role::input ? subject_.inputs : subject_.outputs;
  const char* label = which == role::input ? "inputs" : "outputs";
  for (size_t i = first; i < std::min(end, tensors.size()); ++i)
    if (tensors[i].type != type)
      at_type(which, i,
              std::string(label) + "[" + std::to_string(i) + "] ('" + tensors[i].name +
                  "') must be " + to_string(type) + " for family " + subject_.family + ", got " +
                  to_string(tensors[i].type));
}

bool family_reader::require_shape(role which, size_t index, const std::vector<int64_t>& shape,
                                  const std::string& why) {
  const tensor_spec& t = tensor(which, index);
  if (t.shape == shape)
    return true;
  const char* label = which == role::input ? "inputs" : "outputs";
  at_shape(which, index,
           std::string(label) + "[" + std::to_string(index) + "] ('" + t.name + "') has shape " +
               shape_text(t.shape) + ", but " + why + " gives " + shape_text(shape));
  return false;
}

void family_reader::set_op_flags(std::span<const std::string_view> choices,
                                 const std::string& chosen) {
  for (std::string_view c : choices)
    set("op_" + std::string(c), c == chosen);
}

// -- helpers ------------------------------------------------------------------------------

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return text + "]";
}

int64_t product(std::span<const int64_t> extents) {
  int64_t p = 1;
  for (int64_t e : extents)
    p *= e;
  return p;
}

std::string python_float(double value) {
  std::array<char, 64> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string text(buffer.data(), ec == std::errc{} ? end : buffer.data());
  // to_chars writes 1e-05; Python reads 1e-5 the same and people write it so.
  size_t e = text.find('e');
  if (e != std::string::npos) {
    size_t digits = e + 1 + ((text[e + 1] == '-' || text[e + 1] == '+') ? 1 : 0);
    while (digits + 1 < text.size() && text[digits] == '0')
      text.erase(digits, 1);
    if (text[e + 1] == '+')
      text.erase(e + 1, 1);
  } else if (text.find('.') == std::string::npos && text.find_first_of("in") == std::string::npos) {
    text += ".0";
  }
  return text;
}

std::string python_bool(bool value) {
  return value ? "True" : "False";
}

void set_cost(family_reader& r, double flops) {
  double bytes = 0;
  for (const tensor_spec& t : r.subject().inputs)
    bytes += static_cast<double>(t.bytes());
  for (const tensor_spec& t : r.subject().outputs)
    bytes += static_cast<double>(t.bytes());
  r.out().cost = task_cost{flops, bytes};
}

} // namespace family_detail

std::vector<std::string_view> family_names() {
  std::vector<std::string_view> names;
  for (const family_entry& f : families)
    names.push_back(f.name);
  return names;
}

bool is_family(std::string_view family) {
  return std::any_of(families.begin(), families.end(),
                     [&](const family_entry& f) { return f.name == family; });
}

family_analysis analyze_family(const task& subject, const family_sources& sources) {
  family_analysis out;
  family_reader reader(subject, sources, out);
  for (const family_entry& f : families)
    if (f.name == subject.family)
      f.analyze(reader);
  reader.report_unknown_params();
  return out;
}

std::map<std::string, param_value> task_scalars(const task& subject) {
  std::map<std::string, param_value> values;
  values["name"] = subject.name;
  values["family"] = subject.family;
  values["inputs"] = static_cast<int64_t>(subject.inputs.size());
  values["outputs"] = static_cast<int64_t>(subject.outputs.size());
  // Templates see task.inputs and task.outputs as lists; these are the counts there.
  values["input_count"] = static_cast<int64_t>(subject.inputs.size());
  values["output_count"] = static_cast<int64_t>(subject.outputs.size());
  if (!subject.inputs.empty()) {
    values["dtype"] = std::string(to_string(subject.inputs.front().type));
    values["numel_in"] = subject.inputs.front().numel();
    values["rank_in"] = static_cast<int64_t>(subject.inputs.front().shape.size());
  }
  if (!subject.outputs.empty()) {
    values["numel"] = subject.outputs.front().numel();
    values["numel_out"] = subject.outputs.front().numel();
  }
  for (const auto* tensors : {&subject.inputs, &subject.outputs})
    for (const tensor_spec& t : *tensors) {
      values[t.name + "_numel"] = t.numel();
      values[t.name + "_rank"] = static_cast<int64_t>(t.shape.size());
    }
  for (const auto& [name, value] : subject.params)
    values[name] = value;
  for (const auto& [name, value] : subject.derived.scalars)
    values[name] = value;
  return values;
}

std::vector<template_record> tensor_records(const task& subject, std::string_view which) {
  const std::vector<tensor_spec>& tensors = which == "inputs" ? subject.inputs : subject.outputs;
  auto derived = subject.derived.lists.find(std::string(which));
  std::vector<template_record> records;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const tensor_spec& t = tensors[i];
    template_record r;
    r["name"] = t.name;
    r["index"] = static_cast<int64_t>(i);
    r["numel"] = t.numel();
    r["rank"] = static_cast<int64_t>(t.shape.size());
    r["dtype"] = std::string(to_string(t.type));
    r["ctype"] = std::string(family_detail::c_type(t.type));
    r["abi_dtype"] = std::string(family_detail::abi_name(t.type));
    r["shape"] = family_detail::shape_text(t.shape);
    r["extents"] = t.shape;
    if (derived != subject.derived.lists.end() && i < derived->second.size())
      for (const auto& [key, value] : derived->second[i])
        r[key] = value;
    records.push_back(std::move(r));
  }
  return records;
}

} // namespace ks::engine
