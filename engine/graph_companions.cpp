#include "engine/graph_companions.hpp"

#include "engine/graph_spec.hpp"
#include "engine/retrieval.hpp"
#include "engine/skill_template.hpp"

#include <vector>

namespace ks::engine {

namespace {

/// The first valid instantiation of skill `s` for `node`, rendered; empty when none renders.
/// A template over the tunables is the reference again, so it is passed over.
std::string first_rendering(const skill& s, const task& node) {
  for (const skill_template& t : s.templates) {
    if (t.params_from_tunables)
      continue;
    auto space = space_of(t, node, node.reference_source);
    if (!space)
      continue;
    auto first = first_valid(t, *space, node);
    if (!first || !*first)
      continue;
    if (expected<std::string> text = render(s, t, node, **first, node.reference_source))
      return std::move(*text);
  }
  return {};
}

} // namespace

std::map<size_t, std::string> graph_companion_sources(const skill_library& skills,
                                                      const task& subject) {
  std::map<size_t, std::string> sources;
  if (!subject.graph)
    return sources;
  const graph_spec& g = *subject.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const task& node = g.nodes[i].op;
    if (i == g.main || node.family == "elementwise")
      continue;
    // The skill a search of this node would try first: the best prior among those that apply.
    for (const retrieved_skill& r :
         retrieve(skills, node, nullptr, node.reference_source, {}, retrieval_rules{})) {
      const skill* s = skills.find(r.id);
      std::string text = s != nullptr ? first_rendering(*s, node) : std::string();
      if (!text.empty()) {
        sources[i] = std::move(text);
        break;
      }
    }
  }
  return sources;
}

} // namespace ks::engine
