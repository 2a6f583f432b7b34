#include "engine/retrieval.hpp"
#include "engine/skill_stats_key.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace ks::engine;

namespace {

skill_stats stats(int64_t tries, int64_t accepted, int64_t failed = 0) {
  skill_stats s;
  s.tries = tries;
  s.acceptances = accepted;
  s.compile_failures = failed;
  s.rejections = tries - accepted - failed;
  return s;
}

std::vector<std::string> ids_of(const std::vector<retrieved_skill>& ranked) {
  std::vector<std::string> ids;
  for (const retrieved_skill& r : ranked)
    ids.push_back(r.id);
  return ids;
}

} // namespace

TEST_CASE("the UCB score is the acceptance rate plus a bonus that shrinks with tries",
          "[engine][retrieval]") {
  CHECK(ucb_score(stats(0, 0), 10, 1.0) == std::numeric_limits<double>::infinity());
  CHECK(ucb_score(stats(4, 2), 16, 1.0) == Approx(0.5 + std::sqrt(std::log(16.0) / 4)));
  CHECK(ucb_score(stats(4, 2), 16, 0.0) == Approx(0.5));
  // The same rate tried more often earns a smaller bonus.
  CHECK(ucb_score(stats(40, 20), 100, 1.0) < ucb_score(stats(4, 2), 100, 1.0));
}

TEST_CASE("skills rank by the UCB rule over their statistics", "[engine][retrieval]") {
  retrieval_rules rules;
  rules.exploration = 0.5;
  // N = 30 tries: a: 8/10 accepted, b: 2/10, c: 5/10.
  std::vector<ranking_input> in{
      {"b", 0.5, stats(10, 2)}, {"a", 0.5, stats(10, 8)}, {"c", 0.5, stats(10, 5)}};
  CHECK(ids_of(rank_skills(in, rules)) == std::vector<std::string>{"a", "c", "b"});
  // A rarely tried skill overtakes a better-known one as the others pile up tries.
  std::vector<ranking_input> explore{{"known", 0.5, stats(200, 120)}, {"rare", 0.5, stats(2, 1)}};
  CHECK(ids_of(rank_skills(explore, rules)) == std::vector<std::string>{"rare", "known"});
  rules.exploration = 0;
  CHECK(ids_of(rank_skills(explore, rules)) == std::vector<std::string>{"known", "rare"});
}

TEST_CASE("untried skills come first, by their prior, then by id", "[engine][retrieval]") {
  std::vector<ranking_input> in{{"winner", 0.5, stats(10, 9)},
                                {"new_low", 0.2, {}},
                                {"new_high", 0.9, {}},
                                {"new_b", 0.5, {}},
                                {"new_a", 0.5, {}}};
  std::vector<retrieved_skill> ranked = rank_skills(in, retrieval_rules{});
  CHECK(ids_of(ranked) ==
        std::vector<std::string>{"new_high", "new_a", "new_b", "new_low", "winner"});
  CHECK(ranked.front().why == "untried (prior 0.90)");
}

TEST_CASE("skills for another bottleneck than the diagnosis rank after those for it, not out",
          "[engine][retrieval]") {
  // A compute-bound reference (it accumulates in double) of a memory-bound task: the memory
  // skills are still what it needs when no compute skill exists, so they are kept, behind.
  std::vector<ranking_input> in{{"memory_winner", 0.9, stats(10, 9), true},
                                {"compute_new", 0.1, {}, false},
                                {"memory_new", 0.5, {}, true}};
  std::vector<retrieved_skill> ranked = rank_skills(in, retrieval_rules{});
  CHECK(ids_of(ranked) == std::vector<std::string>{"compute_new", "memory_new", "memory_winner"});
  CHECK_FALSE(ranked.front().off_diagnosis);
  CHECK(ranked.back().off_diagnosis);
  CHECK_THAT(ranked.back().why, Catch::Contains("another bottleneck"));
  // Demotion still comes first: a demoted skill for the diagnosis goes behind the others.
  retrieval_rules rules;
  rules.demote_min_tries = 4;
  in[1].stats = stats(8, 0, 8);
  CHECK(ids_of(rank_skills(in, rules)) ==
        std::vector<std::string>{"memory_new", "memory_winner", "compute_new"});
}

