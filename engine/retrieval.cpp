// Retrieval ranks the skills that apply to a parent by what long-term memory knows of them on
// this op family and GPU architecture. It is a multi-armed bandit: each skill is an arm, a
// try is a pull, an accepted child is a reward. The rule is UCB1 (Auer et al., 2002):
//
//   score = acceptances / tries + exploration * sqrt(ln N / tries),   N = tries of all candidates
//
// so a skill that wins often ranks high, and one tried rarely keeps a bonus that grows as the
// others are tried: no skill is starved. A skill never tried here scores +infinity: untried
// skills come first (among themselves, by the prior its author gave it, then by id), which is
// the "room for untried skills" a memory that learns needs — a newly added skill is tried at
// the next chance rather than waiting behind everything that once worked.
//
// Demotion is the other half: a skill that keeps failing on this family and GPU (at least
// demote_min_tries tries, and a failure rate at or above demote_failure_rate, or an
// acceptance rate below demote_min_acceptance) goes behind every skill that is not demoted, so
// it is tried only when nothing else is left. The thresholds are the config's
// ([memory] demote_*), not constants here.
//
// Filtering comes first and is not ranked: a skill is retrieved only when its families, its
// preconditions and its templates' constraints admit the task (check_applies). The bottleneck
// classes it addresses rank rather than filter: a skill for another bottleneck than the
// parent's diagnosis comes after every skill for that one. A diagnosis describes the parent,
// not the task: a simple reference that accumulates in double is compute-bound by its counters
// while the task is memory-bound, and the memory skills are what it needs; filtering on the
// class left such tasks with nothing to try.

#include "engine/retrieval.hpp"

#include "engine/skill_template.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ks::engine {

double ucb_score(const skill_stats& s, int64_t total_tries, double exploration) noexcept {
  if (s.tries <= 0)
    return std::numeric_limits<double>::infinity();
  double n = static_cast<double>(s.tries);
  double total = static_cast<double>(std::max<int64_t>(total_tries, 1));
  return s.acceptance_rate() + exploration * std::sqrt(std::log(total) / n);
}

bool is_demoted(const skill_stats& s, const retrieval_rules& rules) noexcept {
  if (s.tries < rules.demote_min_tries || s.tries <= 0)
    return false;
  double failure_rate = static_cast<double>(s.failures()) / static_cast<double>(s.tries);
  return failure_rate >= rules.demote_failure_rate ||
         s.acceptance_rate() < rules.demote_min_acceptance;
}

std::vector<retrieved_skill> rank_skills(const std::vector<ranking_input>& candidates,
                                         const retrieval_rules& rules) {
  int64_t total = 0;
  for (const ranking_input& c : candidates)
    total += c.stats.tries;
  struct entry {
    retrieved_skill r;
    double prior;
  };
  std::vector<entry> entries;
  for (const ranking_input& c : candidates) {
    retrieved_skill r;
    r.id = c.id;
    r.stats = c.stats;
    r.score = ucb_score(c.stats, total, rules.exploration);
    r.demoted = is_demoted(c.stats, rules);
    r.off_diagnosis = c.off_diagnosis;
    char line[200];
    if (c.stats.tries == 0)
      std::snprintf(line, sizeof line, "untried (prior %.2f)", c.prior);
    else
      std::snprintf(line, sizeof line, "ucb %.3f: %lld of %lld accepted, %lld failed%s", r.score,
                    static_cast<long long>(c.stats.acceptances),
                    static_cast<long long>(c.stats.tries),
                    static_cast<long long>(c.stats.failures()), r.demoted ? "; demoted" : "");
    r.why = line;
    if (c.off_diagnosis)
      r.why += "; addresses another bottleneck than the diagnosis";
    entries.push_back({std::move(r), c.prior});
  }
  std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) {
    if (a.r.demoted != b.r.demoted)
      return !a.r.demoted;
    if (a.r.off_diagnosis != b.r.off_diagnosis)
      return !a.r.off_diagnosis;
    if (a.r.score != b.r.score)
      return a.r.score > b.r.score;
    if (a.r.stats.tries == 0 && b.r.stats.tries == 0 && a.prior != b.prior)
      return a.prior > b.prior;
    return a.r.id < b.r.id;
  });
  std::vector<retrieved_skill> out;
  for (entry& e : entries)
    out.push_back(std::move(e.r));
  return out;
}

std::vector<retrieved_skill> retrieve(const skill_library& library, const task& subject,
                                      const diagnosis* diagnosis, std::string_view reference_source,
                                      const std::map<std::string, skill_stats>& stats,
                                      const retrieval_rules& rules) {
  // A graph task's skills are its main node's, over that node's own reference.
  const task& target = search_target(subject);
  if (&target != &subject)
    reference_source = target.reference_source;
  std::vector<ranking_input> candidates;
  for (const skill& s : library.skills) {
    if (!check_applies(s, target, diagnosis, reference_source, /*by_bottleneck=*/false).applies)
      continue;
    auto it = stats.find(s.id);
    candidates.push_back({s.id, s.prior, it == stats.end() ? skill_stats{} : it->second,
                          !addresses_bottleneck(s, diagnosis)});
  }
  return rank_skills(candidates, rules);
}

} // namespace ks::engine
