#include "engine/bench_placement.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

using namespace ks::engine;

namespace {

std::vector<card_state> idle_cards(size_t n) {
  return std::vector<card_state>(n);
}

timing median(double ms) {
  return timing{ms, ms * 0.99, ms * 1.01, 30, {}};
}

} // namespace

TEST_CASE("each purpose places its job on the cards its reason names", "[engine][placement]") {
  placement_facts facts;
  facts.home = 1;
  facts.verified_cards = {2, 0};
  facts.timed_cards = {3, 1};

  placement verify = place(bench_purpose::verify, facts);
  CHECK(verify.pinned == -1);
  CHECK(verify.prefer == std::vector<int32_t>{2, 0}); // the reference's outputs are cached there

  placement reference = place(bench_purpose::reference_time, facts);
  CHECK(reference.pinned == -1);
  CHECK(reference.prefer == std::vector<int32_t>{1}); // the home

  placement branch = place(bench_purpose::branch_time, facts);
  CHECK(branch.pinned == -1);
  CHECK(branch.prefer == std::vector<int32_t>{3, 1}); // where the parent's time is known

  placement profile = place(bench_purpose::profile, facts);
  CHECK(profile.pinned == -1);
  CHECK(profile.prefer == std::vector<int32_t>{3, 1});

  // A re-timing is pinned: its card is its point.
  placement_facts retime = facts;
  retime.card = 2;
  CHECK(place(bench_purpose::retime, retime).pinned == 2);
  CHECK(place(bench_purpose::retime, retime).prefer.empty());

  // A final round's first slot prefers the card meant for the round (the home without one);
  // its later slots are pinned to the card that took it.
  placement_facts first_slot = facts;
  first_slot.round_card = 3;
  CHECK(place(bench_purpose::final_round, first_slot).pinned == -1);
  CHECK(place(bench_purpose::final_round, first_slot).prefer == std::vector<int32_t>{3});
  CHECK(place(bench_purpose::final_round, facts).prefer == std::vector<int32_t>{1});
  placement_facts later_slot = facts;
  later_slot.card = 0;
  CHECK(place(bench_purpose::final_round, later_slot).pinned == 0);

  // A learned skill's candidate runs anywhere, its reference then on the candidate's card.
  CHECK(place(bench_purpose::learned_skill, placement_facts{}).pinned == -1);
  CHECK(place(bench_purpose::learned_skill, placement_facts{}).prefer.empty());
  placement_facts reference_of_skill;
  reference_of_skill.card = 1;
  CHECK(place(bench_purpose::learned_skill, reference_of_skill).pinned == 1);
}

TEST_CASE("a job takes its pinned card or the first idle card it prefers, another only in the "
          "second pass",
          "[engine][placement]") {
  std::vector<card_state> cards = idle_cards(3);
  std::vector<int64_t> none(3, 0);
  using pass = placement_pass;

  // Pinned: that card or nothing, in both passes.
  cards[1].busy = true;
  CHECK(card_for(placement{1, {}}, cards, none, pass::own_cards) == -1);
  CHECK(card_for(placement{1, {}}, cards, none, pass::any_idle_card) == -1);
  CHECK(card_for(placement{2, {}}, cards, none, pass::own_cards) == 2);

  // Preferred: the first idle one, in order; all busy: another only in the second pass.
  CHECK(card_for(placement{-1, {1, 2, 0}}, cards, none, pass::own_cards) == 2);
  cards[2].busy = true;
  CHECK(card_for(placement{-1, {1, 2}}, cards, none, pass::own_cards) == -1);
  CHECK(card_for(placement{-1, {1, 2}}, cards, none, pass::any_idle_card) == 0);

  // No preference: any idle card, in either pass.
  CHECK(card_for(placement{}, cards, none, pass::own_cards) == 0);
  cards[0].busy = true;
  CHECK(card_for(placement{}, cards, none, pass::any_idle_card) == -1);
}

TEST_CASE("a job that may run anywhere avoids the cards jobs are pinned to, then the one that "
          "worked most",
          "[engine][placement]") {
  std::vector<card_state> cards = idle_cards(3);
  cards[0].busy_ms = 10;
  cards[1].busy_ms = 30;
  cards[2].busy_ms = 20;
  CHECK(card_for(placement{}, cards, std::vector<int64_t>{0, 0, 0}, placement_pass::own_cards) ==
        0);
  CHECK(card_for(placement{}, cards, std::vector<int64_t>{1, 0, 0}, placement_pass::own_cards) ==
        2);
  CHECK(card_for(placement{}, cards, std::vector<int64_t>{1, 0, 1}, placement_pass::own_cards) ==
        1);
}

