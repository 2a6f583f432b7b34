// A supervisor's whole task on the testing scheduler: the real supervisor, store, roles, judge
// and analyst; a fake compiler and a fake bench that read what to do from the source text
// ("median=X", "compile_error", "wrong"), and a fake agent backend. Deterministic, no GPU,
// no nvcc.

#include "actors/actor_error.hpp"
#include "actors/dry_run_actor.hpp"
#include "actors/supervisor_actor.hpp"
#include "engine/agent_backend.hpp"
#include "memory/store.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "actor_fixture.hpp"
#include "test_context.hpp"

using namespace ks;

namespace {

// -- a fake agent backend -----------------------------------------------------------------------

// Plans tile(n=1..4) on every parent. Each plan's code multiplies the parent's median by a
// factor: n=1 halves it, n=2 keeps it (rejected), n=3 does not compile until repaired (then
// 0.8), n=4 gives wrong results and cannot be repaired.
class fake_backend final : public engine::agent_backend {
public:
  std::string_view name() const noexcept override { return "fake"; }

  engine::expected<std::vector<engine::plan>> propose(const engine::planning_request& r) override {
    std::vector<engine::plan> out;
    for (int n = 1; n <= 4 && static_cast<int64_t>(out.size()) < r.count; ++n) {
      engine::plan p{"tile", "tile by " + std::to_string(n), {{"n", std::to_string(n)}}};
      bool tried = false;
      for (const engine::plan_outcome& o : r.tried)
        tried = tried || engine::same_plan(o.plan, p);
      if (!tried)
        out.push_back(p);
    }
    return out;
  }

  engine::expected<std::string> write_code(const engine::coding_request& r) override {
    double median = median_of(r.parent_source);
    int n = std::stoi(r.plan.params.at("n"));
    switch (n) {
    case 1:
      return "median=" + text(median * 0.5);
    case 2:
      return "median=" + text(median);
    case 3:
      return "compile_error fixable median=" + text(median * 0.8);
    default:
      return "wrong median=" + text(median);
    }
  }

  static std::string text(double x) {
    std::ostringstream out;
    out.precision(17);
    out << x;
    return out.str();
  }

  engine::expected<engine::repair_reply> repair(const engine::repair_request& r) override {
    engine::repair_reply out;
    auto at = r.source.find("fixable ");
    if (at == std::string::npos) {
      out.gave_up = true;
      out.diagnosis = "cannot fix this";
      return out;
    }
    out.source = r.source.substr(at + 8);
    out.diagnosis = "a typo";
    out.fix_summary = "fixed the typo";
    return out;
  }

  static double median_of(const std::string& text) {
    auto at = text.find("median=");
    return at == std::string::npos ? 1.0 : std::strtod(text.c_str() + at + 7, nullptr);
  }
};

// -- a fake compiler and bench -----------------------------------------------------------------

/// Counts the compiles of each source.
using compile_counts = std::map<std::string, int>;

/// Compiles a source unless it holds "compile_error"; counts each source's compiles in
/// `counts` when given.
actors::compiler_actor::behavior_type fake_compiler(std::shared_ptr<compile_counts> counts) {
  return {
      [counts](actors::compile_job& job) {
        if (counts)
          ++(*counts)[job.source];
        actors::compile_done out;
        out.ok = job.source.find("compile_error") == std::string::npos;
        if (out.ok)
          out.shared_object = "so:" + job.source;
        else
          out.diagnostics = "kernel.cu(1): error: scripted compile error";
        return out;
      },
  };
}

struct bench_counts {
  int64_t verify = 0;
  int64_t time = 0;
};

/// Returns a timing result of `median` ms (ten trials, a 2% spread, the samples with it).
gpu::timing_result timing_of(double median) {
  gpu::timing_result t;
  t.median_ms = median;
  t.p10_ms = median * 0.99;
  t.p90_ms = median * 1.01;
  t.trials = 10;
  for (int i = 0; i < t.trials; ++i)
    t.samples_ms.push_back(median * (0.99 + 0.02 * i / (t.trials - 1)));
  return t;
}

actors::bench_actor::behavior_type fake_bench(actors::bench_actor::pointer,
                                              std::shared_ptr<bench_counts> counts) {
  return {
      [counts](actors::bench_job& job) {
        actors::bench_result r;
        r.kind = job.kind;
        r.gpu = 0;
        r.busy_ms = 1;
        if (job.kind == actors::bench_kind::verify) {
          ++counts->verify;
          r.ok = job.kernel.find("wrong") == std::string::npos;
          r.payload = gpu::verify_result{r.ok};
          if (!r.ok) {
            r.failure = static_cast<int32_t>(gpu::failure_kind::wrong_result);
            r.message = "output y differs";
          }
          return r;
        }
        ++counts->time;
        double median = fake_backend::median_of(job.kernel);
        r.ok = true;
        r.payload = timing_of(median);
        return r;
      },
  };
}

// Two cards behind one actor, as the dispatcher shows them: a job pinned to a card runs there,
// an unpinned one on the cards in turn (whatever it prefers: as if the other were busy). Card 1
// is 20% faster than card 0 for every kernel, as two cards of one model may differ (less).
struct two_card_state {
  int64_t turn = 0;
  std::shared_ptr<std::vector<actors::bench_job>> log;
};

actors::bench_actor::behavior_type
two_card_bench(actors::bench_actor::stateful_pointer<two_card_state> self,
               std::shared_ptr<std::vector<actors::bench_job>> log) {
  self->state.log = std::move(log);
  return {
      [self](actors::bench_job& job) {
        int32_t card = job.gpu >= 0 ? job.gpu : static_cast<int32_t>(self->state.turn++ % 2);
        job.gpu = card;
        self->state.log->push_back(job);
        actors::bench_result r;
        r.kind = job.kind;
        r.gpu = card;
        r.busy_ms = 1;
        r.ok =
            job.kind != actors::bench_kind::verify || job.kernel.find("wrong") == std::string::npos;
        r.payload = gpu::verify_result{r.ok};
        if (!r.ok) {
          r.failure = static_cast<int32_t>(gpu::failure_kind::wrong_result);
          r.message = "output y differs";
        }
        if (job.kind == actors::bench_kind::time)
          r.payload = timing_of(fake_backend::median_of(job.kernel) * (card == 1 ? 0.8 : 1.0));
        return r;
      },
  };
}

// -- the fixture -------------------------------------------------------------------------------

struct supervisor_fixture : test::actor_fixture {
  test::test_context ctx;
  std::shared_ptr<memory::store> db;
  actors::store_actor store;
  std::shared_ptr<bench_counts> counts = std::make_shared<bench_counts>();
  actors::supervisor_setup setup;

