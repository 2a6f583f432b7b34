#include "engine/task_warnings.hpp"

#include "base/text.hpp"
#include "config/toml_source.hpp"
#include "engine/op_family.hpp"

#include <cstdio>
#include <optional>

namespace ks::engine {

namespace {

std::string value_text(const param_value& value) {
  if (const auto* i = std::get_if<int64_t>(&value))
    return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", *d);
    return text;
  }
  if (const auto* b = std::get_if<bool>(&value))
    return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&value))
    return "\"" + *s + "\"";
  std::string list = "[";
  for (int64_t v : std::get<std::vector<int64_t>>(value))
    list += (list.size() > 1 ? ", " : "") + std::to_string(v);
  return list + "]";
}

// Returns the params as a manifest writes them: `op = "x", dim = 1`.
std::string params_text(const task& subject) {
  std::string text;
  for (const auto& [name, value] : subject.params)
    text += (text.empty() ? "" : ", ") + name + " = " + value_text(value);
  return text;
}

// The parsed manifest, for the positions of its parts; nullopt when it cannot be read again.
std::optional<toml::table> reread(const task& subject) {
  std::optional<std::string> text = base::read_text(subject.manifest_path, config::max_toml_bytes);
  if (!text)
    return std::nullopt;
  auto parsed = config::parse_toml(*text, subject.manifest_path.string());
  if (!parsed)
    return std::nullopt;
  return std::move(*parsed);
}

config::position position_at(const std::optional<toml::table>& root, std::string_view key) {
  if (!root)
    return {};
  const toml::node* node = root->get(key);
  return node != nullptr ? config::position_of(node->source()) : config::position{};
}

// Returns where the largest tensor is written: its table in `inputs` or `outputs`.
config::position largest_tensor_at(const task& subject, const std::optional<toml::table>& root) {
  std::string_view list = "inputs";
  size_t index = 0;
  int64_t largest = -1;
  for (auto [key, tensors] : {std::pair{std::string_view("inputs"), &subject.inputs},
                              std::pair{std::string_view("outputs"), &subject.outputs}})
    for (size_t i = 0; i < tensors->size(); ++i)
      if ((*tensors)[i].bytes() > largest) {
        largest = (*tensors)[i].bytes();
        list = key;
        index = i;
      }
  if (!root)
    return {};
  const toml::array* array = root->get_as<toml::array>(list);
  if (array == nullptr || index >= array->size())
    return position_at(root, list);
  return config::position_of((*array)[index].source());
}

std::optional<task_warning> hand_reference_beside_family(const task& subject,
                                                         const std::optional<toml::table>& root) {
  // A rendered reference carries its source; a hand-written one is only a path.
  if (!is_family(subject.family) || !subject.reference_source.empty())
    return std::nullopt;
  std::string written = subject.reference_path.filename().string();
  if (root)
    if (const auto* node = root->get_as<std::string>("reference"))
      written = node->get();
  std::string params = params_text(subject);
  std::string from = params.empty() ? "the family and the tensors' shapes"
                                    : "the family's params (" + params + ")";
  return task_warning{
      position_at(root, "reference"),
      "a hand-written reference (" + written + ") beside family " + subject.family +
          ": every candidate is judged against it, but the skills write their candidates "
          "from " +
          from +
          ", not from it; where the two compute different ops, every skill candidate fails "
          "verification. For an op the family states, remove `reference`: the reference is "
          "then rendered from the params (docs/tasks.md). For any other op, set family = "
          "\"custom\" and remove `params` (as `kernelskill task new NAME --family custom` "
          "writes it)"};
}

} // namespace

std::vector<task_warning> task_warnings(const task& subject, const gpu_memory& gpu) {
  std::optional<toml::table> root = reread(subject);
  std::vector<task_warning> out;
  if (auto w = hand_reference_beside_family(subject, root))
    out.push_back(std::move(*w));
  if (auto problem = memory_problem(subject, gpu))
    out.push_back({largest_tensor_at(subject, root), std::move(*problem)});
  return out;
}

std::string located(const std::string& file, const task_warning& warning) {
  return config::located(file, warning.at, "warning: " + warning.message);
}

} // namespace ks::engine
