// Reads a graph task's `views`, `nodes` and `main` (docs/tasks.md, "Graph tasks") in three
// passes, because a view may be of an intermediate that a node declares and a node may read a
// view: first every node's outputs (the intermediates and which node writes each graph
// output), then the views in order (each of a tensor or of an earlier view, its layout over the
// tensor under it resolved as it is read), then every node's inputs, which must be defined
// before the node: a graph input, an output of an earlier node, or a view whose tensor is one
// of those. Then each node whose parts are well-formed is checked by its family exactly as a
// manifest of that family would be, with its sources pointing into the graph's manifest and
// each message naming the node. Like the rest of the loader, every problem is recorded and the
// reading goes on.

#include "engine/graph_manifest.hpp"

#include "config/spelling.hpp"
#include "config/toml_source.hpp"
#include "engine/family_reference.hpp"
#include "engine/graph_reference.hpp"
#include "engine/op_family.hpp"
#include "engine/skill_template.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace ks::engine::manifest_detail {

namespace {

namespace fs = std::filesystem;

using config::closest;
using config::describe;
using config::position;
using config::position_of;

constexpr std::string_view graph_keys[] = {"views", "nodes", "main"};
constexpr std::string_view view_keys[] = {"name", "of", "shape", "permute", "flip", "narrow"};
constexpr std::string_view view_kinds[] = {"shape", "permute", "flip", "narrow"};
constexpr std::string_view node_keys[] = {"name", "family", "inputs", "outputs", "params"};
constexpr std::string_view intermediate_keys[] = {"name", "dtype", "shape"};

/// A node written after every other: a graph output nothing writes.
constexpr int64_t never = std::numeric_limits<int64_t>::max();

/// What a name of the graph is.
enum class name_kind { input, output, intermediate, view };

/// One name of the graph's tensor namespace.
struct named {
  name_kind kind = name_kind::input;
  tensor_spec spec;
  position at;             ///< where it was declared
  int64_t written_by = -1; ///< the node that writes it (-1: a graph input; never: nothing)
  std::string root;        ///< for a view: the tensor under it
  size_t view = 0;         ///< for a view: its index in graph_spec::views
  bool read = false;       ///< some node reads it, directly or through a view
  std::string label;       ///< how messages name its declaration ("inputs[0]")
};

/// A node's parts as the first pass reads them.
struct node_parts {
  const toml::table* table = nullptr;
  std::string label; ///< "nodes[1]"
  std::string name;
  std::string family;
  bool family_ok = false;
  std::vector<std::pair<std::string, position>> inputs;
  const toml::node* inputs_node = nullptr;
  std::vector<std::string> outputs;
  family_sources sources;
  std::map<std::string, param_value> params;
  bool well_formed = true; ///< nothing wrong that the family's check would repeat
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t e : shape)
    text += (text.empty() ? "" : ", ") + std::to_string(e);
  return "[" + text + "]";
}

class graph_reader {
public:
  graph_reader(manifest_checks& checks, const task& subject)
    : checks_(checks), subject_(subject), graph_(std::make_shared<graph_spec>()) {}

  std::shared_ptr<graph_spec> read(const toml::table& root) {
    declare_graph_tensors(root);
    views_ = root.get("views") ? root.get("views")->as_array() : nullptr;
    const toml::node* nodes = checks_.required(
        root, "nodes", "",
        "an array of tables: [[nodes]] name = ..., family = ..., inputs = [...], outputs = [...]");
    if (nodes != nullptr)
      read_node_declarations(*nodes);
    if (const toml::node* views = root.get("views"))
      read_views(*views);
    resolve_view_writes();
    for (size_t i = 0; i < parts_.size(); ++i)
      read_node_inputs(i);
    check_every_tensor_used();
    for (size_t i = 0; i < parts_.size(); ++i)
      check_node(i);
    choose_main(root);
    return graph_;
  }

private:
  // -- the tensor namespace ------------------------------------------------------------------