TEST_CASE("a skill that keeps failing is demoted behind every other", "[engine][retrieval]") {
  retrieval_rules rules;
  rules.demote_min_tries = 4;
  rules.demote_failure_rate = 0.5;
  rules.demote_min_acceptance = 0.05;
  CHECK_FALSE(is_demoted(stats(3, 0, 3), rules)); // too few tries to judge
  CHECK(is_demoted(stats(4, 1, 2), rules));       // half failed
  CHECK(is_demoted(stats(20, 0, 0), rules));      // never accepted
  CHECK_FALSE(is_demoted(stats(20, 2, 9), rules));
  // The broken skill has the best acceptance rate, yet comes last.
  std::vector<ranking_input> in{
      {"broken", 0.5, stats(6, 3, 3)}, {"plain", 0.5, stats(6, 1)}, {"untried", 0.5, {}}};
  std::vector<retrieved_skill> ranked = rank_skills(in, rules);
  CHECK(ids_of(ranked) == std::vector<std::string>{"untried", "plain", "broken"});
  CHECK(ranked.back().demoted);
  CHECK_THAT(ranked.back().why, Catch::Contains("demoted"));
  // The thresholds are the caller's: a laxer rule keeps it in the running.
  rules.demote_failure_rate = 0.9;
  CHECK(ids_of(rank_skills(in, rules)) == std::vector<std::string>{"untried", "broken", "plain"});
}

TEST_CASE("add_try counts each outcome in its column and keeps the fastest kernel's genotype",
          "[engine][retrieval]") {
  skill_stats s;
  skill_try t;
  t.template_name = "grid";
  t.outcome = outcome_kind::accepted;
  t.gain = 0.5; // twice as fast as its parent
  t.reference_speedup = 2.0;
  t.params = {{"threads", "256"}};
  t.at = "2026-01-02T00:00:00Z";
  add_try(s, t);
  // A smaller step over a faster parent: the fastest kernel so far, 3x the reference.
  t.gain = 0.2;
  t.reference_speedup = 3.0;
  t.params = {{"threads", "128"}};
  add_try(s, t);
  t.outcome = outcome_kind::failed;
  t.failure_kind = "compile_error";
  t.reference_speedup = 10; // a failed try is never the best, whatever it claims
  add_try(s, t);
  t.failure_kind = "wrong_result";
  add_try(s, t);
  t.outcome = outcome_kind::rejected;
  t.reference_speedup = 2.5; // timed, but slower than the best
  add_try(s, t);
  t.outcome = outcome_kind::pending;
  add_try(s, t);
  CHECK(s.tries == 5);
  CHECK(s.acceptances == 2);
  CHECK(s.compile_failures == 1);
  CHECK(s.wrong_results == 1);
  CHECK(s.rejections == 1);
  CHECK(s.best_speedup == Approx(3.0));
  CHECK(s.best_params == std::map<std::string, std::string>{{"threads", "128"}});
  CHECK(s.geomean_speedup() == Approx(std::sqrt(2.0 * 1.25)));
  CHECK(s.last_used == "2026-01-02T00:00:00Z");
}

TEST_CASE("skill statistics are kept per shape class where the best skill depends on it",
          "[engine][retrieval]") {
  auto with = [](std::string family, std::map<std::string, ks::engine::param_value> derived) {
    ks::engine::task t;
    t.family = std::move(family);
    t.derived.scalars = std::move(derived);
    return t;
  };
  // Four 128 x 128 tiles for 132 SMs, and a product that fills the GPU many times over.
  CHECK(ks::engine::skill_stats_key(
            with("matmul", {{"batch", int64_t{1}}, {"m", int64_t{256}}, {"n", int64_t{256}}})) ==
        "matmul:small");
  CHECK(ks::engine::skill_stats_key(
            with("matmul", {{"batch", int64_t{1}}, {"m", int64_t{1024}}, {"n", int64_t{8192}}})) ==
        "matmul:large");
  // A batched product counts its batches' rows.
  CHECK(ks::engine::skill_stats_key(
            with("matmul", {{"batch", int64_t{64}}, {"m", int64_t{256}}, {"n", int64_t{256}}})) ==
        "matmul:large");
  CHECK(ks::engine::skill_stats_key(with("conv", {{"batch", int64_t{1}},
                                                  {"out_spatial", int64_t{49}},
                                                  {"out_channels", int64_t{512}}})) ==
        "conv:small");
  CHECK(ks::engine::skill_stats_key(with("softmax", {})) == "softmax");
}