TEST_CASE("a dead card takes no job: a job pinned to it or preferring only it runs elsewhere",
          "[engine][placement]") {
  std::vector<card_state> cards = idle_cards(2);
  std::vector<int64_t> none(2, 0);
  cards[1].dead = true;
  CHECK(card_for(placement{1, {}}, cards, none, placement_pass::own_cards) == 0);
  CHECK(card_for(placement{-1, {1}}, cards, none, placement_pass::own_cards) == 0);
  // A pinned final slot whose card died falls back on its preference.
  cards.push_back(card_state{});
  none.push_back(0);
  CHECK(card_for(placement{1, {2}}, cards, none, placement_pass::own_cards) == 2);
  cards[0].dead = true;
  cards[2].dead = true;
  CHECK(card_for(placement{}, cards, none, placement_pass::any_idle_card) == -1);
}

TEST_CASE("each task's home is the card with the least load assigned so far",
          "[engine][placement]") {
  std::vector<card_state> cards = idle_cards(2);
  // The kernelbench-l1 shape: one reference 30x heavier than the rest, arriving first.
  const std::vector<double> estimates{86, 3, 10, 8, 6, 2, 2, 5};
  std::vector<double> assigned(2, 0);
  std::vector<int32_t> homes;
  for (double load : estimates) {
    int32_t home = home_for(-1, assigned, cards);
    REQUIRE(home >= 0);
    homes.push_back(home);
    assigned[static_cast<size_t>(home)] += load;
  }
  // The heavy task has a card to itself; the seven light ones share the other.
  CHECK(homes == std::vector<int32_t>{0, 1, 1, 1, 1, 1, 1, 1});
  CHECK(assigned == std::vector<double>{86, 36});
  // A home kept from an earlier run stands, even on the loaded card; one out of range does not.
  CHECK(home_for(0, assigned, cards) == 0);
  CHECK(home_for(5, assigned, cards) == 1);
  // A dead card is nobody's home while a live one is left.
  cards[1].dead = true;
  CHECK(home_for(-1, assigned, cards) == 0);
  cards[0].dead = true;
  CHECK(home_for(-1, assigned, cards) == 1);
  CHECK(home_for(-1, std::vector<double>{}, std::vector<card_state>{}) == -1);
}

TEST_CASE("a slow parent is re-timed ahead on other cards, one for every two children",
          "[engine][placement]") {
  std::vector<int32_t> known{1}; // its record's card
  // Two cards: a card more for four children, none for two or three (waiting costs as much).
  CHECK(spread_cards(known, 2, 2, median(50), 20).empty());
  CHECK(spread_cards(known, 2, 3, median(50), 20).empty());
  CHECK(spread_cards(known, 2, 4, median(50), 20) == std::vector<int32_t>{0});
  // Four cards, eight children: the three after its own, in turn; six children: two.
  CHECK(spread_cards(known, 4, 8, median(50), 20) == std::vector<int32_t>{2, 3, 0});
  CHECK(spread_cards(known, 4, 6, median(50), 20) == std::vector<int32_t>{2, 3});
  // Cards where its time is known or being measured count already.
  std::vector<int32_t> two_known{1, 2};
  CHECK(spread_cards(two_known, 4, 6, median(50), 20) == std::vector<int32_t>{3});
  // A fast parent, an unmeasured one, one card or one child: nothing ahead.
  CHECK(spread_cards(known, 4, 8, median(5), 20).empty());
  CHECK(spread_cards(known, 4, 8, timing{}, 0).empty());
  CHECK(spread_cards(known, 1, 8, median(50), 20).empty());
  CHECK(spread_cards(known, 4, 1, median(50), 20).empty());
}

TEST_CASE("a final's rounds started at once are meant for different cards, from the home on",
          "[engine][placement]") {
  CHECK(final_round_card(1, 0, 2) == 1);
  CHECK(final_round_card(1, 1, 2) == 0);
  CHECK(final_round_card(2, 2, 4) == 0);
  CHECK(final_round_card(-1, 1, 3) == 1); // no home yet: from card 0
  CHECK(final_round_card(0, 3, 1) == 0);
}
