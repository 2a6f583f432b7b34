#include "engine/bench_schedule.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace ks::engine;

namespace {

queued_job pinned(int32_t card, double priority = 0, double at_ms = 0) {
  return queued_job{placement{card, {}}, priority, at_ms};
}

queued_job preferring(std::vector<int32_t> cards, double priority = 0, double at_ms = 0) {
  return queued_job{placement{-1, std::move(cards)}, priority, at_ms};
}

queued_job anywhere(double priority = 0, double at_ms = 0) {
  return queued_job{placement{}, priority, at_ms};
}

std::vector<card_state> cards(size_t n) {
  return std::vector<card_state>(n);
}

} // namespace

TEST_CASE("the schedule keeps two cards busy: a pinned job waits for its card, an unpinned one "
          "takes the other",
          "[engine][schedule]") {
  // Five jobs queue: three timings pinned to card 1, two verifications anywhere.
  std::vector<queued_job> queue{pinned(1), pinned(1), anywhere(), anywhere(), pinned(1)};
  CHECK(schedule(queue, cards(2), 0) == std::vector<job_start>{{0, 1}, {2, 0}});

  // Card 0 frees while card 1 is busy: the next job it may run is a verification.
  std::vector<queued_job> left{pinned(1), anywhere(), pinned(1)};
  std::vector<card_state> one_free = cards(2);
  one_free[1].busy = true;
  CHECK(schedule(left, one_free, 0) == std::vector<job_start>{{1, 0}});
  // Nothing idle: nothing starts.
  one_free[0].busy = true;
  CHECK(schedule(left, one_free, 0).empty());
}

TEST_CASE("the queued job of highest priority starts first, in order among equals",
          "[engine][schedule]") {
  // One card, four jobs queued at once: the heavy ones first, each pair in the order it came.
  std::vector<queued_job> queue{anywhere(2), anywhere(80), anywhere(2), pinned(0, 80)};
  std::vector<size_t> order;
  std::vector<bool> done(queue.size(), false);
  for (int round = 0; round < 4; ++round) {
    std::vector<queued_job> left;
    std::vector<size_t> index;
    for (size_t i = 0; i < queue.size(); ++i)
      if (!done[i]) {
        left.push_back(queue[i]);
        index.push_back(i);
      }
    auto starts = schedule(left, cards(1), 0);
    REQUIRE(starts.size() == 1);
    order.push_back(index[starts.front().job]);
    done[index[starts.front().job]] = true;
  }
  CHECK(order == std::vector<size_t>{1, 3, 0, 2});
}

TEST_CASE("a job's priority grows with its wait: a light job cannot starve behind a heavy "
          "task's stream",
          "[engine][schedule]") {
  // The light job (1 ms) was queued at t = 0, the heavy one (20 ms) at t = 60: at t = 60 the
  // light one has waited longer than the difference, and goes first.
  std::vector<queued_job> queue{pinned(0, 1, 0), pinned(0, 20, 60)};
  CHECK(schedule(queue, cards(1), 60) == std::vector<job_start>{{0, 0}});
  // Queued together, the heavy one goes first.
  std::vector<queued_job> together{pinned(0, 1, 60), pinned(0, 20, 60)};
  CHECK(schedule(together, cards(1), 60) == std::vector<job_start>{{1, 0}});
  // A fresh light job does not pass the heavy one that has waited too.
  std::vector<queued_job> later{pinned(0, 20, 60), pinned(0, 1, 70)};
  CHECK(schedule(later, cards(1), 70) == std::vector<job_start>{{0, 0}});
  CHECK(aged_priority(later[0], 70) == Approx(30));
}

TEST_CASE("a job preferring busy cards takes an idle one only when no other job can use it",
          "[engine][schedule]") {
  // Card 1 is busy; "c" prefers it (and is heavier), "v" may run anywhere: "v" takes card 0,
  // "c" waits for its own card.
  std::vector<card_state> state = cards(2);
  state[1].busy = true;
  std::vector<queued_job> queue{preferring({1}, 10), anywhere()};
  CHECK(schedule(queue, state, 0) == std::vector<job_start>{{1, 0}});
  // Alone, "c" takes the idle card rather than wait.
  std::vector<queued_job> alone{preferring({1}, 10)};
  CHECK(schedule(alone, state, 0) == std::vector<job_start>{{0, 0}});
  // Three cards, two busy: "t" may run on card 2 or 0 (0 is idle), "u" only on the busy 2, "v"
  // anywhere. "t" goes first on 0; "v" then finds no idle card, nor does "u".
  std::vector<card_state> three = cards(3);
  three[1].busy = true;
  three[2].busy = true;
  std::vector<queued_job> mixed{preferring({2, 0}, 5), preferring({2}, 5), anywhere()};
  CHECK(schedule(mixed, three, 0) == std::vector<job_start>{{0, 0}});
}

TEST_CASE("a job never waits behind one pinned to a busy card", "[engine][schedule]") {
  std::vector<card_state> state = cards(2);
  state[0].busy = true;
  std::vector<queued_job> queue{pinned(0, 100), anywhere(1)};
  CHECK(schedule(queue, state, 0) == std::vector<job_start>{{1, 1}});
}

TEST_CASE("a job pinned to a dead card runs on a live one, and a dead card runs nothing",
          "[engine][schedule]") {
  std::vector<card_state> state = cards(2);
  state[1].dead = true;
  std::vector<queued_job> queue{pinned(1), pinned(1)};
  CHECK(schedule(queue, state, 0) == std::vector<job_start>{{0, 0}});
  state[0].dead = true;
  CHECK(schedule(queue, state, 0).empty());
}

TEST_CASE("an unpinned job leaves the card queued jobs are pinned to for them",
          "[engine][schedule]") {
  // Both cards idle; one job pinned to card 0 is heavier, one light job may run anywhere, one
  // more is pinned to card 0 behind it. Card 0 goes to the pinned job, and the unpinned one
  // takes card 1 even though card 0 worked less.
  std::vector<card_state> state = cards(2);
  state[1].busy_ms = 100;
  std::vector<queued_job> queue{anywhere(50), pinned(0, 10), pinned(0, 10)};
  CHECK(schedule(queue, state, 0) == std::vector<job_start>{{0, 1}, {1, 0}});
}

TEST_CASE("a card whose timing is paused takes no timing job: its pinned timings wait, the "
          "others go elsewhere, and verifications still run on it",
          "[engine][schedule][stability]") {
  auto timing = [](queued_job j) {
    j.timing = true;
    return j;
  };
  std::vector<card_state> two = cards(2);
  two[0].timing_paused = true;
  // A timing pinned to card 0 waits; a timing that prefers card 0 takes card 1.
  std::vector<queued_job> queue{timing(pinned(0, 10)), timing(preferring({0}, 5))};
  CHECK(schedule(queue, two, 0) == std::vector<job_start>{{1, 1}});
  // A verification pinned to card 0 runs there.
  std::vector<queued_job> verifies{timing(pinned(0, 10)), pinned(0, 5)};
  CHECK(schedule(verifies, two, 0) == std::vector<job_start>{{1, 0}});
  // Unpaused, the timing starts first (higher priority).
  two[0].timing_paused = false;
  CHECK(schedule(verifies, two, 0) == std::vector<job_start>{{0, 0}});
}