  void declare_graph_tensors(const toml::table& root) {
    auto declare = [&](const char* key, const std::vector<tensor_spec>& specs, name_kind kind) {
      const toml::array* array = root.get(key) ? root.get(key)->as_array() : nullptr;
      for (size_t i = 0; i < specs.size(); ++i) {
        named n;
        n.kind = kind;
        n.spec = specs[i];
        n.written_by = kind == name_kind::input ? -1 : never;
        n.label = std::string(key) + "[" + std::to_string(i) + "]";
        if (array != nullptr && i < array->size())
          n.at = position_of((*array)[i].source());
        names_.emplace(specs[i].name, std::move(n));
      }
    };
    declare("inputs", subject_.inputs, name_kind::input);
    declare("outputs", subject_.outputs, name_kind::output);
  }

  /// Reports `name` (at `at`, of `label`) when the graph already has it; returns whether new.
  bool unused_name(const std::string& name, const toml::node& at, const std::string& label) {
    auto it = names_.find(name);
    if (it == names_.end())
      return true;
    checks_.report(at, label + " '" + name + "' is already the name of " + it->second.label +
                           " (line " + std::to_string(it->second.at.line) +
                           "): tensors and views share one namespace");
    return false;
  }

  std::optional<std::string> identifier(const toml::table& table, const std::string& label,
                                        std::string_view what) {
    const toml::node* node = checks_.required(table, "name", label, what);
    if (node == nullptr)
      return std::nullopt;
    std::optional<std::string> text = checks_.string_of(*node, label + ".name");
    if (text && !is_identifier(*text)) {
      checks_.report(*node, label + ".name must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got " +
                                describe(*node));
      return std::nullopt;
    }
    return text;
  }

  // -- pass 1: nodes and what they write -----------------------------------------------------

