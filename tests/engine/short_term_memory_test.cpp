#include "engine/short_term_memory.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace ks::engine;

namespace {

const plan tile64{"tile", "tile rows by 64", {{"bm", "64"}}};
const plan tile128{"tile", "tile rows by 128", {{"bm", "128"}}};
const plan vectorize{"vectorize", "16-byte loads", {{"width", "16"}}};

plan_outcome pending(const plan& p, node_id child) {
  return plan_outcome{p, child, outcome_kind::pending, "", 0};
}

} // namespace

TEST_CASE("short-term memory refuses repeats, however the plan is worded", "[engine][memory]") {
  short_term_memory memory;
  CHECK_FALSE(memory.was_tried(0, tile64));
  memory.record_outcome(0, pending(tile64, 1));
  CHECK(memory.was_tried(0, tile64));
  CHECK(memory.was_tried(0, plan{"TILE", "block the rows", {{"bm", "64.0"}}}));
  CHECK_FALSE(memory.was_tried(0, tile128)); // a stated change makes another plan
  CHECK_FALSE(memory.was_tried(1, tile64));  // tried on the root, not on node 1
}

TEST_CASE("an outcome replaces the pending entry of its plan in place", "[engine][memory]") {
  short_term_memory memory;
  memory.record_outcome(0, pending(tile64, 1));
  memory.record_outcome(0, pending(vectorize, 2));
  memory.record_outcome(0, plan_outcome{tile64, 1, outcome_kind::failed, "compile_error", 0});
  memory.record_outcome(0, plan_outcome{vectorize, 2, outcome_kind::accepted, "", 0.18});

  std::vector<plan_outcome> tried = memory.tried_plans(0);
  REQUIRE(tried.size() == 2);
  CHECK(tried[0].plan == tile64);
  CHECK(tried[0].outcome == outcome_kind::failed);
  CHECK(tried[0].failure_kind == "compile_error");
  CHECK(tried[1].outcome == outcome_kind::accepted);
  CHECK(tried[1].gain == Approx(0.18));
  auto found = memory.outcome_of(0, vectorize);
  REQUIRE(found);
  CHECK(found->child == 2);
  CHECK_FALSE(memory.outcome_of(0, tile128));
  CHECK(memory.tried_plans(5).empty());
}

TEST_CASE("repair rounds are numbered and kept per branch", "[engine][memory]") {
  short_term_memory memory;
  CHECK(memory.record_repair(4, {0, "error: identifier \"tid\" is undefined",
                                 "a variable renamed in one place only", "renamed it back"}) == 1);
  CHECK(memory.record_repair(4, {0, "wrong_result: max error 3e-2", "tail rows skipped",
                                 "bound the loop by rows, not by blocks"}) == 2);
  CHECK(memory.record_repair(9, {0, "timeout", "a barrier inside a branch", "hoisted it"}) == 1);

  std::vector<repair_round> rounds = memory.repairs(4);
  REQUIRE(rounds.size() == 2);
  CHECK(rounds[0].round == 1);
  CHECK(rounds[1].round == 2);
  CHECK(rounds[1].diagnosis == "tail rows skipped");
  CHECK(memory.repairs(9).size() == 1);
  CHECK(memory.repairs(5).empty());
}

TEST_CASE("a memory restored from its maps equals the original", "[engine][memory]") {
  short_term_memory memory;
  memory.record_outcome(0, plan_outcome{tile64, 1, outcome_kind::rejected, "", 0.01});
  memory.record_outcome(1, pending(vectorize, 3));
  memory.record_repair(1, {0, "error", "diagnosis", "fix"});

  short_term_memory restored{memory.outcomes(), memory.repairs()};
  CHECK(restored == memory);
  CHECK(restored.was_tried(0, tile64));

  // Equality sees every field: a round trip that lost one would fail.
  short_term_memory::outcome_map changed = memory.outcomes();
  changed[0][0].gain = 0.02;
  CHECK_FALSE(short_term_memory{changed, memory.repairs()} == memory);
  short_term_memory::repair_map lost = memory.repairs();
  lost[1][0].fix_summary.clear();
  CHECK_FALSE(short_term_memory{memory.outcomes(), lost} == memory);
}

TEST_CASE("outcome kinds keep their numbers and names", "[engine][memory]") {
  CHECK(static_cast<int>(outcome_kind::pending) == 0);
  CHECK(static_cast<int>(outcome_kind::failed) == 3);
  for (outcome_kind k : {outcome_kind::pending, outcome_kind::accepted, outcome_kind::rejected,
                         outcome_kind::failed})
    CHECK(parse_outcome_kind(to_string(k)) == k);
  CHECK_FALSE(parse_outcome_kind("maybe"));
}

TEST_CASE("a repair that returns a source already failed on the branch is a repeat", "[engine]") {
  // Round 1 repaired source "a" into "b"; round 2 repaired "b" into "c"; "c" is failing now.
  std::vector<repair_round> rounds{{1, "error 1", "d1", "f1", "b", "a"},
                                   {2, "error 2", "d2", "f2", "c", "b"}};
  CHECK(repeated_fix(rounds, "c", "b") == 1); // round 1's fix again
  CHECK(repeated_fix(rounds, "c", "c") == 2); // the failing source itself, round 2's fix
  CHECK(repeated_fix(rounds, "c", "a") == 0); // the coder's original source
  CHECK_FALSE(repeated_fix(rounds, "c", "d").has_value());
  // Before any round, only the failing source is a repeat; rounds without hashes match none.
  CHECK(repeated_fix({}, "a", "a") == 0);
  CHECK_FALSE(repeated_fix({}, "a", "b").has_value());
  CHECK_FALSE(repeated_fix({{1, "old", "", "", "", ""}}, "x", "").has_value());
}
