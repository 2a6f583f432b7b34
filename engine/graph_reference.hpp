#pragma once

// A graph task's kernel as one CUDA file with one `extern "C" ks_forward`, composed from one
// source per node (graph_reference.cpp has the method): the graph's reference is the
// composition of its nodes' family references, and a candidate the same composition with the
// main node's source replaced by a skill's. Pure string work: nothing here compiles or runs.

#include "engine/error.hpp"
#include "engine/task.hpp"

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// A node's source split for composition.
struct hoisted_source {
  /// The #include lines, and the preprocessor conditionals that hold includes (an
  /// `#ifdef KS_EMULATE` / `#include ...` / `#else` / `#include ...` / `#endif`), in order; a
  /// conditional that also holds other lines gives its includes, under its directives, here
  /// and those lines, under its directives too, to the body.
  std::vector<std::string> includes;
  std::string body;                ///< the rest
  std::vector<std::string> macros; ///< every NAME of a `#define NAME` in body, once, in order
};

/// Splits `source` into what composition hoists to the top of the file and the rest.
hoisted_source hoist_includes(std::string_view source);

/// Returns the source of graph task `subject` (subject.graph set, its nodes' references and
/// checks_source rendered): every node's source, its includes hoisted (once each, at the top),
/// its macros pushed and popped around it (a node's `#define KS_BLOCK_THREADS` stays its own),
/// wrapped in `namespace ks_node_<i>` with its `extern "C" int ks_forward` made a plain
/// function there; then the graph's ks_forward, which checks its own arguments (the codes 1 to
/// 8 of every reference), takes the intermediates and the copies of strided views from one
/// device workspace (from the default memory pool, for the call; 11 when it cannot be had),
/// copies each strided view
/// before the first node that reads it, calls the nodes in order on the given stream, and
/// returns the first failure as 100 * (node index + 1) + the node's code (10 for its view copy).
/// The source of node i is replacements[i] where given, else its reference. Fails with
/// errc::invalid_input when a node's source has no `extern "C" int ks_forward(` or when a
/// replacement names no node.
[[nodiscard]] expected<std::string>
compose_graph(const task& subject, const std::map<size_t, std::string>& replacements);

} // namespace ks::engine