  supervisor_fixture() {
    auto opened = memory::store::open(ctx.dir() / "state");
    REQUIRE(opened);
    db = std::make_shared<memory::store>(std::move(*opened));
    store = actors::spawn_store(sys, db, actors::spawn_mode::scheduled);
    auto table = std::make_shared<actors::task_table>();
    engine::task t;
    t.name = "t";
    t.family = "f";
    t.manifest_path = ctx.write("t.toml", "");
    t.reference_path = ctx.write("t_ref.cu", "reference median=2.0");
    t.cost = engine::task_cost{1e6, 1e6};
    table->emplace(t.name, t);
    setup.task = "t";
    setup.gpu_name = "Fake GPU";
    setup.peak_gbps = 1000;
    setup.peak_gflops = 10000;
    setup.limits.branches = 4;
    setup.limits.max_depth = 2;
    setup.limits.candidate_budget = 12;
    setup.limits.roofline_target = 0;
    setup.limits.patience = 2;
    setup.repair_rounds = 1;
    setup.finalists = 3;
    setup.final_rounds = 3;
    setup.tasks = table;
    setup.team.store = store;
    setup.team.compiler = sys.spawn(fake_compiler, std::shared_ptr<compile_counts>{});
    setup.team.bench = sys.spawn(fake_bench, counts);
    auto sched_mode = actors::spawn_mode::scheduled;
    setup.team.planners.push_back(
        actors::spawn_planner(sys, std::make_shared<fake_backend>(), table, sched_mode));
    setup.team.coders.push_back(
        actors::spawn_coder(sys, std::make_shared<fake_backend>(), table, sched_mode));
    setup.team.repairers.push_back(
        actors::spawn_repairer(sys, std::make_shared<fake_backend>(), table, sched_mode));
    setup.team.analyst = actors::spawn_analyst(sys, table);
    setup.team.judge = actors::spawn_judge(sys, engine::judge_options{});
  }

  std::vector<engine::node_record> stored_nodes() {
    auto nodes = db->nodes("t");
    REQUIRE(nodes);
    return *nodes;
  }
};

} // namespace