  void read_node_declarations(const toml::node& node) {
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      checks_.wrong_type(node, "nodes", "an array of tables ([[nodes]])");
      return;
    }
    if (array->empty())
      checks_.report(node, "'nodes' must hold at least one node");
    std::map<std::string, std::string> node_names;
    for (size_t i = 0; i < array->size(); ++i) {
      std::string label = "nodes[" + std::to_string(i) + "]";
      const toml::table* table = (*array)[i].as_table();
      if (table == nullptr) {
        checks_.wrong_type((*array)[i], label, "a table ([[nodes]] name = ..., family = ...)");
        continue;
      }
      node_parts p;
      p.table = table;
      p.label = label;
      checks_.check_keys(*table, node_keys, label);
      if (auto name = identifier(*table, label, "an identifier such as \"scan\"")) {
        auto [it, inserted] = node_names.emplace(*name, label);
        if (!inserted)
          checks_.report(*table->get("name"),
                         label + ".name '" + *name + "' is already the name of " + it->second);
        p.name = *name;
      }
      p.well_formed = !p.name.empty();
      read_node_family(*table, p);
      read_node_outputs(*table, p, static_cast<int64_t>(parts_.size()));
      p.sources.params = position_of(table->source());
      if (const toml::node* params = table->get("params")) {
        size_t before = checks_.count();
        p.params = checks_.read_params(*params, label + ".params", p.sources);
        p.well_formed = p.well_formed && checks_.count() == before;
      }
      parts_.push_back(std::move(p));
    }
  }

  void read_node_family(const toml::table& table, node_parts& p) {
    const toml::node* node =
        checks_.required(table, "family", p.label, "a family of docs/tasks.md such as \"scan\"");
    std::optional<std::string> family =
        node ? checks_.string_of(*node, p.label + ".family") : std::nullopt;
    if (!family) {
      p.well_formed = false;
      return;
    }
    p.family = *family;
    p.family_ok = is_family(*family);
    if (p.family_ok)
      return;
    p.well_formed = false;
    std::vector<std::string_view> known = family_names();
    std::string message = p.label + ".family '" + *family + "' is ";
    if (*family == "graph")
      message += "not for a node: a node is one family op (" + config::joined(known) + ")";
    else if (auto guess = closest(*family, known))
      message += "none of docs/tasks.md's (did you mean '" + std::string(*guess) + "'?)";
    else
      message += "none of docs/tasks.md's (" + config::joined(known) + ")";
    checks_.report(*node, message);
  }

  void read_node_outputs(const toml::table& table, node_parts& p, int64_t index) {
    const toml::node* node = checks_.required(
        table, "outputs", p.label,
        "an array: a graph output's name, or a table { name, dtype, shape } for an intermediate");
    const toml::array* array = node ? node->as_array() : nullptr;
    if (array == nullptr) {
      if (node != nullptr)
        checks_.wrong_type(*node, p.label + ".outputs",
                           "an array of graph output names and intermediate tables");
      p.well_formed = false;
      return;
    }
    for (size_t k = 0; k < array->size(); ++k) {
      const toml::node& item = (*array)[k];
      std::string label = p.label + ".outputs[" + std::to_string(k) + "]";
      p.sources.output_shapes.push_back(position_of(item.source()));
      p.sources.output_types.push_back(position_of(item.source()));
      if (std::optional<std::string> name = item.value_exact<std::string>()) {
        // A name no output declares may be a view of one, which pass 2 has yet to read.
        auto it = names_.find(*name);
        if (it == names_.end() && mentions_view(*name))
          view_writes_.push_back({*name, &item, label, index});
        else
          p.well_formed = write_graph_output(*name, item, label, index) && p.well_formed;
        p.outputs.push_back(*name);
      } else if (const toml::table* declared = item.as_table()) {
        std::optional<tensor_spec> t = read_intermediate(*declared, label, p.sources);
        if (t && unused_name(t->name, *declared->get("name"), label + ".name")) {
          named n;
          n.kind = name_kind::intermediate;
          n.spec = *t;
          n.at = position_of(declared->source());
          n.written_by = index;
          n.label = label;
          names_.emplace(t->name, std::move(n));
          graph_->intermediates.push_back(*t);
          p.outputs.push_back(t->name);
        } else {
          p.well_formed = false;
        }
      } else {
        checks_.wrong_type(item, label,
                           "a graph output's name or a table { name = ..., dtype = ..., shape = "
                           "[...] } declaring an intermediate");
        p.well_formed = false;
      }
    }
  }

  /// Returns whether some table of the manifest's `views` array is named `name`.
  bool mentions_view(const std::string& name) const {
    if (views_ == nullptr)
      return false;
    return std::any_of(views_->begin(), views_->end(), [&name](const toml::node& v) {
      const toml::table* t = v.as_table();
      const toml::node* n = t ? t->get("name") : nullptr;
      return n != nullptr && n->value_exact<std::string>() == name;
    });
  }

  /// A node may write a graph output through a shape view of it (an alias with the shape the
  /// node's family wants, such as [b*h, s, d] for [b, h, s, d]): the output counts as written
  /// by that node, and so does every view of it.
  void resolve_view_writes() {
    for (const view_write& w : view_writes_) {
      auto it = names_.find(w.name);
      if (it == names_.end()) { // the view itself failed to read: its problem is reported
        parts_[static_cast<size_t>(w.index)].well_formed = false;
        continue;
      }
      const named& v = it->second;
      const graph_view& view = graph_->views[v.view];
      const named& root = names_.at(v.root);
      if (root.kind != name_kind::output || view.strided) {
        checks_.report(*w.at, w.label + " '" + w.name + "' is a view of " + root.label + " '" +
                                  v.root + "'" +
                                  (view.strided ? " with a permute, flip or narrow on the way"
                                                : "") +
                                  ": a node writes a graph output, an intermediate it declares, "
                                  "or a shape view of a graph output");
        parts_[static_cast<size_t>(w.index)].well_formed = false;
        continue;
      }
      if (!write_graph_output(v.root, *w.at, w.label + " (view '" + w.name + "')", w.index)) {
        parts_[static_cast<size_t>(w.index)].well_formed = false;
        continue;
      }
      for (auto& [name, n] : names_)
        if (n.kind == name_kind::view && n.root == v.root)
          n.written_by = w.index;
    }
  }

  bool write_graph_output(const std::string& name, const toml::node& at, const std::string& label,
                          int64_t index) {
    auto it = names_.find(name);
    if (it == names_.end() || it->second.kind != name_kind::output) {
      std::string message = label + " '" + name + "' ";
      if (it != names_.end())
        message += "is " + it->second.label + ", not a graph output: ";
      else
        message += "names no graph output: ";
      std::vector<std::string_view> outputs;
      for (const tensor_spec& t : subject_.outputs)
        outputs.push_back(t.name);
      if (auto guess = closest(name, outputs); guess && it == names_.end())
        message += "did you mean '" + std::string(*guess) + "'? Or ";
      checks_.report(at, message + "declare a new intermediate as a table { name = \"" + name +
                             "\", dtype = ..., shape = [...] }");
      return false;
    }
    if (it->second.written_by != never) {
      checks_.report(at, label + ": graph output '" + name + "' is already written by nodes[" +
                             std::to_string(it->second.written_by) +
                             "]: every graph output is written by exactly one node");
      return false;
    }
    it->second.written_by = index;
    return true;
  }

  std::optional<tensor_spec> read_intermediate(const toml::table& table, const std::string& label,
                                               family_sources& sources) {
    size_t before = checks_.count();
    checks_.check_keys(table, intermediate_keys, label);
    tensor_spec t;
    if (auto name = identifier(table, label, "an identifier such as \"t\""))
      t.name = *name;
    if (const toml::node* node =
            checks_.required(table, "dtype", label, "a string such as \"f32\"")) {
      sources.output_types.back() = position_of(node->source());
      t.type = checks_.read_dtype(*node, label);
    }
    if (const toml::node* node =
            checks_.required(table, "shape", label, "an array such as [4096, 1024]")) {
      sources.output_shapes.back() = position_of(node->source());
      t.shape = checks_.read_shape(*node, label + ".shape", t.type);
    }
    if (checks_.count() != before || t.name.empty())
      return std::nullopt;
    return t;
  }

  // -- pass 2: views -------------------------------------------------------------------------

  void read_views(const toml::node& node) {
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      checks_.wrong_type(node, "views", "an array of tables ([[views]])");
      return;
    }
    for (size_t i = 0; i < array->size(); ++i) {
      std::string label = "views[" + std::to_string(i) + "]";
      if (const toml::table* table = (*array)[i].as_table())
        read_view(*table, label);
      else
        checks_.wrong_type((*array)[i], label, "a table ([[views]] name = ..., of = ...)");
    }
  }

  void read_view(const toml::table& table, const std::string& label) {
    checks_.check_keys(table, view_keys, label);
    std::optional<std::string> name = identifier(table, label, "an identifier such as \"x_t\"");
    if (name && !unused_name(*name, *table.get("name"), label + ".name"))
      name.reset();
    const named* base = nullptr;
    if (const toml::node* of =
            checks_.required(table, "of", label, "the name of a tensor or of an earlier view")) {
      if (std::optional<std::string> text = checks_.string_of(*of, label + ".of")) {
        auto it = names_.find(*text);
        if (it != names_.end())
          base = &it->second;
        else
          checks_.report(*of, label + ".of '" + *text +
                                  "' names no tensor of the graph nor an earlier view");
      }
    }
    const toml::node* how = nullptr;
    std::string_view kind;
    for (std::string_view key : view_kinds)
      if (const toml::node* node = table.get(key)) {
        if (how != nullptr) {
          checks_.report(*node, label + " gives both '" + std::string(kind) + "' and '" +
                                    std::string(key) +
                                    "': a view is exactly one of shape, "
                                    "permute, flip, narrow");
          return;
        }
        how = node;
        kind = key;
      }
    if (how == nullptr) {
      checks_.report(table, label + " needs exactly one of shape = [...] (a reshape), permute = "
                                    "[...], flip = [...] (dims), narrow = [dim, start, length]");
      return;
    }
    if (!name || base == nullptr)
      return;
    graph_view v;
    v.name = *name;
    v.of = base->kind == name_kind::view ? graph_->views[base->view].name : base->spec.name;
    v.tensor.name = *name;
    v.tensor.type = base->spec.type;
    v.tensor.init = base->spec.init;
    v.tensor.low = base->spec.low;
    v.tensor.high = base->spec.high;
    // The layout of what it is of, over the tensor under both.
    std::vector<int64_t> shape = base->spec.shape;
    std::vector<int64_t> strides = contiguous_strides(shape);
    v.root = base->spec.name;
    if (base->kind == name_kind::view) {
      const graph_view& under = graph_->views[base->view];
      strides = under.strides;
      v.offset = under.offset;
      v.strided = under.strided;
      v.root = under.root;
    }
    std::string where = label + "." + std::string(kind);
    bool ok = kind == "shape" ? reshape(v, *how, where, shape, base->spec.name)
                              : strided(v, *how, where, kind, shape, strides);
    if (!ok)
      return;
    named n;
    n.kind = name_kind::view;
    n.spec = v.tensor;
    n.at = position_of(table.source());
    n.root = v.root;
    n.view = graph_->views.size();
    n.written_by = names_.at(v.root).written_by;
    n.label = label;
    graph_->views.push_back(std::move(v));
    names_.emplace(*name, std::move(n));
  }

  bool reshape(graph_view& v, const toml::node& how, const std::string& where,
               const std::vector<int64_t>& shape, const std::string& of) {
    size_t before = checks_.count();
    v.kind = view_kind::shape;
    v.args = checks_.read_shape(how, where, v.tensor.type);
    if (checks_.count() != before)
      return false;
    int64_t want = 1;
    int64_t have = 1;
    for (int64_t e : v.args)
      want *= e;
    for (int64_t e : shape)
      have *= e;
    if (want != have) {
      checks_.report(how, where + " " + shape_text(v.args) + " holds " + std::to_string(want) +
                              " elements, but '" + of + "' " + shape_text(shape) + " holds " +
                              std::to_string(have));
      return false;
    }
    if (v.strided) {
      checks_.report(how, where + ": '" + of +
                              "' is a permute, flip or narrow view, which is not contiguous: a "
                              "shape view may only be of a tensor or of another shape view "
                              "(reshape before the strided view, or let a node read it first)");
      return false;
    }
    v.tensor.shape = v.args;
    v.strides = contiguous_strides(v.args);
    return true;
  }

  /// Reads the dims of a permute or flip: integers in [-rank, rank), each once; normalized.
  std::optional<std::vector<int64_t>> dims_of(const toml::node& how, const std::string& where,
                                              size_t rank) {
    const toml::array* array = how.as_array();
    if (array == nullptr) {
      checks_.wrong_type(how, where, "an array of dims such as [1, 0]");
      return std::nullopt;
    }
    std::vector<int64_t> dims;
    bool ok = true;
    auto r = static_cast<int64_t>(rank);
    for (size_t i = 0; i < array->size(); ++i) {
      std::optional<int64_t> d = (*array)[i].value_exact<int64_t>();
      std::string item = where + "[" + std::to_string(i) + "]";
      if (!d || *d < -r || *d >= r) {
        checks_.report((*array)[i], item + " must be a dim of the " + std::to_string(rank) +
                                        "-d tensor it views (" + std::to_string(-r) + " to " +
                                        std::to_string(r - 1) + "), got " + describe((*array)[i]));
        ok = false;
        continue;
      }
      int64_t dim = *d < 0 ? *d + r : *d;
      if (std::find(dims.begin(), dims.end(), dim) != dims.end()) {
        checks_.report((*array)[i], item + " repeats dim " + std::to_string(dim));
        ok = false;
      }
      dims.push_back(dim);
    }
    if (!ok)
      return std::nullopt;
    return dims;
  }

  bool strided(graph_view& v, const toml::node& how, const std::string& where,
               std::string_view kind, std::vector<int64_t> shape, std::vector<int64_t> strides) {
    v.strided = true;
    if (kind == "narrow")
      return narrow(v, how, where, std::move(shape), std::move(strides));
    std::optional<std::vector<int64_t>> dims = dims_of(how, where, shape.size());
    if (!dims)
      return false;
    if (kind == "permute") {
      v.kind = view_kind::permute;
      if (dims->size() != shape.size()) {
        checks_.report(how, where + " must order all " + std::to_string(shape.size()) +
                                " dims of what it views, got " + std::to_string(dims->size()));
        return false;
      }
      v.tensor.shape.clear();
      v.strides.clear();
      for (int64_t d : *dims) {
        v.tensor.shape.push_back(shape[static_cast<size_t>(d)]);
        v.strides.push_back(strides[static_cast<size_t>(d)]);
      }
    } else {
      v.kind = view_kind::flip;
      if (dims->empty()) {
        checks_.report(how, where + " must name at least one dim");
        return false;
      }
      for (int64_t d : *dims) {
        auto at = static_cast<size_t>(d);
        v.offset += (shape[at] - 1) * strides[at];
        strides[at] = -strides[at];
      }
      v.tensor.shape = shape;
      v.strides = strides;
    }
    v.args = *dims;
    return true;
  }

  bool narrow(graph_view& v, const toml::node& how, const std::string& where,
              std::vector<int64_t> shape, std::vector<int64_t> strides) {
    v.kind = view_kind::narrow;
    const toml::array* array = how.as_array();
    std::vector<int64_t> args;
    if (array != nullptr && array->size() == 3)
      for (const toml::node& item : *array)
        if (std::optional<int64_t> value = item.value_exact<int64_t>())
          args.push_back(*value);
    if (args.size() != 3) {
      checks_.wrong_type(how, where, "an array of three integers [dim, start, length]");
      return false;
    }
    auto rank = static_cast<int64_t>(shape.size());
    if (args[0] < -rank || args[0] >= rank) {
      checks_.report(how, where + ": dim " + std::to_string(args[0]) + " is not a dim of the " +
                              std::to_string(rank) + "-d tensor it views");
      return false;
    }
    auto dim = static_cast<size_t>(args[0] < 0 ? args[0] + rank : args[0]);
    int64_t extent = shape[dim];
    int64_t start = args[1] < 0 ? args[1] + extent : args[1];
    if (start < 0 || start >= extent || args[2] < 1 || start + args[2] > extent) {
      checks_.report(how, where + ": [" + std::to_string(args[1]) + ", " + std::to_string(args[1]) +
                              " + " + std::to_string(args[2]) + ") does not lie within dim " +
                              std::to_string(dim) + " of extent " + std::to_string(extent) +
                              " (start in [-extent, extent), length >= 1)");
      return false;
    }
    v.args = {static_cast<int64_t>(dim), start, args[2]};
    v.offset += start * strides[dim];
    shape[dim] = args[2];
    v.tensor.shape = std::move(shape);
    v.strides = std::move(strides);
    return true;
  }

  // -- pass 3: what each node reads ----------------------------------------------------------

  void read_node_inputs(size_t i) {
    node_parts& p = parts_[i];
    const toml::node* node =
        checks_.required(*p.table, "inputs", p.label,
                         "an array of names: graph inputs, views, or outputs of earlier nodes");
    const toml::array* array = node ? node->as_array() : nullptr;
    if (array == nullptr) {
      if (node != nullptr)
        checks_.wrong_type(*node, p.label + ".inputs", "an array of tensor or view names");
      p.well_formed = false;
      return;
    }
    std::set<std::string> seen;
    for (size_t k = 0; k < array->size(); ++k) {
      const toml::node& item = (*array)[k];
      std::string label = p.label + ".inputs[" + std::to_string(k) + "]";
      p.sources.input_shapes.push_back(position_of(item.source()));
      p.sources.input_types.push_back(position_of(item.source()));
      std::optional<std::string> name = checks_.string_of(item, label);
      if (!name) {
        p.well_formed = false;
        continue;
      }
      if (!seen.insert(*name).second) {
        checks_.report(item, label + " reads '" + *name +
                                 "' again: a node reads each name once (for the same tensor "
                                 "twice, add a view of it with its own shape and name)");
        p.well_formed = false;
        continue;
      }
      p.well_formed = defined_before(*name, item, label, static_cast<int64_t>(i)) && p.well_formed;
      p.inputs.emplace_back(*name, position_of(item.source()));
    }
  }

  bool defined_before(const std::string& name, const toml::node& at, const std::string& label,
                      int64_t index) {
    auto it = names_.find(name);
    if (it == names_.end()) {
      std::vector<std::string_view> known;
      for (const auto& [n, entry] : names_)
        known.push_back(n);
      std::string message = label + " '" + name + "' names no tensor or view of the graph";
      if (auto guess = closest(name, known))
        message += " (did you mean '" + std::string(*guess) + "'?)";
      checks_.report(at, message);
      return false;
    }
    named& n = it->second;
    if (n.written_by >= index) {
      std::string what = n.kind == name_kind::view
                             ? "view '" + name + "' is of '" + n.root + "', which "
                             : "'" + name + "' ";
      std::string by = n.written_by == never ? "no node writes"
                       : n.written_by == index
                           ? "this node writes"
                           : "nodes[" + std::to_string(n.written_by) + "] writes";
      checks_.report(at, label + ": " + what + by +
                             ": a node reads graph inputs, views and outputs of EARLIER nodes "
                             "(nodes are in topological order)");
      return false;
    }
    n.read = true;
    if (n.kind == name_kind::view)
      names_.at(n.root).read = true;
    return true;
  }

  void check_every_tensor_used() {
    for (const auto& [name, n] : names_) {
      if (n.kind == name_kind::output && n.written_by == never)
        checks_.report(n.at, n.label + " '" + name +
                                 "' is written by no node: every graph output is written by "
                                 "exactly one node (nodes[i].outputs = [\"" +
                                 name + "\"])");
      if ((n.kind == name_kind::input || n.kind == name_kind::intermediate) && !n.read)
        checks_.report(n.at, n.label + " '" + name +
                                 "' is read by no node: every graph input and intermediate is "
                                 "read by some node, directly or through a view");
    }
  }

  // -- each node as a family task ------------------------------------------------------------

  tensor_spec spec_of(const std::string& name) const {
    const named& n = names_.at(name);
    tensor_spec t = n.spec;
    t.name = name;
    if (n.kind == name_kind::view) {
      const named& root = names_.at(n.root);
      t.init = root.spec.init;
      t.low = root.spec.low;
      t.high = root.spec.high;
    }
    return t;
  }

  void check_node(size_t i) {
    node_parts& p = parts_[i];
    graph_node node;
    node.name = p.name;
    for (const auto& [name, at] : p.inputs)
      node.inputs.push_back(name);
    node.outputs = p.outputs;
    task& op = node.op;
    op.name = subject_.name + "__" + p.name;
    op.family = p.family;
    op.about = "node '" + p.name + "' (" + p.family + ") of graph task '" + subject_.name + "'";
    op.params = p.params;
    op.tol = subject_.tol;
    op.tunables = subject_.tunables;
    if (p.well_formed) {
      for (const std::string& name : node.inputs)
        op.inputs.push_back(spec_of(name));
      for (const std::string& name : node.outputs)
        op.outputs.push_back(spec_of(name));
      family_analysis analysis = analyze_family(op, p.sources);
      for (family_problem& problem : analysis.problems)
        checks_.report(problem.at, p.label + " ('" + p.name + "'): " + problem.message);
      op.derived = std::move(analysis.derived);
      op.cost = analysis.cost;
      op.torch = std::move(analysis.torch);
    }
    graph_->nodes.push_back(std::move(node));
  }

  void choose_main(const toml::table& root) {
    graph_->main = default_main_node(graph_->nodes);
    const toml::node* main = root.get("main");
    if (main == nullptr)
      return;
    std::optional<std::string> name = checks_.string_of(*main, "main");
    if (!name)
      return;
    std::vector<std::string_view> known;
    for (size_t i = 0; i < graph_->nodes.size(); ++i) {
      known.push_back(graph_->nodes[i].name);
      if (graph_->nodes[i].name == *name) {
        graph_->main = i;
        return;
      }
    }
    std::string message = "main '" + *name + "' names no node";
    if (auto guess = closest(*name, known))
      message += " (did you mean '" + std::string(*guess) + "'?)";
    else if (!known.empty())
      message += " (the nodes: " + config::joined(known) + ")";
    checks_.report(*main, message);
  }

  manifest_checks& checks_;
  const task& subject_;
  std::shared_ptr<graph_spec> graph_;
  std::map<std::string, named> names_;
  std::vector<node_parts> parts_;
  /// A node output naming a view, resolved once the views are read.
  struct view_write {
    std::string name;
    const toml::node* at = nullptr;
    std::string label;
    int64_t index = 0; ///< the node's, in parts_
  };
  std::vector<view_write> view_writes_;
  const toml::array* views_ = nullptr; ///< the manifest's `views`, when an array
};

} // namespace

