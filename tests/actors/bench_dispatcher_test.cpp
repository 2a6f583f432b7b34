#include "actors/actor_error.hpp"
#include "actors/bench_dispatcher_actor.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "actor_fixture.hpp"
#include "test_context.hpp"

using namespace ks;
using actors::bench_job;
using actors::bench_kind;
using actors::bench_result;
namespace fs = std::filesystem;

namespace {

// A bench actor that holds each job until told to finish it (tick), so a test sees which GPU
// is busy with what.
using fake_bench_actor = actors::bench_actor::extend<caf::reacts_to<actors::tick_atom>>;

struct fake_bench_state {
  int32_t gpu = 0;
  std::shared_ptr<std::vector<std::string>> log; // "gpuN:label" per job started
  std::vector<std::pair<bench_job, caf::typed_response_promise<bench_result>>> held;
};

fake_bench_actor::behavior_type
fake_bench(fake_bench_actor::stateful_pointer<fake_bench_state> self, int32_t gpu,
           std::shared_ptr<std::vector<std::string>> log) {
  self->state.gpu = gpu;
  self->state.log = std::move(log);
  return {
      [self](bench_job& job) {
        self->state.log->push_back("gpu" + std::to_string(self->state.gpu) + ":" + job.label);
        auto promise = self->make_response_promise<bench_result>();
        self->state.held.emplace_back(std::move(job), promise);
        return promise;
      },
      [self](actors::tick_atom) {
        for (auto& [job, promise] : self->state.held) {
          bench_result r;
          r.kind = job.kind;
          r.gpu = self->state.gpu;
          r.ok = true;
          r.busy_ms = 10;
          promise.deliver(std::move(r));
        }
        self->state.held.clear();
      },
  };
}

bench_job job(bench_kind kind, int32_t gpu, std::string label) {
  return bench_job{kind, "t", "ref.so", "k.so", gpu, std::move(label)};
}

} // namespace

TEST_CASE_METHOD(test::actor_fixture,
                 "the dispatcher keeps two bench actors busy and times a task on its home GPU",
                 "[actors]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto gpu0 = sys.spawn(fake_bench, 0, log);
  auto gpu1 = sys.spawn(fake_bench, 1, log);
  auto dispatcher = actors::spawn_bench_dispatcher(sys, {gpu0, gpu1});

  // Five jobs queue: two verifications (any GPU) and three timings pinned to GPU 1.
  self->send(dispatcher, job(bench_kind::time, 1, "t1"));
  self->send(dispatcher, job(bench_kind::time, 1, "t2"));
  self->send(dispatcher, job(bench_kind::verify, -1, "v1"));
  self->send(dispatcher, job(bench_kind::verify, -1, "v2"));
  self->send(dispatcher, job(bench_kind::time, 1, "t3"));
  run();
  // Both GPUs got work at once: t1 on its home GPU 1, v1 on the idle GPU 0 (t2 waits for GPU
  // 1 rather than running elsewhere).
  REQUIRE(*log == std::vector<std::string>{"gpu1:t1", "gpu0:v1"});

  // GPU 0 finishes: the next job it may run is v2 (t2 and t3 are pinned to GPU 1).
  self->send(gpu0, actors::tick_atom::value);
  run();
  REQUIRE(log->size() == 3);
  CHECK(log->back() == "gpu0:v2");

  // GPU 1 finishes t1: t2 goes there, in order.
  self->send(gpu1, actors::tick_atom::value);
  run();
  REQUIRE(log->size() == 4);
  CHECK(log->back() == "gpu1:t2");

  // The two answers came back, each naming the GPU that ran it.
  std::vector<int32_t> gpus;
  while (auto r = reply<bench_result>())
    gpus.push_back(r->gpu);
  CHECK(gpus == std::vector<int32_t>{0, 1});

  // The dispatcher's counters say who worked.
  self->send(dispatcher, actors::bench_stats_request{});
  run();
  auto stats = reply<actors::bench_stats>();
  REQUIRE(stats);
  CHECK(stats->jobs == std::vector<int64_t>{1, 1});
  CHECK(stats->busy_ms == std::vector<double>{10, 10});
  CHECK(stats->queued == 1); // t3, waiting for GPU 1

  self->send(gpu1, actors::tick_atom::value);
  self->send(gpu0, actors::tick_atom::value);
  run();
  CHECK(log->back() == "gpu1:t3");
  self->send(gpu1, actors::tick_atom::value);
  run();
}