TEST_CASE_METHOD(supervisor_fixture,
                 "a supervisor runs a task from its reference to a winner and stores every node",
                 "[actors]") {
  auto supervisor = actors::spawn_supervisor(sys, setup);
  self->send(supervisor, actors::run_task{});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::done);
  CHECK(report->reference_ms == Approx(2.0));
  // tile(n=1) twice in a row: 2.0 -> 1.0 -> 0.5 (depth 2 is the limit).
  CHECK(report->best_ms == Approx(0.5).epsilon(0.02));
  CHECK(report->speedup == Approx(4.0).epsilon(0.02));
  CHECK(report->fraction_of_roofline > 0);

  auto nodes = stored_nodes();
  CHECK(static_cast<int64_t>(nodes.size()) == report->nodes);
  CHECK(static_cast<int64_t>(nodes.size()) <= 1 + setup.limits.candidate_budget);
  int64_t accepted = 0, rejected = 0, incorrect = 0, repaired = 0;
  for (const engine::node_record& n : nodes) {
    INFO("node " << n.id << " " << engine::to_string(n.status));
    CHECK(engine::is_final(n));
    if (n.time.measured()) // the judge ranks these; a resume reads them back
      CHECK(n.time.samples_ms.size() == 10);
    accepted += n.status == engine::node_status::accepted ? 1 : 0;
    rejected += n.status == engine::node_status::rejected ? 1 : 0;
    incorrect += n.disposition == engine::disposition::incorrect ? 1 : 0;
  }
  CHECK(accepted >= 3); // the root, tile(n=1) and the repaired tile(n=3)
  CHECK(rejected >= 1);
  CHECK(incorrect >= 1);
  auto memory = db->short_term("t");
  REQUIRE(memory);
  for (const auto& [parent, outcomes] : memory->outcomes())
    for (const engine::plan_outcome& o : outcomes)
      CHECK(o.outcome != engine::outcome_kind::pending);
  for (const auto& [branch, rounds] : memory->repairs())
    repaired += static_cast<int64_t>(rounds.size());
  CHECK(repaired >= 1);

  auto state = db->task("t");
  REQUIRE(state);
  REQUIRE(*state);
  CHECK((*state)->phase == engine::task_phase::done);
  CHECK((*state)->winner == report->winner);
  CHECK(nodes[static_cast<size_t>(report->winner)].status == engine::node_status::accepted);
  CHECK(report->verified == counts->verify - 1); // the reference's own check not counted
  auto stat = db->skill("tile", "f", "Fake GPU");
  REQUIRE(stat);
  CHECK(stat->tries == report->nodes - 1);

  // Run again on the same store: the task is done, nothing is measured again.
  int64_t measured = counts->verify + counts->time;
  auto again = actors::spawn_supervisor(sys, setup);
  self->send(again, actors::run_task{});
  run();
  auto second = reply<actors::task_report>();
  REQUIRE(second);
  CHECK(second->phase == engine::task_phase::done);
  CHECK(second->nodes == report->nodes);
  CHECK(counts->verify + counts->time == measured);
}

TEST_CASE_METHOD(supervisor_fixture,
                 "on two cards a child is judged against its parent timed on its own card, and "
                 "the final's rounds run on both",
                 "[actors]") {
  // Parents are slow enough to be re-timed on the other card while their children verify, or
  // too fast for it (re-timed only when a child lands on the other card).
  bool spread = GENERATE(true, false);
  setup.spread_min_median_ms = spread ? 0 : 1e9;
  auto log = std::make_shared<std::vector<actors::bench_job>>();
  setup.team.bench = sys.spawn(two_card_bench, log);
  setup.gpus = {actors::gpu_peaks{"Fake GPU", 1000, 10000},
                actors::gpu_peaks{"Fake GPU", 1000, 10000}};
  setup.home_gpu = 0;
  auto supervisor = actors::spawn_supervisor(sys, setup);
  self->send(supervisor, actors::run_task{});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::done);

  // tile(n=2) keeps its parent's speed: on card 1 it looks 20% faster than the parent's time on
  // card 0, so only a comparison on one card rejects it. tile(n=1) halves it: accepted.
  int64_t on_card1 = 0, same_speed = 0;
  for (const engine::node_record& n : stored_nodes()) {
    if (n.id == 0 || !n.time.measured())
      continue;
    auto detail = db->detail("t", n.id);
    REQUIRE(detail);
    REQUIRE(*detail);
    INFO("node " << n.id << " " << n.plan.description << " timed on GPU " << (*detail)->timed_gpu);
    CHECK((*detail)->timed_gpu >= 0);
    on_card1 += (*detail)->timed_gpu == 1 ? 1 : 0;
    if (n.plan.params.at("n") == "2") {
      ++same_speed;
      CHECK(n.status == engine::node_status::rejected);
    }
    if (n.plan.params.at("n") == "1")
      CHECK(n.status == engine::node_status::accepted);
  }
  CHECK(on_card1 >= 1);
  CHECK(same_speed >= 1);

  // Parents were re-timed on the other card, once per parent and card at most; the final ran on
  // both cards.
  std::map<std::pair<std::string, int32_t>, int64_t> retimed;
  std::set<int32_t> final_cards;
  for (const actors::bench_job& job : *log) {
    if (job.purpose == engine::bench_purpose::retime)
      ++retimed[{job.kernel, job.gpu}];
    if (job.purpose == engine::bench_purpose::final_round)
      final_cards.insert(job.gpu);
  }
  CHECK_FALSE(retimed.empty());
  for (const auto& [kernel_on_card, times] : retimed)
    CHECK(times == 1);
  // With spreading, a parent is re-timed on the other card before any child is timed there.
  if (spread) {
    bool timed_before_children = false;
    for (const actors::bench_job& job : *log) {
      if (job.purpose == engine::bench_purpose::retime) {
        timed_before_children = true;
        break;
      }
      if (job.purpose == engine::bench_purpose::branch_time)
        break;
    }
    CHECK(timed_before_children);
  }
  CHECK(final_cards == std::set<int32_t>{0, 1});
  // Verifications prefer the cards that verified before (their workers cache the reference's
  // outputs): the first asks for none, later ones for cards that ran an earlier one.
  std::set<int32_t> verified_on;
  int64_t verifies = 0, preferring = 0;
  for (const actors::bench_job& job : *log) {
    if (job.kind != actors::bench_kind::verify)
      continue;
    if (verifies++ == 0)
      CHECK(job.prefer.empty());
    preferring += job.prefer.empty() ? 0 : 1;
    for (int32_t card : job.prefer)
      CHECK(verified_on.count(card) == 1);
    verified_on.insert(job.gpu);
  }
  CHECK(preferring >= 1);
  // The cards share the final's slots evenly (finalists x rounds of them: the three fastest
  // and the reference, which is always a finalist): a card left without a round takes the last
  // slots of the other's.
  std::map<int32_t, int64_t> final_slots;
  int64_t reference_slots = 0;
  for (const actors::bench_job& job : *log)
    if (job.purpose == engine::bench_purpose::final_round) {
      ++final_slots[job.gpu];
      reference_slots += job.label == "t#0 (final)" ? 1 : 0;
    }
  INFO("final slots: card 0 " << final_slots[0] << ", card 1 " << final_slots[1]);
  CHECK(std::abs(final_slots[0] - final_slots[1]) <= 1);
  CHECK(final_slots[0] + final_slots[1] == 4 * static_cast<int64_t>(setup.final_rounds));
  CHECK(reference_slots == setup.final_rounds);
  // The winner's time is on the home card's scale (the card that timed the reference) although
  // the other card timed about half the final.
  auto state = db->task("t");
  REQUIRE(state);
  REQUIRE(*state);
  int32_t home = (*state)->home_gpu;
  REQUIRE((home == 0 || home == 1));
  auto root_detail = db->detail("t", 0);
  REQUIRE(root_detail);
  REQUIRE(*root_detail);
  CHECK((*root_detail)->timed_gpu == home);
  CHECK(report->best_ms == Approx(home == 1 ? 0.4 : 0.5).epsilon(0.02));
}

