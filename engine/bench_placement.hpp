#pragma once

// Where a bench job runs: every rule that chooses a card, in one place. The bench schedule
// (bench_schedule.hpp) decides which queued job starts next; these rules decide on which card.
//
// The method. A card runs one job at a time. Two costs pull against each other: a card idling
// while a job waits, and a measurement compared across cards (two cards of one model differ by
// a few percent, as much as the gains the judge must see). So a job names the cards it prefers,
// for a reason its purpose gives, and takes the first of them that is idle; when all of them
// are busy it waits, unless an idle card has no other job it could run: then it goes there and
// pays its purpose's price (a parent re-timed on that card, the reference's outputs computed
// again). Only what must run on one card is pinned: a re-timing (its card is its point), a
// final round after its first slot (a round is a block on one card), the reference a learned
// skill is compared with, and the start-up probes.
//
// The rules by purpose (place):
//
//   verify          the cards that verified the task before: their workers cache the
//                   reference's outputs for the task's seeds
//   reference_time  the task's home (home_for); the card that times the reference becomes the
//                   home, kept in the task's state
//   branch_time     the cards where the parent's time is known or being measured: a child
//                   timed elsewhere waits for the parent's re-timing there
//   retime          pinned to the card a child of the parent is timed on (once per parent and
//                   card)
//   final_round     its first slot prefers the card meant for the round (final_round_card: the
//                   k-th round started at once, the k-th card from the home), then pinned to
//                   the card that took it
//   profile         the cards where the node's time is known
//   learned_skill   the candidate anywhere, then the reference pinned to the candidate's card
//   device          pinned to its card
//
// Homes (home_for): a task's home is the live card with the least load assigned so far, its
// reference's verification time the estimate (online longest processing time), so that a
// task 30 times heavier than the others has a card to itself; a home kept from an earlier run
// stands.
//
// Spreading (spread_cards): a child is judged against its parent on the child's card, so an
// expansion of a slow parent (median >= the spread threshold) re-times the parent ahead on
// other cards while its children are verified, so that they can be timed on several cards at
// once: on up to children / 2 cards in all, since for one child a re-timing costs as much as
// waiting for the parent's card, and on a busy campaign that card has other work meanwhile.
//
// Choosing a card now (card_for), in two passes (placement_pass): first each job only on its
// own cards (pinned, preferred, or any when it prefers none), then a job whose preferred cards
// are all busy on another idle one. Among idle cards a job that may take any prefers the one
// fewest queued jobs are pinned to (a verification does not take the card a re-timing waits
// for), then the one that worked least. A dead card takes no job; a job pinned to one runs as
// if it were not pinned, and one whose preferred cards are all dead takes any.

#include "engine/bench_purpose.hpp"
#include "engine/timing.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace ks::engine {

/// Holds where a job may run: a pinned card, or the cards it prefers.
struct placement {
  int32_t pinned = -1;         ///< the only card it may run on (unless that card is dead); -1: any
  std::vector<int32_t> prefer; ///< cards to take when idle, best first (for a pinned job:
                               ///< where its card is dead)
};

/// Holds what the placement rules read of a task and a job: where the task's work ran.
struct placement_facts {
  int32_t home = -1;                   ///< the task's home card
  std::vector<int32_t> verified_cards; ///< cards that verified a candidate of the task
  std::vector<int32_t> timed_cards;    ///< where a time is known or being measured: the
                                       ///< parent's for a branch, the node's own for a profile
  int32_t card = -1;       ///< the card the job must run on: a re-timing's, a final slot's once
                           ///< its round has a card, a learned skill's reference's; -1: none
  int32_t round_card = -1; ///< a final round's first slot: the card meant for the round
                           ///< (final_round_card); -1: the home
};

/// Returns where a job of `purpose` may run, given `facts` (the table at the top of the file).
placement place(bench_purpose purpose, const placement_facts& facts);

/// Holds a card as the rules see it.
struct card_state {
  bool busy = false;          ///< runs a job
  bool dead = false;          ///< its bench actor is gone: it takes no job
  double busy_ms = 0;         ///< how long it has worked so far
  bool timing_paused = false; ///< takes no timing job: its stability monitor says it is
                              ///< unstable (card_stability.hpp); other jobs run on it
};

/// Names the passes of one scheduling round, in order: a job first runs only on its own cards,
/// then on another idle card when its preferred ones are all busy.
enum class placement_pass { own_cards, any_idle_card };

/// Lists the passes of one scheduling round, in the order they run.
inline constexpr placement_pass placement_passes[] = {placement_pass::own_cards,
                                                      placement_pass::any_idle_card};

/// Returns the card a job placed `where` may start on now in pass `pass`, -1 if none.
/// `pinned_waiting[g]` counts the queued jobs pinned to card g (a tie-break among idle cards).
int32_t card_for(const placement& where, std::span<const card_state> cards,
                 std::span<const int64_t> pinned_waiting, placement_pass pass);

/// Returns a task's home card: `kept` when it names one of `cards` (a home from an earlier
/// run), else the live card with the least `assigned_ms`, the lowest index on a tie (a dead
/// one only when all are dead); -1 when there is no card.
int32_t home_for(int32_t kept, std::span<const double> assigned_ms,
                 std::span<const card_state> cards);

/// Returns the cards on which to re-time a parent ahead of its `children` (spreading): none
/// unless there are two cards or more, two children or more, and the parent's time `parent` is
/// measured with a median of at least `min_median_ms`; else the cards after the first of
/// `known` (where its time is known or being measured, its record's card first), in turn,
/// until min(children / 2, cards) cards hold it.
std::vector<int32_t> spread_cards(std::span<const int32_t> known, int64_t cards, int64_t children,
                                  const timing& parent, double min_median_ms);

/// Returns the card meant for a final's round started while `running` others run: the
/// `running`-th card from `home` on, so that concurrent rounds of one final share the cards.
int32_t final_round_card(int32_t home, int64_t running, int64_t cards);

} // namespace ks::engine
