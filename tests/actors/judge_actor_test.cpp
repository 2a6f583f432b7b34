#include "actors/judge_actor.hpp"

#include <vector>

#include "actor_fixture.hpp"

using namespace ks;

namespace {

engine::timing around(double median_ms, double spread) {
  std::vector<double> samples;
  for (int i = 0; i < 20; ++i)
    samples.push_back(median_ms * (1 + spread * ((i % 5) - 2) / 2.0));
  return engine::summarize(samples);
}

} // namespace

TEST_CASE_METHOD(test::actor_fixture, "the judge actor accepts a child faster beyond the noise",
                 "[actors]") {
  auto judge = actors::spawn_judge(sys, engine::judge_options{});
  self->send(judge, actors::judge_request{around(2.0, 0.01), around(1.0, 0.01)});
  run();
  auto r = reply<actors::judge_reply>();
  REQUIRE(r);
  CHECK(r->accepted);
  CHECK(r->evidence == static_cast<int32_t>(engine::evidence::rank_test));
  CHECK(r->gain == Approx(0.5).margin(0.01));
}

TEST_CASE_METHOD(test::actor_fixture, "the judge actor rejects a child within the noise",
                 "[actors]") {
  auto judge = actors::spawn_judge(sys, engine::judge_options{});
  self->send(judge, actors::judge_request{around(1.0, 0.05), around(0.995, 0.05)});
  run();
  auto r = reply<actors::judge_reply>();
  REQUIRE(r);
  CHECK_FALSE(r->accepted);
  CHECK_FALSE(r->reason.empty());
}

TEST_CASE_METHOD(test::actor_fixture,
                 "the judge actor keeps the simpler finalist on a tie and names the fastest",
                 "[actors]") {
  auto judge = actors::spawn_judge(sys, engine::judge_options{});
  std::vector<std::vector<double>> samples{{1.00, 1.01, 0.99, 1.00, 1.02},
                                           {0.995, 1.00, 0.99, 1.01, 0.98},
                                           {1.5, 1.6, 1.55, 1.52, 1.58}};
  self->send(judge, actors::final_request{samples});
  run();
  auto r = reply<actors::final_reply>();
  REQUIRE(r);
  CHECK(r->winner == 0);
  CHECK(r->fastest == 1);
  CHECK(r->tie);
  CHECK(r->timings.size() == 3);
}

TEST_CASE_METHOD(test::actor_fixture,
                 "the judge actor answers a final without finalists "
                 "with an error",
                 "[actors]") {
  auto judge = actors::spawn_judge(sys, engine::judge_options{});
  self->send(judge, actors::final_request{});
  run();
  bool failed = false;
  self->receive([&](caf::error&) { failed = true; }, [](actors::final_reply&) {},
                caf::after(std::chrono::seconds(0)) >> [] {});
  CHECK(failed);
}
