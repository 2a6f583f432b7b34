// Loads task manifests (the format is in task_manifest.hpp) and checks them the way mold
// checks its input: every check records a problem with the source position toml++ gives the
// offending node and goes on, so one run shows the author everything that is wrong; only
// then does loading fail, once, with all of them in source order. A syntax error is the
// exception: without a document there is nothing further to check.
//
// Positions: a problem with a value points at the value; an unknown key at the key; a missing
// key at the table that lacks it (1:1 for the document itself). Labels name the node by its
// path from the root ("inputs[0].shape[1]"), so a message makes sense without the file open.

#include "engine/task_manifest.hpp"

#include "base/text.hpp"
#include "config/spelling.hpp"
#include "config/toml_source.hpp"
#include "engine/family_reference.hpp"
#include "engine/graph_manifest.hpp"
#include "engine/manifest_checks.hpp"
#include "engine/op_family.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace ks::engine {

namespace {

namespace fs = std::filesystem;

using config::describe;
using config::located;
using config::position;
using config::position_of;

using config::closest;
using manifest_detail::is_identifier;

std::string joined(std::span<const std::string_view> words) {
  return config::joined(words);
}

bool is_task_name(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_macro_name(std::string_view text) {
  auto upper = [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; };
  return !text.empty() && upper(text[0]) && std::all_of(text.begin(), text.end(), [&](char c) {
    return upper(c) || (c >= '0' && c <= '9');
  });
}

std::vector<std::string_view> all_init_spellings() {
  std::vector<std::string_view> all;
  for (init_kind kind : all_init_kinds)
    all.emplace_back(to_string(kind));
  return all;
}

/// Returns the smallest and largest value `type` holds, for integer types.
std::pair<int64_t, int64_t> integer_range(dtype type) {
  switch (type) {
  case dtype::i32:
    return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  case dtype::u8:
    return {0, 255};
  default:
    return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

constexpr std::string_view root_keys[] = {"name",     "family", "about",     "reference", "inputs",
                                          "outputs",  "params", "tolerance", "cost",      "torch",
                                          "tunables", "module", "views",     "nodes",     "main"};
constexpr std::string_view tensor_keys[] = {"name", "dtype", "shape", "init", "low", "high"};
constexpr std::string_view tolerance_keys[] = {"atol", "rtol", "norm_rel"};
constexpr std::string_view cost_keys[] = {"flops", "bytes"};

enum class tensor_role { input, output };

/// Which numbers an amount allows besides finite non-negative ones: zero or not.
enum class zero_allowed { yes, no };

/// Reads one parsed manifest into a task, recording every problem on the way.
class manifest_reader : public manifest_detail::manifest_checks {
public:
  /// Reads relative paths against `dir`, an absolute folder.
  explicit manifest_reader(fs::path dir) : dir_(std::move(dir)) {}

  /// Returns the task read from `root`; meaningful only when problems() is empty.
  task read(const toml::table& root) {
    task result;
    check_keys(root, root_keys, "");
    read_name_and_family(root, result);
    // A graph's reference is composed from its nodes' families' references.
    bool graph = result.family == "graph";
    bool family = is_family(result.family) || graph;
    if (const toml::node* node = root.get("about"))
      result.about = string_of(*node, "about").value_or("");
    read_reference_key(root, result, family);
    size_t problems_before = count();
    read_tensors_and_params(root, result);
    bool family_checkable = family && count() == problems_before;
    if (graph && root.get("params") != nullptr)
      report(*root.get("params"), "a graph task has no params of its own: each node has its own "
                                  "(nodes[i].params)");
    const toml::node* cost = read_options(root, result, family, graph);
    // The family's checks need well-formed tensors and params: after a problem there, they
    // would only repeat it in other words.
    if (family_checkable)
      derive(root, result, graph, cost != nullptr);
    return result;
  }

  /// Returns where the task's name is (of the document when it has none).
  position name_at() const noexcept { return name_at_; }

  /// Returns where the task's family is (of the document when it has none).
  position family_at() const noexcept { return family_at_; }

  /// Returns the graph read, for a graph task (null otherwise): the loader completes it.
  const std::shared_ptr<graph_spec>& graph() const noexcept { return graph_; }

private:
  void read_name_and_family(const toml::table& root, task& result) {
    name_at_ = position_of(root.source());
    if (const toml::node* node = required(root, "name", "", "a string matching [a-z0-9_]+")) {
      name_at_ = position_of(node->source());
      if (auto text = string_of(*node, "name")) {
        if (!is_task_name(*text))
          report(*node, "task name " + describe(*node) + " must match [a-z0-9_]+");
        result.name = *text;
      }
    }
    if (const toml::node* node = required(root, "family", "", "a string such as \"softmax\"")) {
      family_at_ = position_of(node->source());
      if (auto text = string_of(*node, "family")) {
        if (text->empty())
          report(*node, "'family' must not be empty");
        result.family = *text;
      }
    }
  }

  /// A family's reference is rendered from its template; any other task brings its own.
  void read_reference_key(const toml::table& root, task& result, bool family) {
    if (const toml::node* node = root.get("reference")) {
      result.reference_path = read_reference(*node);
    } else if (!result.family.empty() && !family) {
      auto guess = closest(result.family, family_names());
      report(root, "missing required key 'reference' (a string: the reference .cu, relative to "
                   "this file): family '" +
                       result.family + "' is none of docs/tasks.md's (" +
                       (guess ? "did you mean '" + std::string(*guess) + "'? " : "") +
                       config::joined(family_names()) + "), whose references are rendered");
    }
  }

  void read_tensors_and_params(const toml::table& root, task& result) {
    if (const toml::node* node = required(root, "inputs", "",
                                          "an array of tables: [ { name = ..., dtype = ..., "
                                          "shape = [...] } ]"))
      result.inputs = read_tensors(*node, "inputs", tensor_role::input);
    if (const toml::node* node = required(root, "outputs", "",
                                          "an array of tables: [ { name = ..., dtype = ..., "
                                          "shape = [...] } ]"))
      result.outputs = read_tensors(*node, "outputs", tensor_role::output);
    check_unique_tensor_names();
    sources_.params = position_of(root.source());
    if (const toml::node* node = root.get("params"))
      result.params = read_params(*node, "params", sources_);
  }

  /// Reads the optional keys (tolerance, cost, torch, tunables, module); returns the cost
  /// node (null when absent: a family derives it, any other task must give it).
  const toml::node* read_options(const toml::table& root, task& result, bool family, bool graph) {
    dtype first_output = result.outputs.empty() ? dtype::f32 : result.outputs.front().type;
    result.tol = default_tolerance(first_output);
    if (const toml::node* node = root.get("tolerance"))
      read_tolerance(*node, result.tol);
    const toml::node* cost =
        family ? root.get("cost")
               : required(root, "cost", "", "a table: { flops = ..., bytes = ... }");
    if (cost != nullptr)
      result.cost = read_cost(*cost);
    if (const toml::node* node = root.get("torch"))
      result.torch = string_of(*node, "torch").value_or("");
    if (const toml::node* node = root.get("tunables"))
      result.tunables = read_tunables(*node);
    if (const toml::node* node = root.get("module"))
      result.module = manifest_detail::read_module(*this, *node, result.inputs);
    if (!graph)
      manifest_detail::refuse_graph_keys(*this, root, result.family);
    return cost;
  }

  /// Derives what the family (or the graph of families) says: its checks, its facts, and its
  /// cost and torch expression where the manifest gives none.
  void derive(const toml::table& root, task& result, bool graph, bool cost_given) {
    if (graph) {
      size_t before = count();
      graph_ = manifest_detail::read_graph(*this, root, result);
      result.graph = graph_;
      if (count() == before && !cost_given)
        result.cost = graph_cost(*graph_, result.inputs, result.outputs);
      if (count() == before && root.get("torch") == nullptr)
        result.torch = graph_torch(*graph_, result.inputs, result.outputs);
      return;
    }
    family_analysis analysis = analyze_family(result, sources_);
    for (family_problem& problem : analysis.problems)
      report(problem.at, std::move(problem.message));
    result.derived = std::move(analysis.derived);
    if (!cost_given)
      result.cost = analysis.cost;
    if (root.get("torch") == nullptr)
      result.torch = std::move(analysis.torch);
  }

  /// Returns a finite number >= 0 (> 0 unless `zero` is allowed), integers accepted.
  std::optional<double> amount_of(const toml::node& node, const std::string& label,
                                  zero_allowed zero) {
    bool positive = zero == zero_allowed::no;
    std::optional<double> value;
    if (auto integer = node.value_exact<int64_t>())
      value = static_cast<double>(*integer);
    else if (auto real = node.value_exact<double>())
      value = *real;
    if (!value) {
      wrong_type(node, label, "a number");
      return std::nullopt;
    }
    if (!std::isfinite(*value) || *value < 0 || (positive && *value == 0)) {
      report(node,
             label + (positive ? " must be a finite number > 0" : " must be a finite number >= 0") +
                 ", got " + describe(node));
      return std::nullopt;
    }
    return value;
  }

  // -- parts of a manifest -------------------------------------------------------------------

  fs::path read_reference(const toml::node& node) {
    std::optional<std::string> text = string_of(node, "reference");
    if (!text)
      return {};
    if (text->empty()) {
      report(node, "'reference' must not be empty");
      return {};
    }
    fs::path path = (dir_ / *text).lexically_normal();
    std::error_code ec;
    fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status))
      report(node, "reference file '" + *text + "' not found (looked in " +
                       path.parent_path().string() + ")");
    else if (fs::is_directory(status))
      report(node, "reference '" + *text + "' is a folder, not a file (in " +
                       path.parent_path().string() + ")");
    return path;
  }

  std::vector<tensor_spec> read_tensors(const toml::node& node, const std::string& label,
                                        tensor_role role) {
    std::vector<tensor_spec> tensors;
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      wrong_type(node, label, "an array of tables");
      return tensors;
    }
    if (array->empty())
      report(node, "'" + label + "' must hold at least one tensor");
    for (size_t i = 0; i < array->size(); ++i) {
      std::string item = label + "[" + std::to_string(i) + "]";
      if (const toml::table* table = (*array)[i].as_table())
        tensors.push_back(read_tensor(*table, item, role));
      else
        wrong_type((*array)[i], item, "a table: { name = ..., dtype = ..., shape = [...] }");
    }
    return tensors;
  }

  tensor_spec read_tensor(const toml::table& table, const std::string& label, tensor_role role) {
    tensor_spec spec;
    check_keys(table, tensor_keys, label);
    if (const toml::node* node = required(table, "name", label, "a string such as \"x\"")) {
      if (auto text = string_of(*node, child(label, "name"))) {
        if (!is_identifier(*text))
          report(*node, label + ".name must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got " +
                            describe(*node));
        else
          tensor_names_.push_back({*text, label, node->source()});
        spec.name = *text;
      }
    }
    bool input = role == tensor_role::input;
    (input ? sources_.input_types : sources_.output_types).push_back(position_of(table.source()));
    (input ? sources_.input_shapes : sources_.output_shapes).push_back(position_of(table.source()));
    if (const toml::node* node = required(table, "dtype", label, "a string such as \"f32\"")) {
      (input ? sources_.input_types : sources_.output_types).back() = position_of(node->source());
      spec.type = read_dtype(*node, label);
    }
    if (const toml::node* node = required(table, "shape", label, "an array such as [4096, 1024]")) {
      (input ? sources_.input_shapes : sources_.output_shapes).back() = position_of(node->source());
      spec.shape = read_shape(*node, child(label, "shape"), spec.type);
    }
    if (role == tensor_role::output) {
      for (std::string_view key : {"init", "low", "high"})
        if (const toml::node* node = table.get(key))
          report(*node, label + "." + std::string(key) +
                            " is not allowed: outputs are written by the kernel, not drawn");
      return spec;
    }
    if (const toml::node* node = table.get("init"))
      spec.init = read_init(*node, label);
    read_range(table, label, spec);
    return spec;
  }

  init_kind read_init(const toml::node& node, const std::string& label) {
    std::optional<std::string> text = string_of(node, child(label, "init"));
    if (!text)
      return init_kind::normal;
    if (std::optional<init_kind> kind = parse_init_kind(*text))
      return *kind;
    std::vector<std::string_view> known = all_init_spellings();
    std::string message = "unknown init '" + *text + "' for " + label;
    if (auto guess = closest(*text, known))
      message += " (did you mean '" + std::string(*guess) + "'?)";
    report(node, message + "; valid inits: " + joined(known));
    return init_kind::normal;
  }

  void read_range(const toml::table& table, const std::string& label, tensor_spec& spec) {
    const toml::node* low = table.get("low");
    const toml::node* high = table.get("high");
    if (spec.init != init_kind::randint) {
      for (const toml::node* node : {low, high})
        if (node != nullptr)
          report(*node, label + "." + (node == low ? "low" : "high") +
                            " is only used with init = \"randint\"");
      return;
    }
    const char* what = "an integer: init = \"randint\" draws from [low, high)";
    low = required(table, "low", label, what);
    high = required(table, "high", label, what);
    std::optional<int64_t> low_value = low ? integer_of(*low, child(label, "low")) : std::nullopt;
    std::optional<int64_t> high_value =
        high ? integer_of(*high, child(label, "high")) : std::nullopt;
    if (!low_value || !high_value)
      return;
    spec.low = *low_value;
    spec.high = *high_value;
    if (spec.low >= spec.high) {
      report(*high, label + ".high must be greater than low (" + std::to_string(spec.low) +
                        "), got " + std::to_string(spec.high));
      return;
    }
    if (!is_floating(spec.type)) {
      auto [min, max] = integer_range(spec.type);
      if (spec.low < min || spec.high - 1 > max)
        report(*low, label + " draws from [" + std::to_string(spec.low) + ", " +
                         std::to_string(spec.high) + "), which does not fit " +
                         to_string(spec.type) + " ([" + std::to_string(min) + ", " +
                         std::to_string(max) + "])");
    }
  }

  void check_unique_tensor_names() {
    std::map<std::string, const tensor_name*> first;
    for (const tensor_name& entry : tensor_names_) {
      auto [it, inserted] = first.emplace(entry.name, &entry);
      if (!inserted)
        report(entry.source, "duplicate tensor name '" + entry.name + "' in " + entry.label +
                                 " (first used by " + it->second->label + " at " +
                                 std::to_string(position_of(it->second->source).line) + ":" +
                                 std::to_string(position_of(it->second->source).column) + ")");
    }
  }

  void read_tolerance(const toml::node& node, tolerance& tol) {
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      wrong_type(node, "tolerance", "a table: { atol = ..., rtol = ..., norm_rel = ... }");
      return;
    }
    check_keys(*table, tolerance_keys, "tolerance");
    for (auto [key, field] : {std::pair{"atol", &tol.atol}, std::pair{"rtol", &tol.rtol},
                              std::pair{"norm_rel", &tol.norm_rel}})
      if (const toml::node* value = table->get(key))
        if (auto amount = amount_of(*value, std::string("tolerance.") + key, zero_allowed::yes))
          *field = *amount;
  }

