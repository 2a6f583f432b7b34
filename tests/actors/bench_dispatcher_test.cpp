#include "actors/actor_error.hpp"
#include "actors/bench_dispatcher_actor.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actor_fixture.hpp"

using namespace ks;
using actors::bench_job;
using actors::bench_kind;
using actors::bench_result;

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