TEST_CASE_METHOD(test::actor_fixture,
                 "the dispatcher moves jobs pinned to a dead bench actor to a live one",
                 "[actors]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto gpu0 = sys.spawn(fake_bench, 0, log);
  auto gpu1 = sys.spawn(fake_bench, 1, log);
  auto dispatcher = actors::spawn_bench_dispatcher(sys, {gpu0, gpu1});
  self->send(dispatcher, job(bench_kind::time, 1, "t1"));
  self->send(dispatcher, job(bench_kind::time, 1, "t2"));
  run();
  REQUIRE(*log == std::vector<std::string>{"gpu1:t1"});
  self->send_exit(gpu1, caf::exit_reason::user_shutdown);
  run();
  // t1 failed with its bench actor; t2 runs on GPU 0 rather than never.
  REQUIRE(log->size() == 2);
  CHECK(log->back() == "gpu0:t2");
  bool failed = false;
  self->receive([&](caf::error&) { failed = true; }, [](bench_result&) {},
                caf::after(std::chrono::seconds(0)) >> [] {});
  CHECK(failed);
  self->send(gpu0, actors::tick_atom::value);
  run();
}

TEST_CASE_METHOD(test::actor_fixture, "the dispatcher refuses a GPU index it does not have",
                 "[actors]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto gpu0 = sys.spawn(fake_bench, 0, log);
  auto dispatcher = actors::spawn_bench_dispatcher(sys, {gpu0});
  self->send(dispatcher, job(bench_kind::time, 3, "t"));
  run();
  bool failed = false;
  self->receive([&](caf::error&) { failed = true; }, [](bench_result&) {},
                caf::after(std::chrono::seconds(0)) >> [] {});
  CHECK(failed);
  CHECK(log->empty());
}

TEST_CASE_METHOD(test::actor_fixture,
                 "the dispatcher gives each task the home GPU with the least load so far",
                 "[actors]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto gpu0 = sys.spawn(fake_bench, 0, log);
  auto gpu1 = sys.spawn(fake_bench, 1, log);
  auto dispatcher = actors::spawn_bench_dispatcher(sys, {gpu0, gpu1});

  // The kernelbench-l1 shape: one reference 30x heavier than the rest, arriving first.
  const std::vector<double> estimates{86, 3, 10, 8, 6, 2, 2, 5};
  std::vector<double> loads(2, 0);
  std::vector<int32_t> homes;
  for (size_t i = 0; i < estimates.size(); ++i) {
    self->send(dispatcher, actors::assign_home{"t" + std::to_string(i), estimates[i], -1});
    run();
    auto home = reply<int32_t>();
    REQUIRE(home);
    REQUIRE(*home >= 0);
    REQUIRE(*home < 2);
    homes.push_back(*home);
    loads[static_cast<size_t>(*home)] += estimates[i];
  }
  // The heavy task has a card to itself; the seven light ones share the other.
  CHECK(homes == std::vector<int32_t>{0, 1, 1, 1, 1, 1, 1, 1});
  CHECK(loads == std::vector<double>{86, 36});
  // No split does better than the heaviest task alone.
  CHECK(std::max(loads[0], loads[1]) == 86);

  // A home kept from an earlier run stands, and its load counts: the next task goes elsewhere.
  self->send(dispatcher, actors::assign_home{"kept", 60, 1});
  run();
  auto kept = reply<int32_t>();
  REQUIRE(kept);
  CHECK(*kept == 1);
  self->send(dispatcher, actors::assign_home{"next", 1, -1});
  run();
  auto next = reply<int32_t>();
  REQUIRE(next);
  CHECK(*next == 0);
  CHECK(log->empty()); // choosing a home runs no job
}