TEST_CASE_METHOD(supervisor_fixture,
                 "a slow parent is re-timed on another card ahead of its children only when two "
                 "or more of them can be timed there",
                 "[actors]") {
  size_t branches = GENERATE(2, 3, 4);
  setup.limits.branches = static_cast<int64_t>(branches);
  setup.spread_min_median_ms = 0; // every parent counts as slow
  auto log = std::make_shared<std::vector<actors::bench_job>>();
  setup.team.bench = sys.spawn(two_card_bench, log);
  setup.gpus = {actors::gpu_peaks{"Fake GPU", 1000, 10000},
                actors::gpu_peaks{"Fake GPU", 1000, 10000}};
  auto supervisor = actors::spawn_supervisor(sys, setup);
  self->send(supervisor, actors::run_task{});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::done);

  std::map<engine::node_id, size_t> children;
  for (const engine::node_record& n : stored_nodes())
    if (n.id != 0)
      ++children[n.parent];
  // A re-timing of parent P on card g is ahead of its children when no child of P has been
  // timed on g yet (the two-card bench deals unpinned jobs to the cards in turn).
  auto parent_of = [&](const std::string& label) -> engine::node_id {
    for (const engine::node_record& n : stored_nodes())
      if (label == "t#" + std::to_string(n.id))
        return n.parent;
    return -1;
  };
  std::set<std::pair<engine::node_id, int32_t>> child_timed_on;
  int64_t ahead = 0;
  for (const actors::bench_job& job : *log) {
    if (job.purpose != engine::bench_purpose::retime &&
        job.purpose != engine::bench_purpose::branch_time)
      continue;
    size_t hash = job.label.find('#'), space = job.label.find(' ');
    if (job.purpose == engine::bench_purpose::retime) {
      engine::node_id parent = std::stoll(job.label.substr(hash + 1, space - hash - 1));
      if (child_timed_on.count({parent, job.gpu}) == 0) {
        INFO("t#" << parent << " re-timed on GPU " << job.gpu << " ahead of its "
                  << children[parent] << " children");
        CHECK(branches >= 4);
        ++ahead;
      }
    } else {
      child_timed_on.insert({parent_of(job.label), job.gpu});
    }
  }
  if (branches >= 4)
    CHECK(ahead >= 1);
}

