#pragma once

// What long-term memory knows of how a skill fared: one try per node a skill made (its
// genotype and what came of it), and the statistics per (skill, op family, GPU architecture)
// that the tries add up to. Pure data and arithmetic: memory/ persists them, retrieval.hpp
// ranks skills by them.

#include "engine/search_tree.hpp"
#include "engine/short_term_memory.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace ks::engine {

/// One try of a skill: the node it made, its genotype and its outcome.
struct skill_try {
  std::string skill;
  int64_t skill_version = 0;
  std::string template_name;
  std::map<std::string, std::string> params;
  std::string family;
  std::string arch; ///< the GPU architecture it was compiled for ("sm_90a")
  std::string task;
  node_id node = no_node;
  node_id parent = no_node;
  outcome_kind outcome = outcome_kind::pending;
  std::string failure_kind;     ///< gpu::failure_kind's name when failed
  double gain = 0;              ///< 1 - child median / parent median
  double reference_speedup = 0; ///< reference median / child median; 0 when not timed
  std::string at;               ///< when it settled, ISO 8601 UTC

  friend bool operator==(const skill_try&, const skill_try&) = default;
};

/// The statistics of one skill on one op family and GPU architecture.
struct skill_stats {
  int64_t tries = 0;
  int64_t compile_failures = 0;
  int64_t wrong_results = 0;
  int64_t other_failures = 0; ///< crashes, timeouts, launch errors, ...
  int64_t acceptances = 0;
  int64_t rejections = 0;
  double log_speedup_sum = 0; ///< sum of ln(parent / child) over accepted tries
  double best_speedup = 0;    ///< the fastest kernel it made, as reference / kernel (timed
                              ///< tries, accepted or not); 0: none timed
  std::string best_template;  ///< the genotype of that kernel: a later campaign starts there
  std::map<std::string, std::string> best_params;
  std::string best_task;
  std::string last_used; ///< ISO 8601 UTC of the latest try

  /// Returns compile failures + wrong results + other failures.
  int64_t failures() const noexcept { return compile_failures + wrong_results + other_failures; }

  /// Returns acceptances / tries; 0 when never tried.
  double acceptance_rate() const noexcept;

  /// Returns the geometric mean of parent / child over accepted tries; 0 when none.
  double geomean_speedup() const noexcept;

  friend bool operator==(const skill_stats&, const skill_stats&) = default;
};

/// Adds `t` to `s`: a settled try (accepted, rejected or failed) counts once; a pending one
/// not at all. The best genotype is the one of the fastest kernel relative to its task's
/// reference (reference_speedup), so that a later campaign can start from the winner of an
/// earlier one rather than from the step that gained most over its parent.
void add_try(skill_stats& s, const skill_try& t);

} // namespace ks::engine
