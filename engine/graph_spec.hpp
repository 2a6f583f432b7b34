#pragma once

// A graph task's op (manifest `family = "graph"`, docs/tasks.md "Graph tasks"): a small DAG of
// family ops. Its tensors are the task's inputs and outputs (what ks_forward receives) and the
// intermediates its nodes declare; views name a reshape, permute, flip or narrow of a tensor
// or of an earlier view. Every node is a full family task of its own (`<task>__<node>`, its
// tensors those it reads and writes, with their shapes after views, its reference rendered),
// so a family's checks, templates and skills apply to it unchanged. The manifest loader builds
// the spec (graph_manifest.cpp); graph_reference.hpp composes the nodes' sources into one.

#include "engine/task.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// How a view reads the tensor or view it is of.
enum class view_kind : int32_t { shape = 0, permute = 1, flip = 2, narrow = 3 };

/// Returns the manifest key of `kind` ("shape", "permute", "flip", "narrow").
const char* to_string(view_kind kind) noexcept;

/// A named view of a graph tensor or of an earlier view.
struct graph_view {
  std::string name;
  std::string of; ///< the tensor or view it is of
  view_kind kind = view_kind::shape;
  /// shape: the extents; permute: the order of the dims; flip: the dims; narrow: dim, start,
  /// length. Dims and starts are normalized (>= 0).
  std::vector<int64_t> args;
  tensor_spec tensor; ///< the view as a node reads it: its name, the root's dtype, its shape
  std::string root;   ///< the graph tensor (input, output or intermediate) under every view
  int64_t offset = 0; ///< the index in root of the view's first element
  /// Per dim of tensor.shape, the distance in elements of root between neighbours (negative
  /// along a flipped dim).
  std::vector<int64_t> strides;
  /// Set when a permute, flip or narrow is on the way to root: the composed reference copies
  /// the view into a contiguous temporary; a shape view of a contiguous tensor is an alias.
  bool strided = false;
};

/// One op of the graph.
struct graph_node {
  std::string name;
  std::vector<std::string> inputs;  ///< graph inputs, views, or outputs of earlier nodes
  std::vector<std::string> outputs; ///< graph outputs or intermediates it declares
  task op; ///< the node as a task of its family (`<task>__<node>`), its reference rendered
};

/// The op of a graph task.
struct graph_spec {
  std::vector<graph_node> nodes;          ///< in topological order
  std::vector<graph_view> views;          ///< in the manifest's order
  std::vector<tensor_spec> intermediates; ///< the tensors the nodes declare, in order
  size_t main = 0;                        ///< the node the search works on
  /// families/common/abi_checks rendered for the graph task: the composed ks_forward checks
  /// its own arguments with it.
  std::string checks_source;

  /// Returns the view named `name`, or null.
  const graph_view* find_view(std::string_view name) const noexcept;

  /// Returns the intermediate named `name`, or null.
  const tensor_spec* find_intermediate(std::string_view name) const noexcept;
};

/// Returns the time `cost` takes at the nominal peaks that choose a graph's main node by
/// default (3e12 bytes/s, 6e13 flop/s), in seconds: the larger of the two.
double nominal_roofline_s(const task_cost& cost) noexcept;

/// Returns the index of the node with the largest nominal roofline time among those that are
/// not elementwise or concat (among all where every node is), the first on a tie; 0 for none.
size_t default_main_node(const std::vector<graph_node>& nodes) noexcept;

/// Returns the useful work of `g` over the task's `inputs` and `outputs`: the nodes' flops
/// summed; bytes of the fused minimum, every input read once and every output written once.
task_cost graph_cost(const graph_spec& g, const std::vector<tensor_spec>& inputs,
                     const std::vector<tensor_spec>& outputs);

/// The longest torch expression graph_torch writes, in bytes.
inline constexpr size_t max_graph_torch_bytes = 65536;

/// Returns the torch expression of `g` for a task with `inputs` and `outputs`: each node's torch
/// over its input names, every name of an intermediate, a view or an output (as a whole identifier)
/// replaced by its own expression in parentheses; a view is `.reshape(4096, 1)`,
/// `.permute(1, 0)`, `.flip(1)` or `.narrow(1, 0, 31)` of what it is of. One output: its
/// expression; several: the tuple `(e1, e2)`. Empty when a node has no torch expression, or
/// when the expression passes max_graph_torch_bytes: inlining doubles it at every node that
/// reads a tensor twice (a residual add), so a deep network's would not fit in memory.
std::string graph_torch(const graph_spec& g, const std::vector<tensor_spec>& inputs,
                        const std::vector<tensor_spec>& outputs);

/// Replaces every whole identifier of `expression` named in `names` (not an attribute after a
/// '.', nor a keyword argument's name before a single '=', nor inside a string literal) by
/// its text in `names`.
std::string substitute_names(std::string_view expression,
                             const std::vector<std::pair<std::string, std::string>>& names);

} // namespace ks::engine
