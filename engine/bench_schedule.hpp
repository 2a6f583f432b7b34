#pragma once

// Which queued bench jobs start now, and on which cards: the bench dispatcher's decision, as a
// pure function of its queue, its cards and the time. The dispatcher asks it whenever a job
// comes or a card frees, and starts what it answers.
//
// The method: greedy list scheduling with priorities. A job's priority is its task's load
// estimate in ms, so the longest jobs start first (the longest-processing-time rule: the
// heaviest task, which decides when the campaign ends, is never left for last). A job's
// priority grows by the milliseconds it has waited (aging): a light task's job pinned to a card
// cannot starve behind a heavy task's stream there (its task's next steps wait for it, and
// another card may idle meanwhile), and among equals the one queued first goes first.
//
// Each round starts the queued job of highest priority that has a card to run on, until none
// can start: first each job on its own cards, then the jobs whose preferred cards are busy on
// the idle cards left over (the passes and every rule of where a job may run are in
// bench_placement.hpp). A job that cannot start never holds back one behind it: a job pinned
// to a busy card waits while a lower one runs elsewhere. A card whose timing is paused (its
// stability monitor says it is unstable, card_stability.hpp) counts as busy for timing jobs
// only: verifications and profiles still run on it, and a timing job that may run elsewhere
// goes elsewhere.
//
// The clock is the caller's: times are milliseconds on any monotonic clock, so the schedule is
// tested with made-up times and no sleeps.

#include "engine/bench_placement.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace ks::engine {

/// Holds a queued job as the schedule sees it.
struct queued_job {
  engine::placement where;
  double priority = 0;     ///< ms: its task's load estimate
  double queued_at_ms = 0; ///< when it was queued, on the caller's clock
  bool timing = false;     ///< a timing job: it does not start on a card whose timing is paused
};

/// Says that queued job `job` (an index into the queue given) starts on card `card`.
struct job_start {
  size_t job = 0;
  int32_t card = -1;

  friend bool operator==(const job_start&, const job_start&) = default;
};

/// Returns the jobs of `queue` (in the order they came) to start now on `cards`, in the order
/// to start them, at `now_ms` on the clock of their queued_at_ms. Each start makes its card
/// busy for the ones after it.
std::vector<job_start> schedule(std::span<const queued_job> queue,
                                std::span<const card_state> cards, double now_ms);

/// Returns `job`'s priority at `now_ms`: its own plus the milliseconds it has waited.
double aged_priority(const queued_job& job, double now_ms) noexcept;

} // namespace ks::engine
