#include "engine/node_action.hpp"
#include "engine/task_phase.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace ks::engine;

namespace {

node_record at(node_status status, disposition d = disposition::not_verified) {
  node_record n;
  n.id = 3;
  n.parent = 0;
  n.status = status;
  n.disposition = d;
  if (status == node_status::timed || status == node_status::accepted ||
      status == node_status::rejected) {
    n.disposition = disposition::passed;
    n.time = timing{1.0, 0.99, 1.01, 30, {}};
  }
  return n;
}

node_run_state run(bool source_known, bool compiled, bool card_available = true) {
  return node_run_state{source_known, compiled, card_available};
}

// Returns the record after the step `action` succeeded on `n`, as the supervisor writes it.
node_record after(node_record n, node_action action) {
  switch (action) {
  case node_action::code:
    n.status = node_status::coded;
    break;
  case node_action::compile:
    // Written as compiled when verification comes next; a verified or timed node keeps its
    // status.
    if (n.status == node_status::coded)
      n.status = node_status::compiled;
    break;
  case node_action::verify:
    n.status = node_status::verified;
    n.disposition = disposition::passed;
    break;
  case node_action::time:
    n.status = node_status::timed;
    n.time = timing{1.0, 0.99, 1.01, 30, {}};
    break;
  case node_action::judge:
    n.status = node_status::accepted;
    break;
  case node_action::none:
    break;
  }
  return n;
}

} // namespace

TEST_CASE("a node's next step follows its record and what this run holds of it",
          "[engine][node_action]") {
  // Every row of the table in node_action.hpp.
  CHECK(next_action(at(node_status::planned), run(false, false)) == node_action::code);
  CHECK(next_action(at(node_status::planned), run(true, false)) == node_action::code);
  CHECK(next_action(at(node_status::coded), run(true, false)) == node_action::compile);
  CHECK(next_action(at(node_status::coded), run(false, false)) == node_action::code);
  CHECK(next_action(at(node_status::coded), run(true, true)) == node_action::verify);
  CHECK(next_action(at(node_status::compiled), run(true, false)) == node_action::compile);
  CHECK(next_action(at(node_status::compiled), run(false, false)) == node_action::code);
  CHECK(next_action(at(node_status::compiled), run(true, true)) == node_action::verify);
  auto passed = at(node_status::verified, disposition::passed);
  CHECK(next_action(passed, run(true, false)) == node_action::compile);
  CHECK(next_action(passed, run(false, false)) == node_action::code);
  CHECK(next_action(passed, run(true, true)) == node_action::time);
  CHECK(next_action(at(node_status::timed), run(false, false)) == node_action::judge);
  CHECK(next_action(at(node_status::timed), run(true, false, false)) == node_action::compile);
  CHECK(next_action(at(node_status::timed), run(true, true, false)) == node_action::time);
}

TEST_CASE("a final node has no next step, whatever this run holds", "[engine][node_action]") {
  for (node_status s : {node_status::compile_failed, node_status::failed, node_status::crashed,
                        node_status::timed_out, node_status::rejected, node_status::accepted})
    for (bool compiled : {false, true}) {
      INFO(to_string(s) << (compiled ? ", compiled" : ""));
      CHECK(next_action(at(s), run(true, compiled)) == node_action::none);
      CHECK(next_action(at(s), run(false, compiled, false)) == node_action::none);
    }
  CHECK(next_action(at(node_status::verified, disposition::incorrect), run(true, true)) ==
        node_action::none);
}

TEST_CASE("a node resumed from any state it was written in goes on as the forward path would",
          "[engine][node_action]") {
  // Runs the table from `n` to the end: `compiled` says whether this process built the shared
  // object; the source is at hand once coded.
  auto walk = [](node_record n, bool compiled, std::vector<node_record>* written) {
    std::vector<node_action> steps;
    for (;;) {
      node_action a = next_action(n, run(n.status != node_status::planned, compiled));
      if (a == node_action::none)
        return steps;
      steps.push_back(a);
      if (steps.size() > 10)
        return steps;
      compiled = a == node_action::compile || (compiled && a != node_action::code);
      n = after(n, a);
      if (written != nullptr)
        written->push_back(n);
    }
  };
  std::vector<node_record> written{at(node_status::planned)};
  std::vector<node_action> forward = walk(written.front(), false, &written);
  REQUIRE(forward == std::vector<node_action>{node_action::code, node_action::compile,
                                              node_action::verify, node_action::time,
                                              node_action::judge});
  // A killed process leaves the last record written; the resumed one holds no shared object.
  // It compiles again (a cache hit) where the next step needs one, and otherwise takes the
  // steps the forward path had left: nothing final is redone, nothing verified twice.
  for (size_t k = 0; k < forward.size(); ++k) {
    INFO("killed after " << k << " steps, at " << to_string(written[k].status));
    std::vector<node_action> expected(forward.begin() + static_cast<ptrdiff_t>(k), forward.end());
    if (expected.front() == node_action::verify || expected.front() == node_action::time)
      expected.insert(expected.begin(), node_action::compile);
    CHECK(walk(written[k], false, nullptr) == expected);
  }
}

TEST_CASE("a task's phase keeps its number and its name", "[engine][task_phase]") {
  // The store keeps phases by number: these may never change.
  CHECK(static_cast<int32_t>(task_phase::pending) == 0);
  CHECK(static_cast<int32_t>(task_phase::searching) == 1);
  CHECK(static_cast<int32_t>(task_phase::finals) == 2);
  CHECK(static_cast<int32_t>(task_phase::done) == 3);
  CHECK(static_cast<int32_t>(task_phase::failed) == 4);
  for (int32_t i = 0; i < task_phase_count; ++i) {
    auto p = static_cast<task_phase>(i);
    CHECK(task_phase_from_number(i) == p);
    CHECK(parse_task_phase(to_string(p)) == p);
  }
  CHECK_FALSE(task_phase_from_number(-1));
  CHECK_FALSE(task_phase_from_number(task_phase_count));
  CHECK_FALSE(parse_task_phase("dry_run"));
  CHECK(is_end(task_phase::done));
  CHECK(is_end(task_phase::failed));
  CHECK_FALSE(is_end(task_phase::finals));
  CHECK_FALSE(is_end(task_phase::searching));
  CHECK_FALSE(is_end(task_phase::pending));
}
