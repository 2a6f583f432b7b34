#pragma once

// Reads what a language model answered, strictly: a role's reply is used only when it has the
// form its prompt asked for, and anything else is errc::bad_reply with a message that says
// what was wrong, precise enough to be sent back to the model ("plan 2: unknown skill 'x';
// choose one of ...") for its one second chance.
//
//   code       one fenced block (```cuda, ```cpp, ```c++, ```cu, ```c or bare ```) that
//              defines ks_forward; with several such blocks, the last one
//   plans      a JSON object { "plans": [ { "skill", "template"?, "params"?, "description" } ] }
//              in a ```json block or as the whole reply; each skill one the prompt offered
//   repair     a JSON object { "diagnosis", "fix_summary", "give_up"? } and, unless it gives
//              up, a code block as above
//   skill      a ```toml block (skill.toml) and, when the skill has a template, a block of its
//              CUDA template (```mustache or ```cuda), kept as <its templates' file name>

#include "engine/agent_backend.hpp"
#include "engine/error.hpp"
#include "engine/plan.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ks::agents {

/// One fenced block of a reply.
struct fenced_block {
  std::string info; ///< the word after the opening fence, lowercased ("cuda", "json", "")
  std::string text; ///< its lines, without the fences
};

/// Returns the fenced blocks of `reply` in order; a block left open at the end counts, ended
/// by the end of the reply (a reply cut short by its token limit).
std::vector<fenced_block> fenced_blocks(std::string_view reply);

/// Returns the CUDA source of `reply` (see the top of the file); errc::bad_reply otherwise.
[[nodiscard]] engine::expected<std::string> parse_code(std::string_view reply);

/// Says which plans a planner may propose.
struct plan_rules {
  std::vector<std::string> skills;                ///< the skill ids offered, best first
  const engine::skill_library* library = nullptr; ///< to check templates; null: not checked
  int64_t count = 1;                              ///< plans asked for; more are cut
};

/// The skill id of a plan that applies no skill of the library: its own idea.
inline constexpr std::string_view custom_skill = "custom";

/// Returns the plans of `reply` (see the top of the file): at most rules.count, each with a
/// skill of rules.skills or "custom", a description, params as strings (numbers in their
/// shortest form); a custom plan gets its description as the param "idea", so that two custom
/// ideas are two plans. An empty list is an answer (no idea left). errc::bad_reply otherwise,
/// naming every problem.
[[nodiscard]] engine::expected<std::vector<engine::plan>> parse_plans(std::string_view reply,
                                                                      const plan_rules& rules);

/// Returns the repair of `reply` (see the top of the file); errc::bad_reply otherwise.
[[nodiscard]] engine::expected<engine::repair_reply> parse_repair(std::string_view reply);

/// Returns the files of the skill in `reply`: "skill.toml" and, for a second block, the file
/// name `template_file`. errc::bad_reply when there is no toml block.
[[nodiscard]] engine::expected<std::map<std::string, std::string>>
parse_skill_files(std::string_view reply, std::string_view template_file);

} // namespace ks::agents
