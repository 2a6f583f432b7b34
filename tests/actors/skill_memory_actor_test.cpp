#include "actors/store_actor.hpp"
#include "memory/skill_store.hpp"
#include "memory/store.hpp"

#include <memory>

#include "actor_fixture.hpp"
#include "test_context.hpp"

using namespace ks;

namespace {

engine::node_record timed_node(engine::node_id id, engine::node_id parent, double ms,
                               engine::node_status status) {
  engine::node_record n;
  n.id = id;
  n.parent = parent;
  n.depth = parent < 0 ? 0 : 1;
  n.expansion = parent < 0 ? 0 : 1;
  n.plan = parent < 0 ? engine::reference_plan()
                      : engine::plan{"tiles", "", {{"threads", "256"}}, 2, "grid"};
  n.status = status;
  n.disposition = engine::disposition::passed;
  n.time = engine::summarize({ms, ms, ms});
  return n;
}

// The verdict of node 1 as the supervisor writes it: the node, its outcome on node 0 and the
// try of its skill, one batch.
actors::put_batch verdict(const std::string& run_task) {
  engine::plan_outcome o{timed_node(1, 0, 1.0, engine::node_status::accepted).plan, 1,
                         engine::outcome_kind::accepted, "", 0.5};
  engine::skill_try t;
  t.skill = "tiles";
  t.skill_version = 2;
  t.template_name = "grid";
  t.params = {{"threads", "256"}};
  t.family = "elementwise";
  t.arch = "sm_90a";
  t.task = run_task;
  t.node = 1;
  t.parent = 0;
  t.outcome = engine::outcome_kind::accepted;
  t.gain = 0.5;
  t.reference_speedup = 2.0;
  actors::put_batch b;
  b.nodes.push_back({run_task, timed_node(1, 0, 1.0, engine::node_status::accepted), {}});
  b.outcomes.push_back({run_task, 0, o});
  b.skills.push_back({"tiles", "elementwise", "H100", true, 0.5, t});
  return b;
}

} // namespace

TEST_CASE_METHOD(test::actor_fixture,
                 "a verdict sent twice counts its skill's try once in long-term memory",
                 "[actors][skills]") {
  test::test_context ctx;
  auto db = memory::store::open(ctx.dir() / "state");
  REQUIRE(db);
  auto memory = memory::skill_store::open(ctx.dir() / "memory");
  REQUIRE(memory);
  auto skills = std::make_shared<memory::skill_store>(std::move(*memory));
  auto store = actors::spawn_store(sys, std::make_shared<memory::store>(std::move(*db)),
                                   actors::spawn_mode::scheduled, skills, "out@t0");
  memory::task_state state;
  state.name = "relu";
  self->send(store, actors::put_task{state});
  self->send(store,
             actors::put_node{"relu", timed_node(0, -1, 2.0, engine::node_status::accepted), {}});
  self->send(store, verdict("relu"));
  self->send(store, verdict("relu")); // a resumed supervisor judging the node again
  run();
  int acks = 0;
  while (reply<actors::ack>())
    ++acks;
  CHECK(acks == 4);
  self->send(store, actors::get_skill_stats{"elementwise", "sm_90a"});
  run();
  auto stats = reply<actors::skill_stats_reply>();
  REQUIRE(stats);
  REQUIRE(stats->stats.count("tiles") == 1);
  CHECK(stats->stats.at("tiles").tries == 1);
  CHECK(stats->stats.at("tiles").acceptances == 1);
  CHECK(stats->stats.at("tiles").best_params.at("threads") == "256");
  // A resume offers every settled try of the campaign's store again: still one.
  self->send(store, actors::reconcile_tries{{{"relu", "elementwise"}}, "sm_90a"});
  self->send(store, actors::get_skill_stats{"elementwise", "sm_90a"});
  run();
  CHECK(reply<actors::ack>());
  stats = reply<actors::skill_stats_reply>();
  REQUIRE(stats);
  CHECK(stats->stats.at("tiles").tries == 1);
}

TEST_CASE_METHOD(test::actor_fixture,
                 "a try that a kill kept out of long-term memory is counted when the campaign "
                 "resumes",
                 "[actors][skills]") {
  test::test_context ctx;
  {
    // The first run: the campaign's store committed the verdict, then the process died before
    // long-term memory counted it (no skill memory here at all).
    auto db = memory::store::open(ctx.dir() / "state");
    REQUIRE(db);
    auto store = actors::spawn_store(sys, std::make_shared<memory::store>(std::move(*db)),
                                     actors::spawn_mode::scheduled);
    memory::task_state state;
    state.name = "relu";
    self->send(store, actors::put_task{state});
    self->send(store,
               actors::put_node{"relu", timed_node(0, -1, 2.0, engine::node_status::accepted), {}});
    self->send(store, verdict("relu"));
    run();
    while (reply<actors::ack>()) {
    }
    self->send_exit(store, caf::exit_reason::user_shutdown);
    run();
  }
  auto db = memory::store::open(ctx.dir() / "state");
  REQUIRE(db);
  auto memory = memory::skill_store::open(ctx.dir() / "memory");
  REQUIRE(memory);
  auto skills = std::make_shared<memory::skill_store>(std::move(*memory));
  auto store = actors::spawn_store(sys, std::make_shared<memory::store>(std::move(*db)),
                                   actors::spawn_mode::scheduled, skills, "out@t0");
  self->send(store, actors::reconcile_tries{{{"relu", "elementwise"}}, "sm_90a"});
  self->send(store, actors::get_skill_stats{"elementwise", "sm_90a"});
  run();
  CHECK(reply<actors::ack>());
  auto stats = reply<actors::skill_stats_reply>();
  REQUIRE(stats);
  REQUIRE(stats->stats.count("tiles") == 1);
  CHECK(stats->stats.at("tiles").tries == 1);
  // The try was rebuilt from the node: its genotype and its speedup over the reference.
  CHECK(stats->stats.at("tiles").best_template == "grid");
  CHECK(stats->stats.at("tiles").best_speedup == Approx(2.0));
}
