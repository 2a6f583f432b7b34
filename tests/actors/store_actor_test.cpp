#include "actors/actor_error.hpp"
#include "actors/store_actor.hpp"
#include "memory/store.hpp"

#include <memory>

#include "actor_fixture.hpp"
#include "test_context.hpp"

using namespace ks;

namespace {

std::shared_ptr<memory::store> open_store(const test::test_context& ctx) {
  auto opened = memory::store::open(ctx.dir() / "state");
  REQUIRE(opened);
  return std::make_shared<memory::store>(std::move(*opened));
}

engine::node_record node(engine::node_id id, engine::node_id parent, engine::node_status status,
                         std::string hash) {
  engine::node_record n;
  n.id = id;
  n.parent = parent;
  n.depth = parent < 0 ? 0 : 1;
  n.expansion = parent < 0 ? 0 : 1;
  n.plan = parent < 0 ? engine::reference_plan()
                      : engine::plan{"tile", "tile by 4", {{"n", std::to_string(id)}}};
  n.source_hash = std::move(hash);
  n.status = status;
  if (status == engine::node_status::accepted || status == engine::node_status::rejected) {
    n.disposition = engine::disposition::passed;
    n.time = engine::summarize({1.0, 1.1, 0.9});
  }
  return n;
}

} // namespace

TEST_CASE_METHOD(test::actor_fixture,
                 "the store actor acknowledges writes and gives a task's snapshot back",
                 "[actors]") {
  test::test_context ctx;
  auto store = actors::spawn_store(sys, open_store(ctx), actors::spawn_mode::scheduled);
  memory::task_state state;
  state.name = "softmax";
  state.phase = engine::task_phase::searching;
  engine::plan_outcome pending{
      node(2, 0, engine::node_status::coded, "").plan, 2, engine::outcome_kind::pending, {}, 0};
  self->send(store, actors::put_source{"h0", "reference text"});
  self->send(store, actors::put_source{"h2", "candidate text"});
  self->send(store, actors::put_task{state});
  self->send(store, actors::put_node{"softmax",
                                     node(0, -1, engine::node_status::accepted, "h0"),
                                     {"", "", "[]", ""}});
  self->send(store, actors::put_node{"softmax",
                                     node(1, 0, engine::node_status::rejected, "h1"),
                                     {"slower", "", "", ""}});
  self->send(store, actors::put_node{
                        "softmax", node(2, 0, engine::node_status::coded, "h2"), {"", "", "", ""}});
  self->send(store, actors::put_outcome{"softmax", 0, pending});
  self->send(store,
             actors::put_repair{"softmax", 2, engine::repair_round{1, "err", "diag", "fix"}});
  run();
  int acks = 0;
  while (reply<actors::ack>())
    ++acks;
  CHECK(acks == 8);

  self->send(store, actors::get_task{"softmax"});
  run();
  auto snapshot = reply<actors::task_snapshot>();
  REQUIRE(snapshot);
  CHECK(snapshot->has_state);
  CHECK(snapshot->state.phase == engine::task_phase::searching);
  REQUIRE(snapshot->nodes.size() == 3);
  CHECK(snapshot->nodes[1].status == engine::node_status::rejected);
  CHECK(snapshot->outcomes.at(0).front() == pending);
  CHECK(snapshot->repairs.at(2).front().fix_summary == "fix");
  // The sources and details a resume needs: the accepted root and the unfinished node 2,
  // not the rejected node 1.
  CHECK(snapshot->sources.size() == 2);
  CHECK(snapshot->sources.at("h0") == "reference text");
  CHECK(snapshot->sources.at("h2") == "candidate text");
  CHECK(snapshot->details.count(0) == 1);
  CHECK(snapshot->details.count(1) == 0);
  CHECK(snapshot->details.at(0).resources_json == "[]");
}

TEST_CASE_METHOD(test::actor_fixture,
                 "the store actor answers an unknown task with an empty "
                 "snapshot and keeps calibrations by uuid",
                 "[actors]") {
  test::test_context ctx;
  auto store = actors::spawn_store(sys, open_store(ctx), actors::spawn_mode::scheduled);
  self->send(store, actors::get_task{"nothing"});
  self->send(store, actors::get_calibration{"GPU-1"});
  self->send(store, actors::put_calibration{"GPU-1", "{\"v\":1}"});
  self->send(store, actors::get_calibration{"GPU-1"});
  self->send(store, actors::get_campaign{});
  run();
  auto empty = reply<actors::task_snapshot>();
  REQUIRE(empty);
  CHECK_FALSE(empty->has_state);
  CHECK(empty->nodes.empty());
  auto missing = reply<actors::calibration_reply>();
  REQUIRE(missing);
  CHECK_FALSE(missing->found);
  CHECK(reply<actors::ack>());
  auto found = reply<actors::calibration_reply>();
  REQUIRE(found);
  CHECK(found->found);
  CHECK(found->json == "{\"v\":1}");
  auto campaign = reply<actors::campaign_reply>();
  REQUIRE(campaign);
  CHECK_FALSE(campaign->found);
}

TEST_CASE_METHOD(test::actor_fixture, "the store actor answers a refused write with an error",
                 "[actors]") {
  test::test_context ctx;
  auto store = actors::spawn_store(sys, open_store(ctx), actors::spawn_mode::scheduled);
  // An empty task name cannot be a key.
  self->send(store, actors::put_node{"", node(0, -1, engine::node_status::planned, ""), {}});
  run();
  bool failed = false;
  self->receive([&](caf::error& e) { failed = !actors::describe(e).empty(); }, [](actors::ack&) {},
                caf::after(std::chrono::seconds(0)) >> [] {});
  CHECK(failed);
}

TEST_CASE_METHOD(test::actor_fixture,
                 "the store actor writes a batch of records in one transaction", "[actors]") {
  test::test_context ctx;
  auto db = open_store(ctx);
  auto store = actors::spawn_store(sys, db, actors::spawn_mode::scheduled);
  actors::put_batch batch;
  batch.sources.push_back(actors::put_source{"h0", "reference"});
  batch.nodes.push_back(
      actors::put_node{"t", node(0, -1, engine::node_status::accepted, "h0"), {}});
  batch.nodes.push_back(actors::put_node{"t", node(1, 0, engine::node_status::planned, ""), {}});
  batch.outcomes.push_back(actors::put_outcome{"t",
                                               0,
                                               {node(1, 0, engine::node_status::planned, "").plan,
                                                1,
                                                engine::outcome_kind::pending,
                                                {},
                                                0}});
  batch.skills.push_back(actors::put_skill_result{"tile", "f", "gpu", true, 0.5});
  self->send(store, batch);
  run();
  CHECK(reply<actors::ack>());
  auto nodes = db->nodes("t");
  REQUIRE(nodes);
  CHECK(nodes->size() == 2);
  auto stat = db->skill("tile", "f", "gpu");
  REQUIRE(stat);
  CHECK(stat->tries == 1);
  auto memory = db->short_term("t");
  REQUIRE(memory);
  CHECK(memory->tried_plans(0).size() == 1);
}
