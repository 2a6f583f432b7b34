#include "engine/bench_placement.hpp"

#include <algorithm>

namespace ks::engine {

namespace {

bool has(std::span<const int32_t> cards, int32_t card) {
  return std::find(cards.begin(), cards.end(), card) != cards.end();
}

// Returns the idle live card a job that may run anywhere should take: the one fewest queued
// jobs are pinned to, then the one that worked least; -1 if none is idle.
int32_t any_idle(std::span<const card_state> cards, std::span<const int64_t> pinned_waiting) {
  int32_t best = -1;
  for (size_t g = 0; g < cards.size(); ++g) {
    if (cards[g].busy || cards[g].dead)
      continue;
    if (best < 0) {
      best = static_cast<int32_t>(g);
      continue;
    }
    auto b = static_cast<size_t>(best);
    if (pinned_waiting[g] < pinned_waiting[b] ||
        (pinned_waiting[g] == pinned_waiting[b] && cards[g].busy_ms < cards[b].busy_ms))
      best = static_cast<int32_t>(g);
  }
  return best;
}

} // namespace

placement place(bench_purpose purpose, const placement_facts& facts) {
  placement out;
  switch (purpose) {
  case bench_purpose::verify:
    out.prefer = facts.verified_cards;
    break;
  case bench_purpose::reference_time:
    out.prefer = {facts.home};
    break;
  case bench_purpose::branch_time:
  case bench_purpose::profile:
    out.prefer = facts.timed_cards;
    break;
  case bench_purpose::final_round:
    // The preference outlives the pin only where the round's card dies.
    out.pinned = facts.card;
    out.prefer = {facts.round_card >= 0 ? facts.round_card : facts.home};
    break;
  case bench_purpose::retime:
  case bench_purpose::learned_skill:
  case bench_purpose::device:
    out.pinned = facts.card;
    break;
  }
  return out;
}

int32_t card_for(const placement& where, std::span<const card_state> cards,
                 std::span<const int64_t> pinned_waiting, placement_pass pass) {
  auto live = [&](int32_t g) {
    return g >= 0 && static_cast<size_t>(g) < cards.size() && !cards[static_cast<size_t>(g)].dead;
  };
  if (live(where.pinned))
    return cards[static_cast<size_t>(where.pinned)].busy ? -1 : where.pinned;
  bool preference = false;
  for (int32_t g : where.prefer) {
    if (!live(g))
      continue;
    if (!cards[static_cast<size_t>(g)].busy)
      return g;
    preference = true;
  }
  // An idle card beats waiting, at the price the purpose pays there; but only once no job
  // could run there on its own terms (the first pass).
  if (preference && pass == placement_pass::own_cards)
    return -1;
  return any_idle(cards, pinned_waiting);
}

int32_t home_for(int32_t kept, std::span<const double> assigned_ms,
                 std::span<const card_state> cards) {
  if (kept >= 0 && static_cast<size_t>(kept) < cards.size())
    return kept;
  bool any_alive =
      std::any_of(cards.begin(), cards.end(), [](const card_state& c) { return !c.dead; });
  int32_t best = -1;
  for (size_t g = 0; g < cards.size(); ++g) {
    if (cards[g].dead && any_alive)
      continue;
    if (best < 0 || assigned_ms[g] < assigned_ms[static_cast<size_t>(best)])
      best = static_cast<int32_t>(g);
  }
  return best;
}

std::vector<int32_t> spread_cards(std::span<const int32_t> known, int64_t cards, int64_t children,
                                  const timing& parent, double min_median_ms) {
  std::vector<int32_t> out;
  if (cards < 2 || children < 2 || known.empty() || !parent.measured() ||
      parent.median_ms < min_median_ms)
    return out;
  int64_t wanted = std::min(children / 2, cards);
  auto holding = static_cast<int64_t>(known.size());
  int32_t first = known.front();
  for (int64_t step = 1; step < cards && holding < wanted; ++step) {
    auto g = static_cast<int32_t>((first + step) % cards);
    if (has(known, g))
      continue;
    out.push_back(g);
    ++holding;
  }
  return out;
}

int32_t final_round_card(int32_t home, int64_t running, int64_t cards) {
  if (cards < 1)
    return -1;
  return static_cast<int32_t>((std::max(home, 0) + running) % cards);
}

} // namespace ks::engine