TEST_CASE_METHOD(supervisor_fixture,
                 "a supervisor killed at any point resumes without losing or redoing a final node",
                 "[actors]") {
  // The uninterrupted run, for the node count a resumed one must reach.
  int64_t full_nodes = 0;
  {
    test::test_context other;
    auto opened = memory::store::open(other.dir() / "state");
    REQUIRE(opened);
    auto other_db = std::make_shared<memory::store>(std::move(*opened));
    auto s = setup;
    s.team.store = actors::spawn_store(sys, other_db, actors::spawn_mode::scheduled);
    auto supervisor = actors::spawn_supervisor(sys, s);
    self->send(supervisor, actors::run_task{});
    run();
    auto report = reply<actors::task_report>();
    REQUIRE(report);
    full_nodes = report->nodes;
  }
  for (size_t cut : {3u, 10u, 25u, 40u, 60u, 90u, 130u, 180u}) {
    test::test_context run_ctx;
    auto opened = memory::store::open(run_ctx.dir() / "state");
    REQUIRE(opened);
    auto run_db = std::make_shared<memory::store>(std::move(*opened));
    auto s = setup;
    s.team.store = actors::spawn_store(sys, run_db, actors::spawn_mode::scheduled);
    auto first = actors::spawn_supervisor(sys, s);
    self->send(first, actors::run_task{});
    sched.run(cut);
    self->send_exit(first, caf::exit_reason::kill);
    run();
    while (reply<actors::task_report>()) {
    }
    std::map<engine::node_id, engine::node_record> final_before;
    auto before = run_db->nodes("t");
    REQUIRE(before);
    for (const engine::node_record& n : *before)
      if (engine::is_final(n))
        final_before.emplace(n.id, n);

    auto second = actors::spawn_supervisor(sys, s);
    self->send(second, actors::run_task{});
    run();
    auto report = reply<actors::task_report>();
    INFO("killed after " << cut << " scheduler steps, " << final_before.size()
                         << " final nodes stored");
    REQUIRE(report);
    CHECK(report->phase == engine::task_phase::done);
    CHECK(report->nodes == full_nodes);
    auto after = run_db->nodes("t");
    REQUIRE(after);
    // A final node keeps its record; only an accepted node's expansion state may change
    // (the planner may run out of plans for it later).
    for (const auto& [id, n] : final_before) {
      REQUIRE(static_cast<size_t>(id) < after->size());
      engine::node_record later = (*after)[static_cast<size_t>(id)];
      INFO("node " << id << ": status " << engine::to_string(n.status) << " -> "
                   << engine::to_string(later.status) << ", hash " << n.source_hash << " -> "
                   << later.source_hash << ", median " << n.time.median_ms << " -> "
                   << later.time.median_ms);
      if (n.status == engine::node_status::accepted)
        later.expansion_state = n.expansion_state;
      CHECK(later == n);
    }
    for (const engine::node_record& n : *after)
      CHECK(engine::is_final(n));
  }
}

TEST_CASE_METHOD(supervisor_fixture,
                 "an interrupted supervisor records its work in flight and starts nothing new",
                 "[actors]") {
  auto supervisor = actors::spawn_supervisor(sys, setup);
  self->send(supervisor, actors::run_task{});
  sched.run(40);
  int64_t measured = counts->verify + counts->time;
  self->send(supervisor, actors::stop_msg{actors::stop_kind::interrupt, "test"});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->stop_reason == "interrupted");
  CHECK(report->phase == engine::task_phase::searching);
  // At most the jobs already in flight were answered after the interrupt.
  CHECK(counts->verify + counts->time <= measured + setup.limits.branches);
  auto state = db->task("t");
  REQUIRE(state);
  REQUIRE(*state);
  CHECK((*state)->phase == engine::task_phase::searching);
}

TEST_CASE_METHOD(supervisor_fixture,
                 "a child timed on a GPU the resumed run does not have is timed again, then "
                 "judged",
                 "[actors]") {
  // The store of a run on two GPUs, killed after child 1 was timed on GPU 1 and before the
  // judge: the reference accepted (timed on GPU 0), the child timed, its outcome pending.
  memory::task_state state{"t", (ctx.dir() / "t.toml").string()};
  state.phase = engine::task_phase::searching;
  state.home_gpu = 0;
  REQUIRE(db->put_task(state));
  REQUIRE(db->put_source("test-reference", "reference median=2.0"));
  REQUIRE(db->put_source("test-child", "median=1"));
  engine::node_record root;
  root.source_hash = "test-reference";
  root.status = engine::node_status::accepted;
  root.disposition = engine::disposition::passed;
  root.time = engine::timing{2.0, 1.98, 2.02, 10, {}};
  memory::node_detail root_detail;
  root_detail.timed_gpu = 0;
  REQUIRE(db->put_node("t", root, root_detail));
  engine::plan tile1{"tile", "tile by 1", {{"n", "1"}}};
  engine::node_record child;
  child.id = 1;
  child.parent = 0;
  child.depth = 1;
  child.expansion = 1;
  child.plan = tile1;
  child.source_hash = "test-child";
  child.status = engine::node_status::timed;
  child.disposition = engine::disposition::passed;
  child.time = engine::timing{0.8, 0.79, 0.81, 10, {}};
  memory::node_detail child_detail;
  child_detail.timed_gpu = 1;
  REQUIRE(db->put_node("t", child, child_detail));
  REQUIRE(db->put_outcome("t", 0,
                          engine::plan_outcome{tile1, 1, engine::outcome_kind::pending, {}, 0}));

  // Resumed on one GPU.
  setup.gpus = {actors::gpu_peaks{"Fake GPU", 1000, 10000}};
  auto supervisor = actors::spawn_supervisor(sys, setup);
  self->send(supervisor, actors::run_task{});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::done);
  auto nodes = stored_nodes();
  REQUIRE(nodes.size() > 1);
  CHECK(nodes[1].status == engine::node_status::accepted);
  CHECK(nodes[1].time.median_ms == Approx(1.0)); // timed again here, not 0.8 from GPU 1
  auto detail = db->detail("t", 1);
  REQUIRE(detail);
  REQUIRE(*detail);
  CHECK((*detail)->timed_gpu == 0);
}

TEST_CASE_METHOD(supervisor_fixture, "a supervisor whose reference fails ends the task as failed",
                 "[actors]") {
  ctx.write("t_ref.cu", "compile_error in the reference");
  auto supervisor = actors::spawn_supervisor(sys, setup);
  self->send(supervisor, actors::run_task{});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::failed);
  CHECK(report->stop_reason == "reference_failed");
  // The report says what failed, in the compiler's words.
  CHECK(report->stop_text.find("compile_error") != std::string::npos);
  CHECK(report->nodes == 1);
  auto nodes = stored_nodes();
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0].status == engine::node_status::compile_failed);
}