  task_cost read_cost(const toml::node& node) {
    task_cost cost;
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      wrong_type(node, "cost", "a table: { flops = ..., bytes = ... }");
      return cost;
    }
    check_keys(*table, cost_keys, "cost");
    if (const toml::node* value =
            required(*table, "flops", "cost", "a number: useful floating-point operations"))
      cost.flops = amount_of(*value, "cost.flops", zero_allowed::yes).value_or(0);
    if (const toml::node* value =
            required(*table, "bytes", "cost", "a number: fewest bytes moved through memory"))
      cost.bytes = amount_of(*value, "cost.bytes", zero_allowed::no).value_or(0);
    return cost;
  }

  std::map<std::string, std::vector<int64_t>> read_tunables(const toml::node& node) {
    std::map<std::string, std::vector<int64_t>> tunables;
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      wrong_type(node, "tunables", "a table: { KS_BLOCK_THREADS = [128, 256, 512], ... }");
      return tunables;
    }
    for (auto&& [key, value] : *table) {
      std::string name(key.str());
      std::string label = "tunables." + name;
      if (!is_macro_name(name))
        report(key.source(), "tunable '" + name + "' must be a macro name ([A-Z_][A-Z0-9_]*)");
      const toml::array* array = value.as_array();
      if (array == nullptr) {
        wrong_type(value, label, "an array of integers such as [128, 256, 512]");
        continue;
      }
      if (array->empty())
        report(value, "'" + label + "' must list at least one value");
      std::vector<int64_t> values;
      std::map<int64_t, size_t> first_index;
      for (size_t i = 0; i < array->size(); ++i) {
        const toml::node& item = (*array)[i];
        std::string item_label = label + "[" + std::to_string(i) + "]";
        std::optional<int64_t> number = item.value_exact<int64_t>();
        if (!number) {
          report(item, item_label + " must be an integer, got " + describe(item));
          continue;
        }
        auto [it, inserted] = first_index.emplace(*number, i);
        if (!inserted) {
          report(item, item_label + " repeats " + std::to_string(*number) + " (first at " + label +
                           "[" + std::to_string(it->second) + "])");
          continue;
        }
        values.push_back(*number);
      }
      tunables.emplace(std::move(name), std::move(values));
    }
    return tunables;
  }

  /// Remembers where a tensor name was given, to report duplicates.
  struct tensor_name {
    std::string name;
    std::string label;
    toml::source_region source;
  };

  fs::path dir_;
  position name_at_;
  position family_at_;
  family_sources sources_;
  std::vector<tensor_name> tensor_names_;
  std::shared_ptr<graph_spec> graph_;
};