TEST_CASE_METHOD(test::actor_fixture,
                 "the dispatcher starts the queued job of highest priority first, in order "
                 "among equals",
                 "[actors]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto gpu0 = sys.spawn(fake_bench, 0, log);
  auto dispatcher = actors::spawn_bench_dispatcher(sys, {gpu0});
  auto with_priority = [](bench_job j, double priority) {
    j.priority = priority;
    return j;
  };
  // The card is busy with "first"; four jobs queue behind it.
  self->send(dispatcher, job(bench_kind::verify, -1, "first"));
  self->send(dispatcher, with_priority(job(bench_kind::verify, -1, "light-a"), 2));
  self->send(dispatcher, with_priority(job(bench_kind::time, -1, "heavy-a"), 80));
  self->send(dispatcher, with_priority(job(bench_kind::verify, -1, "light-b"), 2));
  self->send(dispatcher, with_priority(job(bench_kind::time, 0, "heavy-b"), 80));
  run();
  for (int i = 0; i < 4; ++i) {
    self->send(gpu0, actors::tick_atom::value);
    run();
  }
  CHECK(*log == std::vector<std::string>{"gpu0:first", "gpu0:heavy-a", "gpu0:heavy-b",
                                         "gpu0:light-a", "gpu0:light-b"});
  self->send(gpu0, actors::tick_atom::value);
  run();
}

TEST_CASE_METHOD(
    test::actor_fixture,
    "an unpinned job takes the GPU it prefers when idle, else one no other job can use",
    "[actors]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto gpu0 = sys.spawn(fake_bench, 0, log);
  auto gpu1 = sys.spawn(fake_bench, 1, log);
  auto dispatcher = actors::spawn_bench_dispatcher(sys, {gpu0, gpu1});
  auto preferring = [](bench_job j, int32_t gpu) {
    j.prefer = {gpu};
    return j;
  };
  // Both idle: each job goes where it prefers, GPU 1 first although GPU 0 worked least.
  self->send(dispatcher, preferring(job(bench_kind::time, -1, "a"), 1));
  run();
  // GPU 1 is busy now: a job preferring it runs on the idle GPU 0 rather than wait.
  self->send(dispatcher, preferring(job(bench_kind::time, -1, "b"), 1));
  run();
  CHECK(*log == std::vector<std::string>{"gpu1:a", "gpu0:b"});
  std::vector<int32_t> gpus;
  self->send(gpu0, actors::tick_atom::value);
  self->send(gpu1, actors::tick_atom::value);
  run();
  while (auto r = reply<bench_result>())
    gpus.push_back(r->gpu);
  std::sort(gpus.begin(), gpus.end());
  CHECK(gpus == std::vector<int32_t>{0, 1});

  // Both busy again; then GPU 0 frees while "c" (preferring the busy GPU 1, higher priority)
  // and "v" (no preference) wait: "v" takes GPU 0 and "c" waits for its own card.
  self->send(dispatcher, job(bench_kind::verify, -1, "busy0"));
  self->send(dispatcher, job(bench_kind::verify, -1, "busy1"));
  run();
  auto c = preferring(job(bench_kind::time, -1, "c"), 1);
  c.priority = 10;
  self->send(dispatcher, c);
  self->send(dispatcher, job(bench_kind::verify, -1, "v"));
  run();
  self->send(gpu0, actors::tick_atom::value);
  run();
  REQUIRE(log->size() == 5);
  CHECK(log->back() == "gpu0:v");
  self->send(gpu1, actors::tick_atom::value);
  run();
  CHECK(log->back() == "gpu1:c");
  self->send(gpu0, actors::tick_atom::value);
  self->send(gpu1, actors::tick_atom::value);
  run();
}