namespace {

// The dry run of the fixture's task: its supervisor's team, one round of K = 4, candidates
// written below the test's folder.
actors::dry_run_setup dry_run_of(const actors::supervisor_setup& setup,
                                 const std::filesystem::path& folder) {
  actors::dry_run_setup d;
  d.task = setup.task;
  d.tasks = setup.tasks;
  d.team = setup.team;
  d.count = 4;
  d.arch = "sm_90a";
  d.folder = folder;
  return d;
}

} // namespace

TEST_CASE_METHOD(supervisor_fixture,
                 "a dry run compiles its reference and one round of plans, writes each "
                 "candidate, measures nothing and stores nothing",
                 "[actors]") {
  auto dry = actors::spawn_dry_run(sys, dry_run_of(setup, ctx.dir() / "dry-run" / "t"));
  self->send(dry, actors::run_task{});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::done);
  CHECK(report->stop_reason.empty());
  CHECK(report->stop_text.empty());
  CHECK(counts->verify + counts->time == 0);
  CHECK(stored_nodes().empty());
  // The reference, the planner's line, and one line per plan (K = 4).
  REQUIRE(report->dry_run_lines.size() == 6);
  CHECK(report->dry_run_lines[0].find("reference compiled for sm_90a") != std::string::npos);
  int64_t failing = 0;
  for (const std::string& line : report->dry_run_lines)
    if (line.find("does not compile") != std::string::npos) {
      ++failing;
      // nvcc's kernel.cu is named as the candidate's file, at nvcc's line.
      CHECK(line.find("3_tile.cu:1: error: scripted compile error") != std::string::npos);
    }
  CHECK(failing == 1);
  int64_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ctx.dir() / "dry-run" / "t"))
    files += entry.path().extension() == ".cu" ? 1 : 0;
  CHECK(files == 4);
}

TEST_CASE_METHOD(supervisor_fixture,
                 "a dry run whose reference does not compile says the task cannot run, naming "
                 "the reference's file and line",
                 "[actors]") {
  ctx.write("t_ref.cu", "compile_error in the reference");
  auto dry = actors::spawn_dry_run(sys, dry_run_of(setup, ctx.dir() / "dry-run" / "t"));
  self->send(dry, actors::run_task{});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::failed);
  CHECK(report->stop_text.find("does not compile for sm_90a") != std::string::npos);
  CHECK(report->stop_text.find("t_ref.cu:1: error: scripted compile error") != std::string::npos);
}

TEST_CASE_METHOD(supervisor_fixture,
                 "a dry run whose planner fails says the task cannot run, with the planner's "
                 "words",
                 "[actors]") {
  // A planner that cannot plan for this task (a backend that fails on it).
  auto failing = sys.spawn([]() -> actors::planner_actor::behavior_type {
    return {
        [](const actors::plan_request&) -> caf::result<actors::plan_reply> {
          return actors::make_actor_error(actors::actor_errc::backend,
                                          "no skill applies to family 'f'");
        },
    };
  });
  setup.team.planners = {failing};
  auto dry = actors::spawn_dry_run(sys, dry_run_of(setup, ctx.dir() / "dry-run" / "t"));
  self->send(dry, actors::run_task{});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::failed);
  CHECK(report->stop_text.find("the planner failed: no skill applies to family 'f'") !=
        std::string::npos);
}

TEST_CASE_METHOD(supervisor_fixture, "a dry run stops at once when interrupted", "[actors]") {
  auto dry = actors::spawn_dry_run(sys, dry_run_of(setup, ctx.dir() / "dry-run" / "t"));
  self->send(dry, actors::run_task{});
  sched.run_once(); // it starts: the reference's compile is asked for
  self->send(dry, actors::stop_msg{actors::stop_kind::interrupt, "interrupted"});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->stop_reason == "interrupted");
  CHECK(report->dry_run_lines.size() < 6); // it did not go on to the end
}

namespace {

// A store that keeps nothing and answers at once: what is left is the actors' own cost.
actors::store_actor::behavior_type null_store() {
  return {
      [](const actors::put_node&) { return actors::ack{}; },
      [](const actors::put_source&) { return actors::ack{}; },
      [](const actors::put_outcome&) { return actors::ack{}; },
      [](const actors::put_repair&) { return actors::ack{}; },
      [](const actors::put_task&) { return actors::ack{}; },
      [](const actors::put_campaign&) { return actors::ack{}; },
      [](const actors::put_calibration&) { return actors::ack{}; },
      [](const actors::put_skill_result&) { return actors::ack{}; },
      [](const actors::put_batch&) { return actors::ack{}; },
      [](const actors::get_task&) { return actors::task_snapshot{}; },
      [](const actors::get_campaign&) { return actors::campaign_reply{}; },
      [](const actors::get_calibration&) { return actors::calibration_reply{}; },
      [](const actors::write_outputs&) { return actors::ack{}; },
      [](const actors::get_skill_stats&) { return actors::skill_stats_reply{}; },
      [](const actors::reconcile_tries&) { return actors::ack{}; },
      [](const actors::put_learned_skill&) { return actors::ack{}; },
      [](const actors::put_transcript&) { return actors::ack{}; },
  };
}

} // namespace