std::shared_ptr<graph_spec> read_graph(manifest_checks& checks, const toml::table& root,
                                       const task& subject) {
  return graph_reader(checks, subject).read(root);
}

void refuse_graph_keys(manifest_checks& checks, const toml::table& root,
                       const std::string& family) {
  for (std::string_view key : graph_keys)
    if (const toml::node* node = root.get(key))
      checks.report(node->source(), "'" + std::string(key) +
                                        "' is only for a graph task (family = \"graph\"), not "
                                        "for family '" +
                                        family + "'");
}

expected<void> finish_graph(task& subject, graph_spec& graph, const fs::path& families) {
  for (graph_node& node : graph.nodes) {
    task& op = node.op;
    op.manifest_path = subject.manifest_path;
    expected<std::string> source = render_family_reference(op, families);
    if (!source)
      return fail(source.error().code(), "node '" + node.name + "': " + source.error().message());
    std::error_code ec;
    op.reference_path =
        fs::absolute(reference_template(families, op.family), ec).lexically_normal();
    op.reference_source = std::move(*source);
    // A tunable applies to the nodes whose reference reads it (KS_TILE_X: matmul's only).
    std::erase_if(op.tunables, [&op](const auto& entry) {
      return !macro_default(op.reference_source, entry.first).has_value();
    });
  }
  expected<std::string> checks = render_family_partial(subject, families, "abi_checks");
  if (!checks)
    return tl::unexpected(checks.error());
  graph.checks_source = std::move(*checks);
  if (!subject.reference_path.empty())
    return {};
  subject.reference_path = subject.manifest_path;
  expected<std::string> composed = compose_graph(subject, {});
  if (!composed)
    return tl::unexpected(composed.error());
  subject.reference_source = std::move(*composed);
  return {};
}

} // namespace ks::engine::manifest_detail