/// A loaded task and where its name was written, for the suite's duplicate check.
struct loaded_task {
  task value;
  position name_at;
};

expected<loaded_task> load(const fs::path& path) {
  std::string file = path.string();
  std::error_code ec;
  // Bounded: a suite's folder may hold anything named *.toml (a FIFO, a link to /dev/zero).
  expected<std::string> text = base::read_file(path, config::max_toml_bytes, "task manifest");
  if (!text)
    return tl::unexpected(text.error());

  auto parsed = config::parse_toml(*text, file);
  if (!parsed)
    return fail(errc::invalid_input, parsed.error().message());
  toml::table root = std::move(*parsed);

  fs::path manifest = fs::absolute(path, ec);
  if (ec)
    manifest = path;
  manifest = manifest.lexically_normal();
  manifest_reader reader(manifest.parent_path());
  task result = reader.read(root);
  std::vector<std::pair<position, std::string>> problems = reader.problems();
  if (!problems.empty()) {
    std::string message;
    for (const auto& [at, line] : problems)
      message.append(message.empty() ? "" : "\n").append(located(file, at, line));
    return fail(errc::invalid_input, std::move(message));
  }
  result.manifest_path = manifest;
  if (reader.graph() != nullptr) {
    expected<void> done =
        manifest_detail::finish_graph(result, *reader.graph(), default_families_dir());
    if (!done)
      return fail(errc::invalid_input, located(file, reader.family_at(),
                                               "cannot compose the reference of graph task " +
                                                   result.name + ": " + done.error().message()));
  } else if (result.reference_path.empty()) {
    fs::path families = default_families_dir();
    expected<std::string> source = render_family_reference(result, families);
    if (!source)
      return fail(errc::invalid_input,
                  located(file, reader.family_at(),
                          "cannot render the reference of family " + result.family + ": " +
                              source.error().message()));
    result.reference_path =
        fs::absolute(reference_template(families, result.family), ec).lexically_normal();
    result.reference_source = std::move(*source);
  }
  return loaded_task{std::move(result), reader.name_at()};
}

} // namespace