// Not a test but a measurement (hidden: run with "[benchmark]"): supervisors on CAF's real
// scheduler against a store, compiler and bench that answer at once, so the time per
// candidate is the actor layer's own (messages, the tree, the judge, the backend's bookkeeping).
namespace {

void measure_overhead(bool real_store) {
  test::test_context ctx;
  caf::actor_system_config cfg;
  caf::actor_system sys(cfg);
  caf::scoped_actor self(sys);
  auto table = std::make_shared<actors::task_table>();
  const int tasks = 8;
  std::vector<actors::supervisor_setup> setups;
  actors::team team;
  std::shared_ptr<memory::store> db;
  if (real_store) {
    auto opened = memory::store::open(ctx.dir() / "state");
    REQUIRE(opened);
    db = std::make_shared<memory::store>(std::move(*opened));
    team.store = actors::spawn_store(sys, db);
  } else {
    team.store = sys.spawn(null_store);
  }
  team.compiler = sys.spawn(fake_compiler, std::shared_ptr<compile_counts>{});
  auto counts = std::make_shared<bench_counts>();
  team.bench = sys.spawn(fake_bench, counts);
  team.planners.push_back(actors::spawn_planner(sys, std::make_shared<fake_backend>(), table,
                                                actors::spawn_mode::scheduled));
  team.coders.push_back(actors::spawn_coder(sys, std::make_shared<fake_backend>(), table,
                                            actors::spawn_mode::scheduled));
  team.repairers.push_back(actors::spawn_repairer(sys, std::make_shared<fake_backend>(), table,
                                                  actors::spawn_mode::scheduled));
  team.analyst = actors::spawn_analyst(sys, table);
  team.judge = actors::spawn_judge(sys, engine::judge_options{});
  for (int i = 0; i < tasks; ++i) {
    engine::task t;
    t.name = "t" + std::to_string(i);
    t.family = "f";
    t.manifest_path = ctx.write(t.name + ".toml", "");
    t.reference_path = ctx.write(t.name + "_ref.cu", "reference median=2.0");
    t.cost = engine::task_cost{1e6, 1e6};
    table->emplace(t.name, t);
    actors::supervisor_setup s;
    s.task = t.name;
    s.gpu_name = "Fake GPU";
    s.peak_gbps = 1000;
    s.peak_gflops = 10000;
    s.limits.branches = 4;
    s.limits.max_depth = 64;
    s.limits.candidate_budget = 200;
    s.limits.roofline_target = 0;
    s.limits.patience = 0;
    s.tasks = table;
    s.team = team;
    setups.push_back(s);
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<actors::supervisor_actor> supervisors;
  for (const auto& s : setups)
    supervisors.push_back(actors::spawn_supervisor(sys, s));
  int64_t candidates = 0;
  for (auto& s : supervisors)
    self->request(s, caf::infinite, actors::run_task{})
        .receive([&](actors::task_report& r) { candidates += r.nodes - 1; },
                 [&](caf::error& e) { FAIL(actors::describe(e)); });
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (auto h :
       {caf::actor_cast<caf::actor>(team.store), caf::actor_cast<caf::actor>(team.compiler),
        caf::actor_cast<caf::actor>(team.bench), caf::actor_cast<caf::actor>(team.planners[0]),
        caf::actor_cast<caf::actor>(team.coders[0]), caf::actor_cast<caf::actor>(team.repairers[0]),
        caf::actor_cast<caf::actor>(team.analyst), caf::actor_cast<caf::actor>(team.judge)})
    self->send_exit(h, caf::exit_reason::user_shutdown);
  REQUIRE(candidates > 0);
  WARN((real_store ? "LMDB store: " : "null store: ")
       << tasks << " tasks, " << candidates << " candidates, " << counts->verify + counts->time
       << " bench jobs in " << ms << " ms: " << ms / static_cast<double>(candidates)
       << " ms per candidate (" << std::thread::hardware_concurrency() << " cores)");
}

} // namespace

TEST_CASE("messaging overhead per candidate of the actor layer", "[.][benchmark]") {
  // The actors alone: a store that answers at once.
  measure_overhead(false);
  // With the real store: every transition committed (fsync) before the next step.
  measure_overhead(true);
}

// -- a planner that cannot answer for now ---------------------------------------------------------

namespace {

// Fails its first `failures` plan requests as a rate-limited service does (errc::transient),
// then plans as fake_backend.
class flaky_planner final : public engine::agent_backend {
public:
  flaky_planner(std::shared_ptr<int> calls, int failures)
    : calls_(std::move(calls)), failures_(failures) {}

  std::string_view name() const noexcept override { return "flaky"; }

  engine::expected<std::vector<engine::plan>> propose(const engine::planning_request& r) override {
    if (++*calls_ <= failures_)
      return engine::fail(engine::errc::transient, "429: rate limited, retry after 1 s");
    return inner_.propose(r);
  }

