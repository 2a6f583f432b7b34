#pragma once

// Private to engine/'s manifest loader (task_manifest.cpp): reading the parts of a manifest
// that a graph task adds (`views`, `nodes`, `main`; graph_manifest.cpp) and the `module` table
// any manifest may hold (module_manifest.cpp). Problems go to the loader's manifest_checks,
// each at its FILE:LINE:COL like every other manifest problem.

#include "engine/error.hpp"
#include "engine/graph_spec.hpp"
#include "engine/manifest_checks.hpp"
#include "engine/task.hpp"

#include <toml++/toml.h>

#include <filesystem>
#include <memory>

namespace ks::engine::manifest_detail {

/// Reads the graph of `root`, the manifest of `subject` (family "graph"; its tensors, tolerance
/// and tunables read without a problem): the views, the nodes (each checked by its family as
/// a manifest of that family would be, its problems pointing into `root` and naming the node)
/// and the main node. Returns the graph, its nodes' references not yet rendered (finish_graph
/// does that); meaningful only when `checks` recorded no problem.
std::shared_ptr<graph_spec> read_graph(manifest_checks& checks, const toml::table& root,
                                       const task& subject);

/// Reports each key of `root` that only a graph task may have (views, nodes, main), for a
/// manifest whose family is `family`.
void refuse_graph_keys(manifest_checks& checks, const toml::table& root, const std::string& family);

/// Completes `graph`, the graph of `subject` (whose manifest_path is set): renders every node's
/// reference from the families' templates in `families` (keeping of the task's tunables those
/// the node's reference defines) and the graph's own argument checks; then, unless `subject`
/// has a hand-written reference, composes the reference (graph_reference.hpp) into
/// subject.reference_source, reference_path being the manifest. Fails as
/// render_family_reference does, naming the node.
[[nodiscard]] expected<void> finish_graph(task& subject, graph_spec& graph,
                                          const std::filesystem::path& families);

/// Reads the `module` table `node` of a manifest whose inputs are `inputs`: its keys and
/// their types, the inputs it names existing among `inputs`.
module_spec read_module(manifest_checks& checks, const toml::node& node,
                        const std::vector<tensor_spec>& inputs);

} // namespace ks::engine::manifest_detail
