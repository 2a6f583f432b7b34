#pragma once

// A skill: reusable optimization knowledge, as data. One folder per skill holds a TOML file
// (skill.toml: what it is, where it applies, guidance for a coder) and, where the offline
// backend can apply it, CUDA templates with their parameter spaces. docs/skills.md describes
// the format; skill_library.hpp loads it; skill_template.hpp renders a template for a task.

#include "engine/analyst.hpp"
#include "engine/expression.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// Says where a skill came from. The numbers are stable ("storage order").
enum class skill_origin : int32_t {
  builtin = 0, ///< seeded from the skills/ folder; refreshed when its files change
  user = 1,    ///< imported by a user; never overwritten by a built-in one
  learned = 2, ///< distilled from a campaign; never overwritten by a built-in one
};

/// Returns the stable name of `o` ("builtin", "user", "learned").
const char* to_string(skill_origin o) noexcept;

/// Parses a stable name back; nullopt if unknown.
std::optional<skill_origin> parse_skill_origin(std::string_view name) noexcept;

/// One parameter of a template: the values it may take, in the order the planner walks them.
struct param_space {
  std::string name;            ///< an identifier: the template's {{name}}
  std::vector<int64_t> values; ///< distinct, at least one
  int64_t default_value = 0;   ///< one of values
  /// `prefer`: the default for a task, over task.* facts and the parameters listed before this
  /// one; snapped to the nearest of values (preferred_defaults in skill_template.hpp). None:
  /// default_value for every task.
  std::optional<expression> prefer;
};

/// One CUDA template of a skill and its parameter space.
struct skill_template {
  std::string name;                    ///< [a-z0-9_]+, unique within the skill
  std::string file;                    ///< the template's file name in the skill's folder
  std::string text;                    ///< its Mustache text
  std::vector<param_space> params;     ///< empty when params_from_tunables
  bool params_from_tunables = false;   ///< the space is the task's tunables (launch_params)
  std::vector<expression> constraints; ///< over params and task facts; all must hold
};

/// A table of texts chosen by a task fact: `text.NAME` in a template is entries[task's key].
struct text_table {
  std::string name; ///< [a-z0-9_]+
  std::string key;  ///< a task fact, e.g. "task.op"
  std::map<std::string, std::string> entries;
};

/// One skill, as loaded from its files.
struct skill {
  std::string id; ///< [a-z0-9_]+, unique in a library
  std::string title;
  int64_t version = 1;
  std::vector<std::string> families; ///< op families it applies to; "*" for any
  std::vector<bound_kind> addresses; ///< bottleneck classes it addresses; empty: any
  std::vector<expression>
      preconditions;    ///< `requires`: preconditions over task.* and diagnosis.* facts
  std::string guidance; ///< for a coder: what to change, why, pitfalls
  std::vector<std::string> anti_patterns; ///< forbidden shortcuts
  std::string effect;                     ///< the expected effect on the metrics
  double prior = 0.5;                     ///< ranks untried skills: higher first, in [0, 1]
  std::vector<skill_template> templates;  ///< empty: guidance only (for language models)
  std::vector<text_table> tables;
  skill_origin origin = skill_origin::builtin;
  std::string content_hash;                 ///< of every file, hex: refreshes on change
  std::map<std::string, std::string> files; ///< file name -> text, as loaded

  /// Checks whether the skill applies to op family `family`.
  bool applies_to(std::string_view family) const;

  /// Returns its template named `name`; the first when `name` is empty; null if none.
  const skill_template* find_template(std::string_view name) const;
};

/// The skills a campaign may use, read-only once loaded.
struct skill_library {
  std::vector<skill> skills; ///< sorted by id

  /// Returns the skill `id`; null if none.
  const skill* find(std::string_view id) const;
};

/// Shares a loaded library between the actors that need it (planner, coder, supervisors).
using skill_library_ptr = std::shared_ptr<const skill_library>;

} // namespace ks::engine