TEST_CASE_METHOD(test::actor_fixture,
                 "a job with several preferred GPUs takes any idle one of them before other jobs",
                 "[actors]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto gpu0 = sys.spawn(fake_bench, 0, log);
  auto gpu1 = sys.spawn(fake_bench, 1, log);
  auto gpu2 = sys.spawn(fake_bench, 2, log);
  auto dispatcher = actors::spawn_bench_dispatcher(sys, {gpu0, gpu1, gpu2});
  for (const char* label : {"busy0", "busy1", "busy2"})
    self->send(dispatcher, job(bench_kind::verify, -1, label));
  run();
  // "t" may run on GPU 2 or 0 without a re-timing; "v" anywhere. GPU 0 frees first: "t" (the
  // higher priority) takes it. Then GPU 1 frees: "v" takes it, and "u", preferring only the
  // busy GPU 2, waits for it.
  bench_job t = job(bench_kind::time, -1, "t");
  t.prefer = {2, 0};
  t.priority = 5;
  bench_job u = job(bench_kind::time, -1, "u");
  u.prefer = {2};
  u.priority = 5;
  self->send(dispatcher, t);
  self->send(dispatcher, u);
  self->send(dispatcher, job(bench_kind::verify, -1, "v"));
  run();
  self->send(gpu0, actors::tick_atom::value);
  run();
  REQUIRE(log->size() == 4);
  CHECK(log->back() == "gpu0:t");
  self->send(gpu1, actors::tick_atom::value);
  run();
  REQUIRE(log->size() == 5);
  CHECK(log->back() == "gpu1:v");
  self->send(gpu2, actors::tick_atom::value);
  run();
  REQUIRE(log->size() == 6);
  CHECK(log->back() == "gpu2:u");
  for (const auto& g : {gpu0, gpu1, gpu2})
    self->send(g, actors::tick_atom::value);
  run();
}

TEST_CASE_METHOD(test::actor_fixture,
                 "a job's priority grows with its wait: a light job cannot starve behind a "
                 "heavy task's stream",
                 "[actors]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto gpu0 = sys.spawn(fake_bench, 0, log);
  auto now_ms = std::make_shared<double>(1000);
  auto dispatcher = actors::spawn_bench_dispatcher(sys, {gpu0}, [now_ms] { return *now_ms; });
  auto with_priority = [](bench_job j, double priority) {
    j.priority = priority;
    return j;
  };
  self->send(dispatcher, job(bench_kind::time, 0, "running"));
  self->send(dispatcher, with_priority(job(bench_kind::time, 0, "light"), 1));
  run();
  // 60 ms later a heavy job (priority 20 ms) arrives: the light one has waited longer than the
  // difference, and goes first.
  *now_ms += 60;
  self->send(dispatcher, with_priority(job(bench_kind::time, 0, "heavy"), 20));
  run();
  self->send(gpu0, actors::tick_atom::value);
  run();
  REQUIRE(log->size() == 2);
  CHECK(log->back() == "gpu0:light");
  // A fresh light job does not pass the heavy one that has waited too.
  self->send(dispatcher, with_priority(job(bench_kind::time, 0, "light-2"), 1));
  run();
  self->send(gpu0, actors::tick_atom::value);
  run();
  REQUIRE(log->size() == 3);
  CHECK(log->back() == "gpu0:heavy");
  self->send(gpu0, actors::tick_atom::value);
  run();
  self->send(gpu0, actors::tick_atom::value);
  run();
}

TEST_CASE_METHOD(test::actor_fixture,
                 "an interrupt drops the queued bench jobs at once and refuses new ones, and "
                 "the job running still answers",
                 "[actors]") {
  auto log = std::make_shared<std::vector<std::string>>();
  auto gpu0 = sys.spawn(fake_bench, 0, log);
  auto dispatcher = actors::spawn_bench_dispatcher(sys, {gpu0});
  self->send(dispatcher, job(bench_kind::verify, -1, "running"));
  self->send(dispatcher, job(bench_kind::verify, -1, "queued1"));
  self->send(dispatcher, job(bench_kind::time, 0, "queued2"));
  run();
  REQUIRE(*log == std::vector<std::string>{"gpu0:running"});
  self->send(dispatcher, actors::stop_msg{actors::stop_kind::interrupt, "interrupted"});
  self->send(dispatcher, job(bench_kind::verify, -1, "late"));
  run();
  // queued1, queued2 and late come back at once, as interrupted; none of them ever started.
  int64_t dropped = 0;
  for (int i = 0; i < 3; ++i)
    self->receive([&](bench_result&) { FAIL("a job answered that should have been dropped"); },
                  [&](caf::error& e) { dropped += actors::is_interrupted(e) ? 1 : 0; },
                  caf::after(std::chrono::seconds(0)) >> [] {});
  CHECK(dropped == 3);
  CHECK(*log == std::vector<std::string>{"gpu0:running"});
  // The job that was running finishes and is answered as usual.
  self->send(gpu0, actors::tick_atom::value);
  run();
  auto r = reply<bench_result>();
  REQUIRE(r);
  CHECK(r->ok);
}