  engine::expected<std::string> write_code(const engine::coding_request& r) override {
    return inner_.write_code(r);
  }

  engine::expected<engine::repair_reply> repair(const engine::repair_request& r) override {
    return inner_.repair(r);
  }

private:
  std::shared_ptr<int> calls_;
  int failures_;
  fake_backend inner_;
};

} // namespace

TEST_CASE_METHOD(supervisor_fixture,
                 "a planner that cannot answer for now is asked again later, and the search goes "
                 "on",
                 "[actors]") {
  auto calls = std::make_shared<int>(0);
  setup.team.planners = {actors::spawn_planner(sys, std::make_shared<flaky_planner>(calls, 2),
                                               setup.tasks, actors::spawn_mode::scheduled)};
  setup.plan_retry_s = 0.001;
  auto supervisor = actors::spawn_supervisor(sys, setup);
  self->send(supervisor, actors::run_task{});
  std::optional<actors::task_report> report;
  // Each retry waits for a timer: fire the timers until the task ends.
  for (int round = 0; round < 50 && !report; ++round) {
    run();
    report = reply<actors::task_report>();
    sched.trigger_timeouts();
  }
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::done);
  CHECK(*calls > 2);
  // The same search as with a planner that always answers: 2.0 -> 1.0 -> 0.5.
  CHECK(report->best_ms == Approx(0.5).epsilon(0.02));
}

TEST_CASE_METHOD(supervisor_fixture,
                 "a planner that keeps failing for now is given up on after the configured retries",
                 "[actors]") {
  auto calls = std::make_shared<int>(0);
  setup.team.planners = {actors::spawn_planner(sys, std::make_shared<flaky_planner>(calls, 1000),
                                               setup.tasks, actors::spawn_mode::scheduled)};
  setup.plan_retry_s = 0.001;
  setup.plan_retries = 3;
  auto supervisor = actors::spawn_supervisor(sys, setup);
  self->send(supervisor, actors::run_task{});
  std::optional<actors::task_report> report;
  for (int round = 0; round < 50 && !report; ++round) {
    run();
    report = reply<actors::task_report>();
    sched.trigger_timeouts();
  }
  REQUIRE(report);
  CHECK(*calls == 4);        // the first request and three retries
  CHECK(report->nodes == 1); // the root was exhausted: the reference is the result
  CHECK(report->phase == engine::task_phase::done);
}

namespace {

// Codes as fake_backend does, but its repairs return the failing source unchanged, or the
// source of its first repair: fixes that already failed on the branch.
class stubborn_repairer final : public engine::agent_backend {
public:
  explicit stubborn_repairer(std::shared_ptr<int> calls) : calls_(std::move(calls)) {}

  std::string_view name() const noexcept override { return "stubborn"; }

  engine::expected<std::vector<engine::plan>> propose(const engine::planning_request& r) override {
    return inner_.propose(r);
  }

  engine::expected<std::string> write_code(const engine::coding_request& r) override {
    return inner_.write_code(r);
  }

  engine::expected<engine::repair_reply> repair(const engine::repair_request& r) override {
    ++*calls_;
    engine::repair_reply out;
    out.source = r.source;
    out.diagnosis = "looks right to me";
    out.fix_summary = "changed nothing";
    return out;
  }

private:
  std::shared_ptr<int> calls_;
  fake_backend inner_;
};

} // namespace

TEST_CASE_METHOD(supervisor_fixture,
                 "a repair that returns a source already failed on the branch is refused unseen, "
                 "and counts as a round",
                 "[actors]") {
  auto calls = std::make_shared<int>(0);
  auto backend = std::make_shared<stubborn_repairer>(calls);
  setup.team.repairers = {
      actors::spawn_repairer(sys, backend, setup.tasks, actors::spawn_mode::scheduled)};
  setup.repair_rounds = 2;
  auto compiles = std::make_shared<compile_counts>();
  setup.team.compiler = sys.spawn(fake_compiler, compiles);
  auto supervisor = actors::spawn_supervisor(sys, setup);
  self->send(supervisor, actors::run_task{});
  run();
  auto report = reply<actors::task_report>();
  REQUIRE(report);
  CHECK(report->phase == engine::task_phase::done);
  // Every tile(n=3) branch asked the repairer twice (the configured rounds) and compiled its
  // source once: neither repeat reached the compiler.
  auto memory = db->short_term("t");
  REQUIRE(memory);
  int64_t branches = 0;
  for (const auto& [branch, rounds] : memory->repairs()) {
    ++branches;
    REQUIRE(rounds.size() == 2);
    for (const engine::repair_round& r : rounds) {
      CHECK(r.fix_summary.find("refused unseen") == 0);
      CHECK(r.source_hash == r.repaired_hash);
    }
  }
  CHECK(branches >= 1);
  CHECK(*calls == 2 * branches);
  for (const auto& [source, count] : *compiles)
    if (source.find("compile_error") != std::string::npos)
      CHECK(count == 1);
  for (const engine::node_record& n : stored_nodes())
    if (n.plan.params.count("n") && n.plan.params.at("n") == "3")
      CHECK(n.status == engine::node_status::compile_failed);
}
