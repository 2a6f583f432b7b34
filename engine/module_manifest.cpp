// Reads a manifest's `module` table (docs/tasks.md, "The module of an imported task"): the
// PyTorch module a task was imported from. The engine runs no Python: it checks the table's
// form (its keys, their types, that the task inputs it names exist) and keeps it for
// tools/torch_baselines.py and `kernelskill import --verify`, which read it through
// `kernelskill task show --json`.

#include "config/spelling.hpp"
#include "config/toml_source.hpp"
#include "engine/graph_manifest.hpp"

#include <algorithm>
#include <cctype>

namespace ks::engine::manifest_detail {

namespace {

using config::closest;

constexpr std::string_view module_keys[] = {"file",      "sha256",     "source",  "entry", "init",
                                            "arguments", "parameters", "outputs", "eval"};
constexpr std::string_view argument_keys[] = {"input", "value", "dtype", "unused", "shape"};

bool is_sha256(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

class module_reader {
public:
  module_reader(manifest_checks& checks, const std::vector<tensor_spec>& inputs) : checks_(checks) {
    for (const tensor_spec& t : inputs)
      inputs_.push_back(t.name);
  }

  module_spec read(const toml::table& table) {
    module_spec m;
    checks_.check_keys(table, module_keys, "module");
    m.source = text(table, "source", required::yes, "a string: the text of the module's file");
    m.entry =
        text(table, "entry", required::yes, "a string: the nn.Module class or function in source");
    m.file = text(table, "file", required::no, "");
    m.init = text(table, "init", required::no, "");
    m.sha256 = text(table, "sha256", required::no, "");
    if (!m.sha256.empty() && !is_sha256(m.sha256))
      checks_.report(*table.get("sha256"),
                     "module.sha256 must be 64 hexadecimal digits (the SHA-256 of source)");
    if (const toml::node* node = table.get("arguments"))
      m.arguments = arguments(*node);
    if (const toml::node* node = table.get("parameters"))
      m.parameters = parameters(*node);
    if (const toml::node* node = table.get("outputs"))
      if (std::optional<int64_t> count = checks_.integer_of(*node, "module.outputs")) {
        if (*count < 1)
          checks_.report(*node, "module.outputs must be at least 1, got " + std::to_string(*count));
        m.outputs = *count;
      }
    if (const toml::node* node = table.get("eval")) {
      if (const auto* flag = node->as_boolean())
        m.eval = flag->get();
      else
        checks_.wrong_type(*node, "module.eval",
                           "true or false: whether the module runs in eval mode");
    }
    return m;
  }

private:
  enum class required { yes, no };

  std::string text(const toml::table& table, std::string_view key, required need,
                   std::string_view what) {
    const toml::node* node =
        need == required::yes ? checks_.required(table, key, "module", what) : table.get(key);
    if (node == nullptr)
      return {};
    return checks_.string_of(*node, "module." + std::string(key)).value_or("");
  }

  /// Checks that `name`, at `node`, is an input of the task.
  void task_input(const std::string& name, const toml::node& node, const std::string& label) {
    if (std::find(inputs_.begin(), inputs_.end(), name) != inputs_.end())
      return;
    std::vector<std::string_view> known(inputs_.begin(), inputs_.end());
    std::string message = label + " '" + name + "' is no input of the task";
    if (auto guess = closest(name, known))
      message += " (did you mean '" + std::string(*guess) + "'?)";
    checks_.report(node, message);
  }

  std::vector<module_argument> arguments(const toml::node& node) {
    std::vector<module_argument> out;
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      checks_.wrong_type(node, "module.arguments",
                         "an array of tables: { input = \"x\" } or { value = \"3.14\" }");
      return out;
    }
    for (size_t i = 0; i < array->size(); ++i) {
      std::string label = "module.arguments[" + std::to_string(i) + "]";
      const toml::table* table = (*array)[i].as_table();
      if (table == nullptr) {
        checks_.wrong_type((*array)[i], label,
                           "a table: { input = \"x\" } or { value = \"3.14\" }");
        continue;
      }
      checks_.check_keys(*table, argument_keys, label);
      module_argument a;
      const toml::node* input = table->get("input");
      const toml::node* value = table->get("value");
      const toml::node* unused = table->get("unused");
      if ((input != nullptr) + (value != nullptr) + (unused != nullptr) != 1) {
        checks_.report(*table, label + " needs exactly one of input = \"NAME\" (a task input), "
                                       "value = \"LITERAL\" (a Python literal) and unused = "
                                       "\"DTYPE\" with shape = [...] (a tensor never read)");
        continue;
      }
      if (const toml::node* shape = table->get("shape"); shape != nullptr && unused == nullptr)
        checks_.report(*shape, label + ".shape is only for an unused tensor");
      if (unused != nullptr) {
        unused_tensor(*table, *unused, label, a);
        out.push_back(std::move(a));
        continue;
      }
      if (input != nullptr) {
        a.input = checks_.string_of(*input, label + ".input").value_or("");
        if (!a.input.empty())
          task_input(a.input, *input, label + ".input");
      } else {
        a.value = checks_.string_of(*value, label + ".value").value_or("");
      }
      if (const toml::node* dtype = table->get("dtype")) {
        if (input == nullptr)
          checks_.report(*dtype, label + ".dtype is only for an input (the dtype forward wants "
                                         "it as, such as \"bool\" for a u8 mask)");
        else if (auto text = checks_.string_of(*dtype, label + ".dtype")) {
          if (!parse_dtype(*text))
            checks_.report(*dtype, label + ".dtype '" + *text + "' is no dtype (f32, bool, ...)");
          a.dtype = *text;
        }
      }
      out.push_back(std::move(a));
    }
    return out;
  }

  /// Reads { unused = "f32", shape = [4, 8] } into `a`.
  void unused_tensor(const toml::table& table, const toml::node& unused, const std::string& label,
                     module_argument& a) {
    if (auto text = checks_.string_of(unused, label + ".unused")) {
      if (!parse_dtype(*text))
        checks_.report(unused, label + ".unused '" + *text + "' is no dtype (f32, bool, ...)");
      a.unused = *text;
    }
    const toml::node* shape = table.get("shape");
    const toml::array* dims = shape != nullptr ? shape->as_array() : nullptr;
    if (dims == nullptr) {
      checks_.report(shape != nullptr ? *shape : static_cast<const toml::node&>(table),
                     label + " needs shape = [...] beside unused: the tensor's extents");
      return;
    }
    for (size_t d = 0; d < dims->size(); ++d) {
      std::optional<int64_t> extent =
          checks_.integer_of((*dims)[d], label + ".shape[" + std::to_string(d) + "]");
      if (extent && *extent < 0)
        checks_.report((*dims)[d], label + ".shape[" + std::to_string(d) + "] must be 0 or more");
      a.shape.push_back(extent.value_or(0));
    }
  }

  std::map<std::string, std::string> parameters(const toml::node& node) {
    std::map<std::string, std::string> out;
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      checks_.wrong_type(node, "module.parameters",
                         "a table: { \"gn.weight\" = \"gn_weight\", ... } (module parameter or "
                         "buffer -> task input)");
      return out;
    }
    for (auto&& [key, value] : *table) {
      std::string label = "module.parameters.\"" + std::string(key.str()) + "\"";
      if (std::optional<std::string> name = checks_.string_of(value, label)) {
        task_input(*name, value, label);
        out.emplace(std::string(key.str()), *name);
      }
    }
    return out;
  }

  manifest_checks& checks_;
  std::vector<std::string> inputs_;
};

} // namespace

module_spec read_module(manifest_checks& checks, const toml::node& node,
                        const std::vector<tensor_spec>& inputs) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    checks.wrong_type(node, "module",
                      "a table: [module] source = ..., entry = ..., arguments = [...]");
    return {};
  }
  return module_reader(checks, inputs).read(*table);
}

} // namespace ks::engine::manifest_detail
