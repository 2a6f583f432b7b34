#include "engine/bench_schedule.hpp"

namespace ks::engine {

double aged_priority(const queued_job& job, double now_ms) noexcept {
  return job.priority + (now_ms - job.queued_at_ms);
}

std::vector<job_start> schedule(std::span<const queued_job> queue,
                                std::span<const card_state> cards, double now_ms) {
  std::vector<card_state> state(cards.begin(), cards.end());
  // What a timing job sees: a card whose timing is paused is busy to it.
  std::vector<card_state> timing_state = state;
  for (card_state& c : timing_state)
    c.busy = c.busy || c.timing_paused;
  std::vector<bool> started(queue.size(), false);
  // The queued jobs pinned to each card: a job that may run anywhere avoids those cards.
  std::vector<int64_t> pinned_waiting(state.size(), 0);
  auto pin_of = [&](const queued_job& j) -> int32_t {
    int32_t g = j.where.pinned;
    return g >= 0 && static_cast<size_t>(g) < state.size() && !state[static_cast<size_t>(g)].dead
               ? g
               : -1;
  };
  for (const queued_job& j : queue)
    if (int32_t g = pin_of(j); g >= 0)
      ++pinned_waiting[static_cast<size_t>(g)];

  std::vector<job_start> out;
  for (placement_pass pass : placement_passes) {
    for (;;) {
      size_t chosen = queue.size();
      int32_t chosen_card = -1;
      double chosen_priority = 0;
      for (size_t i = 0; i < queue.size(); ++i) {
        if (started[i])
          continue;
        double priority = aged_priority(queue[i], now_ms);
        // Strictly higher only: among equals the one queued first wins.
        if (chosen < queue.size() && !(priority > chosen_priority))
          continue;
        int32_t card =
            card_for(queue[i].where, queue[i].timing ? timing_state : state, pinned_waiting, pass);
        if (card < 0)
          continue;
        chosen = i;
        chosen_card = card;
        chosen_priority = priority;
      }
      if (chosen == queue.size())
        break;
      started[chosen] = true;
      if (int32_t g = pin_of(queue[chosen]); g >= 0)
        --pinned_waiting[static_cast<size_t>(g)];
      state[static_cast<size_t>(chosen_card)].busy = true;
      timing_state[static_cast<size_t>(chosen_card)].busy = true;
      out.push_back(job_start{chosen, chosen_card});
    }
  }
  return out;
}

} // namespace ks::engine
