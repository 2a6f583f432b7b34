#include "engine/manifest_checks.hpp"

#include "config/spelling.hpp"
#include "config/toml_source.hpp"

#include <algorithm>

namespace ks::engine::manifest_detail {

namespace {

using config::closest;
using config::describe;
using config::position_of;
using config::type_name;

std::string joined(std::span<const std::string_view> words) {
  return config::joined(words);
}

std::string dtype_choices() {
  std::string text;
  for (dtype type : all_dtypes) {
    std::vector<std::string_view> spellings = spellings_of(type);
    text.append(text.empty() ? "" : ", ").append(spellings.front());
    if (spellings.size() > 1)
      text.append(" (").append(joined(std::span(spellings).subspan(1))).append(")");
  }
  return text;
}

std::vector<std::string_view> all_dtype_spellings() {
  std::vector<std::string_view> all;
  for (dtype type : all_dtypes)
    for (std::string_view spelling : spellings_of(type))
      all.push_back(spelling);
  return all;
}

/// Returns `node` as a list of integers when it is a non-empty array of integers.
std::optional<std::vector<int64_t>> integer_list(const toml::node& node) {
  const toml::array* array = node.as_array();
  if (array == nullptr || array->empty())
    return std::nullopt;
  std::vector<int64_t> list;
  for (const toml::node& item : *array) {
    std::optional<int64_t> value = item.value_exact<int64_t>();
    if (!value)
      return std::nullopt;
    list.push_back(*value);
  }
  return list;
}

} // namespace

bool is_identifier(std::string_view text) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  return !text.empty() && letter(text[0]) && std::all_of(text.begin(), text.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9');
  });
}

// -- recording problems ----------------------------------------------------------------------

void manifest_checks::report(config::position at, std::string message) {
  problems_.emplace_back(at, std::move(message));
}

void manifest_checks::report(const toml::source_region& at, std::string message) {
  report(position_of(at), std::move(message));
}

void manifest_checks::report(const toml::node& at, std::string message) {
  report(at.source(), std::move(message));
}

void manifest_checks::wrong_type(const toml::node& node, const std::string& label,
                                 std::string_view expected) {
  report(node, "'" + label + "' must be " + std::string(expected) + ", got " + type_name(node));
}

std::vector<std::pair<config::position, std::string>> manifest_checks::problems() const {
  auto sorted = problems_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first.line, a.first.column) < std::pair(b.first.line, b.first.column);
  });
  return sorted;
}

// -- generic checks --------------------------------------------------------------------------

std::string manifest_checks::child(const std::string& where, std::string_view key) {
  return where.empty() ? std::string(key) : where + "." + std::string(key);
}

std::string manifest_checks::in(const std::string& where) {
  return where.empty() ? "" : " in " + where;
}

void manifest_checks::check_keys(const toml::table& table, std::span<const std::string_view> known,
                                 const std::string& where) {
  for (auto&& [key, node] : table) {
    std::string_view word = key.str();
    if (std::find(known.begin(), known.end(), word) != known.end())
      continue;
    std::string message = "unknown key '" + std::string(word) + "'" + in(where);
    if (auto guess = closest(word, known))
      message += " (did you mean '" + std::string(*guess) + "'?)";
    else
      message += " (expected one of: " + joined(known) + ")";
    report(key.source(), std::move(message));
  }
}

const toml::node* manifest_checks::required(const toml::table& table, std::string_view key,
                                            const std::string& where, std::string_view what) {
  if (const toml::node* node = table.get(key))
    return node;
  report(table, "missing required key '" + std::string(key) + "'" + in(where) + " (" +
                    std::string(what) + ")");
  return nullptr;
}

std::optional<std::string> manifest_checks::string_of(const toml::node& node,
                                                      const std::string& label) {
  if (auto value = node.value_exact<std::string>())
    return value;
  wrong_type(node, label, "a string");
  return std::nullopt;
}

std::optional<int64_t> manifest_checks::integer_of(const toml::node& node,
                                                   const std::string& label) {
  if (auto value = node.value_exact<int64_t>())
    return value;
  wrong_type(node, label, "an integer");
  return std::nullopt;
}

// -- parts of a manifest ---------------------------------------------------------------------

dtype manifest_checks::read_dtype(const toml::node& node, const std::string& label) {
  std::optional<std::string> text = string_of(node, child(label, "dtype"));
  if (!text)
    return dtype::f32;
  if (std::optional<dtype> type = parse_dtype(*text))
    return *type;
  std::string message = "unknown dtype '" + *text + "' for " + label;
  std::vector<std::string_view> known = all_dtype_spellings();
  if (auto guess = closest(*text, known))
    message += " (did you mean '" + std::string(*guess) + "'?)";
  report(node, message + "; valid dtypes: " + dtype_choices());
  return dtype::f32;
}

std::vector<int64_t> manifest_checks::read_shape(const toml::node& node, const std::string& label,
                                                 dtype type) {
  std::vector<int64_t> shape;
  const toml::array* array = node.as_array();
  if (array == nullptr) {
    wrong_type(node, label, "an array of positive integers ([] for a scalar)");
    return shape;
  }
  if (array->size() > max_dims)
    report(node, label + " has " + std::to_string(array->size()) + " dimensions; at most " +
                     std::to_string(max_dims) + " fit a ks_tensor");
  bool valid = true;
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& extent = (*array)[i];
    std::optional<int64_t> value = extent.value_exact<int64_t>();
    if (!value || *value <= 0) {
      report(extent, label + "[" + std::to_string(i) + "] must be a positive integer, got " +
                         describe(extent));
      valid = false;
      continue;
    }
    shape.push_back(*value);
  }
  // The worker allocates numel() * size_of() bytes: a product past int64 would wrap.
  int64_t bytes = size_of(type);
  for (int64_t extent : shape)
    if (valid && __builtin_mul_overflow(bytes, extent, &bytes)) {
      report(node, label + " describes more than 2^63 bytes");
      valid = false;
    }
  return shape;
}

std::map<std::string, param_value> manifest_checks::read_params(const toml::node& node,
                                                                const std::string& label,
                                                                family_sources& sources) {
  std::map<std::string, param_value> params;
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    wrong_type(node, label, "a table: { KEY = VALUE, ... }");
    return params;
  }
  sources.params = position_of(node.source());
  for (auto&& [key, value] : *table) {
    std::string name(key.str());
    sources.param[name] = position_of(value.source());
    if (auto integer = value.value_exact<int64_t>())
      params.emplace(name, *integer);
    else if (auto real = value.value_exact<double>())
      params.emplace(name, *real);
    else if (auto flag = value.value_exact<bool>())
      params.emplace(name, *flag);
    else if (auto text = value.value_exact<std::string>())
      params.emplace(name, *text);
    else if (auto list = integer_list(value))
      params.emplace(name, *list);
    else
      wrong_type(value, label + "." + name,
                 "an integer, float, boolean, string or array of integers");
  }
  return params;
}

} // namespace ks::engine::manifest_detail