expected<task> load_task_manifest(const std::filesystem::path& path) {
  expected<loaded_task> loaded = load(path);
  if (!loaded)
    return tl::unexpected(loaded.error());
  return std::move(loaded->value);
}

expected<std::vector<task>> load_task_suite(const std::filesystem::path& dir_or_file) {
  std::error_code ec;
  fs::file_status status = fs::status(dir_or_file, ec);
  if (!fs::exists(status))
    return fail(errc::not_found, dir_or_file.string() + ": task suite not found");
  std::vector<fs::path> files;
  if (fs::is_directory(status)) {
    for (fs::directory_iterator it(dir_or_file, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".toml" && !it->is_directory())
        files.push_back(it->path());
    if (ec)
      return fail(errc::io, dir_or_file.string() + ": cannot list task suite: " + ec.message());
    if (files.empty())
      return fail(errc::not_found,
                  dir_or_file.string() + ": no task manifests (*.toml) in this folder");
    std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
      return a.filename().string() < b.filename().string();
    });
  } else {
    files.push_back(dir_or_file);
  }

  std::vector<task> tasks;
  std::optional<errc> first_code;
  std::string messages;
  std::map<std::string, std::string> first_definition; // task name -> FILE:LINE:COL
  for (const fs::path& file : files) {
    expected<loaded_task> loaded = load(file);
    if (!loaded) {
      first_code = first_code.value_or(loaded.error().code());
      messages.append(messages.empty() ? "" : "\n").append(loaded.error().message());
      continue;
    }
    std::string where = located(file.string(), loaded->name_at, "");
    where.resize(where.size() - 2); // drop the ": " that introduces a message
    auto [it, inserted] = first_definition.emplace(loaded->value.name, where);
    if (!inserted) {
      first_code = first_code.value_or(errc::invalid_input);
      messages.append(messages.empty() ? "" : "\n")
          .append(where + ": duplicate task name '" + loaded->value.name + "' (first defined at " +
                  it->second + ")");
      continue;
    }
    tasks.push_back(std::move(loaded->value));
  }
  if (first_code)
    return fail(*first_code, std::move(messages));
  return tasks;
}

} // namespace ks::engine
