#pragma once

// Retrieval: which skills the planner sees for a parent, and in which order. See
// retrieval.cpp for the rule (families and preconditions filter; an upper confidence bound over
// the statistics ranks; demoted skills come last).

#include "engine/diagnosis.hpp"
#include "engine/skill.hpp"
#include "engine/skill_stats.hpp"
#include "engine/task.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// The ranking rule's knobs, from the config's [memory] section.
struct retrieval_rules {
  double exploration = 1.0;            ///< weight of the UCB bonus
  int64_t demote_min_tries = 8;        ///< a skill is judged only after this many tries ...
  double demote_failure_rate = 0.5;    ///< ... and demoted when at least this share failed
  double demote_min_acceptance = 0.05; ///< ... or fewer than this share were accepted
};

/// One skill as the planner sees it.
struct retrieved_skill {
  std::string id;
  skill_stats stats; ///< on the task's family and the campaign's GPU architecture
  double score = 0;  ///< the UCB score; +infinity when untried
  bool demoted = false;
  bool off_diagnosis = false; ///< addresses another bottleneck than the parent's diagnosis
  std::string why;            ///< one line for people and prompts: "untried", "ucb 0.71 = ..."

  friend bool operator==(const retrieved_skill&, const retrieved_skill&) = default;
};

/// A skill to rank: its id, prior and statistics.
struct ranking_input {
  std::string id;
  double prior = 0.5;
  skill_stats stats;
  bool off_diagnosis = false; ///< addresses another bottleneck than the parent's diagnosis
};

/// Returns the UCB score of `s` among candidates tried `total_tries` times in all:
/// acceptance rate + exploration * sqrt(ln(max(total_tries, 1)) / tries); +infinity when `s`
/// was never tried.
double ucb_score(const skill_stats& s, int64_t total_tries, double exploration) noexcept;

/// Checks whether `s` is demoted under `rules`: tried at least demote_min_tries times, and
/// failures / tries >= demote_failure_rate or acceptances / tries < demote_min_acceptance.
bool is_demoted(const skill_stats& s, const retrieval_rules& rules) noexcept;

/// Ranks `candidates`: skills not demoted first, then demoted ones; within each, those that
/// address the diagnosed bottleneck before those that do not, then by UCB score (untried
/// first: by prior, higher first), ties by id.
std::vector<retrieved_skill> rank_skills(const std::vector<ranking_input>& candidates,
                                         const retrieval_rules& rules);

/// Returns the skills of `library` that apply to `subject`'s search target (a graph task's main
/// node: search_target) for a parent with `diagnosis` (null: none yet), ranked by rank_skills
/// over `stats` (by skill id; a skill missing there is untried). `reference_source` gives the
/// defaults of tunables (for a graph task, its main node's reference does).
std::vector<retrieved_skill> retrieve(const skill_library& library, const task& subject,
                                      const diagnosis* diagnosis, std::string_view reference_source,
                                      const std::map<std::string, skill_stats>& stats,
                                      const retrieval_rules& rules);

} // namespace ks::engine
