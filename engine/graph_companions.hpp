// What a graph task's nodes other than the searched one run: the same choice for every coder
// (the offline one and the prompts' starting point of the language-model one).
#pragma once

#include "engine/skill.hpp"
#include "engine/task.hpp"

#include <cstddef>
#include <map>
#include <string>

namespace ks::engine {

/// Returns, for a graph task, the source of every node other than the main one that is not
/// elementwise: the first valid instantiation of the best-ranked skill of `skills` that applies
/// to it (a node no skill takes keeps its reference, so it is absent here). The search tunes
/// the main node; its companions get a good kernel instead of the plain reference, which a
/// 3-node attention's second matmul would otherwise keep (50x slower than torch). Empty for a
/// task that is not a graph.
std::map<size_t, std::string> graph_companion_sources(const skill_library& skills,
                                                      const task& subject);

} // namespace ks::engine