// -- the card-stability monitor (engine/card_stability.hpp) ------------------------------------

namespace {

// A bench actor that answers every job at once; its probes take the medians of `probes` in
// turn (1.0 ms once they run out), its timings 1 ms.
struct probing_bench_state {
  std::shared_ptr<std::vector<std::string>> log; // each job's label, "probe" for a probe
  std::shared_ptr<std::deque<double>> probes;
};

actors::bench_actor::behavior_type
probing_bench(actors::bench_actor::stateful_pointer<probing_bench_state> self,
              std::shared_ptr<std::vector<std::string>> log,
              std::shared_ptr<std::deque<double>> probes) {
  self->state.log = std::move(log);
  self->state.probes = std::move(probes);
  return {
      [self](bench_job& job) {
        auto& st = self->state;
        st.log->push_back(job.kind == bench_kind::probe ? std::string("probe") : job.label);
        bench_result r;
        r.kind = job.kind;
        r.ok = true;
        r.busy_ms = 1;
        if (job.kind == bench_kind::probe) {
          double median = 1.0;
          if (!st.probes->empty()) {
            median = st.probes->front();
            st.probes->pop_front();
          }
          r.payload = gpu::probe_result{
              int64_t{1} << 28, 32,           median, median * 0.995, median * 1.005,
              median * 0.99,    median * 1.01};
        } else if (job.kind == bench_kind::time) {
          gpu::timing_result t;
          t.median_ms = 1;
          t.p10_ms = 0.99;
          t.p90_ms = 1.01;
          t.trials = 10;
          r.payload = t;
        }
        return r;
      },
  };
}

actors::stability_setup watching(const test::test_context& ctx, double limit_s = 60) {
  actors::stability_setup s;
  s.options = engine::stability_options{}; // probes every 2 s at most, paused 5 s
  s.options.limit_s = limit_s;
  s.file = ctx.dir() / "gpu_stability.json";
  s.gpu_names = {"Fake GPU"};
  return s;
}

// Returns how many results came back (answers, not errors) now.
int64_t answers(caf::scoped_actor& self) {
  int64_t n = 0;
  bool more = true;
  while (more)
    self->receive([&](bench_result&) { ++n; }, [&](caf::error&) { FAIL("an error came back"); },
                  caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
  return n;
}

} // namespace

TEST_CASE_METHOD(test::actor_fixture,
                 "a timing is handed on only once a probe within bounds follows it; a card whose "
                 "probes go out of bounds times it again once it is quiet, and says so",
                 "[actors][stability]") {
  test::test_context ctx;
  auto log = std::make_shared<std::vector<std::string>>();
  // Probes: the first two quiet, then two at 3x (unstable), then quiet again.
  auto probes = std::make_shared<std::deque<double>>(std::deque<double>{1, 1, 3, 3, 1, 1});
  auto gpu0 = sys.spawn(probing_bench, log, probes);
  auto now_ms = std::make_shared<double>(0);
  auto dispatcher = actors::spawn_bench_dispatcher(
      sys, {gpu0}, [now_ms] { return *now_ms; }, {}, watching(ctx));

  // The card's first probe runs before its first job; the timing waits for the next probe.
  self->send(dispatcher, job(bench_kind::time, -1, "t1"));
  run();
  CHECK(*log == std::vector<std::string>{"probe", "t1", "probe"});
  CHECK(answers(self) == 1);
  REQUIRE(fs::exists(ctx.dir() / "gpu_stability.json")); // written at the first probe

  // t2's probe is out of bounds, and so is the one that confirms it: t2 goes back to the queue,
  // and waits; a verification still runs on the card.
  self->send(dispatcher, job(bench_kind::time, -1, "t2"));
  run();
  CHECK(*log == std::vector<std::string>{"probe", "t1", "probe", "t2", "probe", "probe"});
  CHECK(answers(self) == 0);
  self->send(dispatcher, job(bench_kind::verify, -1, "v"));
  run();
  CHECK(log->back() == "v");
  CHECK(answers(self) == 1);
  self->send(dispatcher, actors::bench_stats_request{});
  run();
  auto stats = reply<actors::bench_stats>();
  REQUIRE(stats);
  REQUIRE(stats->stability.size() == 1);
  CHECK_THAT(stats->stability[0], Catch::Matchers::Contains("UNSTABLE"));
  CHECK_THAT(stats->stability[0], Catch::Matchers::Contains("3.00x its quiet time"));
  CHECK_FALSE(stats->unreliable);
  std::string file = test::read_file(ctx.dir() / "gpu_stability.json");
  CHECK_THAT(file, Catch::Matchers::Contains("\"state\":\"unstable\""));
  CHECK_THAT(file, Catch::Matchers::Contains("\"condition\":\"drifting\""));

  // Nothing happens before the pause is over; after it, a quiet probe lets t2 run again.
  *now_ms += 3000;
  self->send(dispatcher, actors::tick_atom::value);
  run();
  CHECK(log->size() == 7);
  *now_ms += 3000;
  self->send(dispatcher, actors::tick_atom::value);
  run();
  CHECK(*log == std::vector<std::string>{"probe", "t1", "probe", "t2", "probe", "probe", "v",
                                         "probe", "t2", "probe"});
  CHECK(answers(self) == 1);
  self->send(dispatcher, actors::bench_stats_request{});
  run();
  stats = reply<actors::bench_stats>();
  REQUIRE(stats);
  CHECK(stats->stability[0].empty());
  REQUIRE(stats->stability_warnings.size() == 2);
  CHECK_THAT(stats->stability_warnings[0],
             Catch::Matchers::Contains("GPU 0 (Fake GPU) was unstable from 0s to 6s"));
  CHECK_THAT(stats->stability_warnings[0], Catch::Matchers::Contains("3.00x its quiet time"));
  CHECK_THAT(stats->stability_warnings[1], Catch::Matchers::Contains("1 timing was made again"));
  file = test::read_file(ctx.dir() / "gpu_stability.json");
  CHECK_THAT(file, Catch::Matchers::Contains("\"retimed\":1"));
  CHECK_THAT(file, Catch::Matchers::Contains("\"state\":\"quiet\""));
  // Its wake-up for an unstable card's next probe is still pending: the dispatcher is stopped.
  self->send_exit(dispatcher, caf::exit_reason::user_shutdown);
  run();
}

TEST_CASE_METHOD(test::actor_fixture,
                 "a card unstable past its limit runs its timings flagged, and its results are "
                 "unreliable",
                 "[actors][stability]") {
  test::test_context ctx;
  auto log = std::make_shared<std::vector<std::string>>();
  auto probes = std::make_shared<std::deque<double>>(std::deque<double>{1, 4, 4, 4, 4});
  auto gpu0 = sys.spawn(probing_bench, log, probes);
  auto now_ms = std::make_shared<double>(0);
  auto dispatcher = actors::spawn_bench_dispatcher(
      sys, {gpu0}, [now_ms] { return *now_ms; }, {}, watching(ctx, 8));
  self->send(dispatcher, job(bench_kind::time, -1, "t1"));
  run();
  CHECK(answers(self) == 0); // unstable: t1 waits for a quiet probe
  *now_ms += 5000;
  self->send(dispatcher, actors::tick_atom::value);
  run();
  CHECK(answers(self) == 0); // still unstable, 5 s of the 8
  *now_ms += 5000;
  self->send(dispatcher, actors::tick_atom::value);
  run();
  // Past the limit: t1 ran, flagged, and is answered.
  CHECK(answers(self) == 1);
  CHECK(std::count(log->begin(), log->end(), "t1") == 2);
  self->send(dispatcher, actors::bench_stats_request{});
  run();
  auto stats = reply<actors::bench_stats>();
  REQUIRE(stats);
  CHECK(stats->unreliable);
  CHECK_THAT(stats->stability[0], Catch::Matchers::Contains("UNRELIABLE"));
  REQUIRE_FALSE(stats->stability_warnings.empty());
  CHECK_THAT(stats->stability_warnings.back(), Catch::Matchers::Contains("are unreliable"));
  std::string file = test::read_file(ctx.dir() / "gpu_stability.json");
  CHECK_THAT(file, Catch::Matchers::Contains("\"flagged_labels\":[\"t1\"]"));
  CHECK_THAT(file, Catch::Matchers::Contains("\"gave_up\":true"));
  self->send_exit(dispatcher, caf::exit_reason::user_shutdown);
  run();
}
