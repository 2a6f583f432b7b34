#include "engine/judge.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace ks::engine;

namespace {

/// Returns a timing summary with `median` ms, p10 and p90 `spread` (relative) away.
timing spread_timing(double median, double spread) {
  timing t;
  t.median_ms = median;
  t.p10_ms = median * (1 - spread);
  t.p90_ms = median * (1 + spread);
  t.trials = 30;
  return t;
}

/// Returns `n` deterministic samples around `median` ms: evenly spread quantiles of a normal
/// with relative sigma `noise`, shuffled by a fixed stride so they are not sorted.
std::vector<double> samples_around(double median, double noise, int n, int phase = 0) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    int k = (i * 7 + phase) % n;
    double q = (k + 0.5) / n;
    // Inverse normal by bisection on erf: precise enough for test data.
    double lo = -6, hi = 6;
    for (int step = 0; step < 60; ++step) {
      double mid = (lo + hi) / 2;
      (0.5 * std::erfc(-mid / std::sqrt(2.0)) < q ? lo : hi) = mid;
    }
    out.push_back(median * (1 + noise * lo));
  }
  return out;
}

} // namespace

TEST_CASE("the judge rejects a child within the noise", "[engine][judge]") {
  // 3% faster by the medians, but the spreads (2% each side) overlap.
  verdict v = accept(spread_timing(1.00, 0.02), spread_timing(0.97, 0.02));
  CHECK_FALSE(v.accepted());
  CHECK(v.evidence == evidence::spread);
  CHECK(v.gain == Approx(0.03));
  CHECK(v.reason.find("noise") != std::string::npos);
}

TEST_CASE("the judge accepts a child clearly faster", "[engine][judge]") {
  verdict v = accept(spread_timing(1.00, 0.02), spread_timing(0.80, 0.02));
  CHECK(v.accepted());
  CHECK(v.decision == verdict_kind::accepted);
  CHECK(v.evidence == evidence::spread);
  CHECK(v.gain == Approx(0.20));
}

TEST_CASE("the judge rejects a gain below the minimum, however certain", "[engine][judge]") {
  // Spreads of 0.1%: a 1% gain is real, but below the 2% worth keeping.
  verdict v = accept(spread_timing(1.00, 0.001), spread_timing(0.99, 0.001));
  CHECK_FALSE(v.accepted());
  CHECK(v.evidence == evidence::none);
  judge_options lenient;
  lenient.min_gain = 0.005;
  CHECK(accept(spread_timing(1.00, 0.001), spread_timing(0.99, 0.001), lenient).accepted());
}

TEST_CASE("the judge never accepts a child or parent without a timing", "[engine][judge]") {
  CHECK_FALSE(accept(timing{}, spread_timing(0.5, 0.01)).accepted());
  CHECK_FALSE(accept(spread_timing(1.0, 0.01), timing{}).accepted());
}

TEST_CASE("with raw samples on both sides the judge uses the rank test", "[engine][judge]") {
  // 4% faster with 2% noise: the p10/p90 spreads overlap, but 40 samples each make the shift
  // certain.
  timing parent = summarize(samples_around(1.00, 0.02, 40));
  timing child = summarize(samples_around(0.96, 0.02, 40, 3));
  REQUIRE(child.p90_ms > parent.p10_ms); // the spread rule alone would reject it
  verdict v = accept(parent, child);
  CHECK(v.accepted());
  CHECK(v.evidence == evidence::rank_test);
  CHECK(v.p_value < 0.01);

  // 3% faster by the medians, but with 10% noise ten samples are no evidence of it.
  timing noisy_parent = summarize(samples_around(1.00, 0.10, 10, 1));
  timing noisy_child = summarize(samples_around(0.97, 0.10, 10, 5));
  verdict w = accept(noisy_parent, noisy_child);
  CHECK_FALSE(w.accepted());
  CHECK(w.evidence == evidence::rank_test);
  CHECK(w.p_value > 0.01);

  // Too few samples fall back to the spreads.
  timing few = summarize(samples_around(0.96, 0.02, 4));
  CHECK(accept(parent, few).evidence == evidence::spread);
}

TEST_CASE("against a kernel slower than torch a gain of torch_min_gain counts", "[engine][judge]") {
  // 1.2% faster with 0.2% noise: certain, but below min_gain (2%).
  timing parent = summarize(samples_around(1.000, 0.002, 40));
  timing child = summarize(samples_around(0.988, 0.002, 40, 3));
  CHECK_FALSE(accept(parent, child).accepted());
  CHECK_FALSE(accept(parent, child, {}, 1.5).accepted()); // the parent beats torch already
  verdict v = accept(parent, child, {}, 0.97);            // torch takes 0.97 ms: the gap closes
  CHECK(v.accepted());
  CHECK(v.evidence == evidence::rank_test);
  // The noise still rules: 1.2% within 5% noise is no evidence, whatever torch does.
  timing noisy_parent = summarize(samples_around(1.000, 0.05, 10, 1));
  timing noisy_child = summarize(samples_around(0.988, 0.05, 10, 5));
  CHECK_FALSE(accept(noisy_parent, noisy_child, {}, 0.97).accepted());
  CHECK(min_gain_against({}, 1.0, 0.97) == Approx(0.005));
  CHECK(min_gain_against({}, 0.96, 0.97) == Approx(0.02));
  CHECK(min_gain_against({}, 1.0, 0) == Approx(0.02));

  // A final: the simpler finalist trails torch, the other is 1.2% faster in every round.
  std::vector<double> simple = samples_around(1.000, 0.002, 10);
  std::vector<double> faster = samples_around(0.988, 0.002, 10);
  auto tie = pick_winner({simple, faster});
  REQUIRE(tie);
  CHECK(tie->winner == 0);
  auto closes = pick_winner({simple, faster}, {}, 0.97);
  REQUIRE(closes);
  CHECK(closes->winner == 1);
}

TEST_CASE("the rank test's p-value separates shifted from equal samples", "[engine][judge]") {
  std::vector<double> low{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<double> high{11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  CHECK(rank_test_p_value(low, high) < 1e-3);
  CHECK(rank_test_p_value(high, low) > 0.999);
  CHECK(rank_test_p_value(low, low) == Approx(0.5).margin(0.05));
  CHECK(rank_test_p_value({1, 1, 1}, {1, 1, 1}) == 1);
  CHECK(rank_test_p_value({}, low) == 1);
}

TEST_CASE("summarize computes the median and the percentiles", "[engine][judge]") {
  timing t = summarize({5, 1, 4, 2, 3, 6, 7, 8, 9, 10, 11});
  CHECK(t.median_ms == Approx(6));
  CHECK(t.p10_ms == Approx(2));
  CHECK(t.p90_ms == Approx(10));
  CHECK(t.trials == 11);
  CHECK(t.samples_ms.front() == 5); // kept in trial order
  CHECK_FALSE(summarize({}).measured());
}

TEST_CASE("the interleaved schedule alternates the finalists", "[engine][judge]") {
  CHECK(interleaved_schedule(2, 3) == std::vector<int64_t>{0, 1, 0, 1, 0, 1});
  std::vector<int64_t> three = interleaved_schedule(3, 4);
  REQUIRE(three.size() == 12);
  for (size_t i = 0; i < three.size(); ++i)
    CHECK(three[i] == static_cast<int64_t>(i % 3));
  for (size_t i = 1; i < three.size(); ++i)
    CHECK(three[i] != three[i - 1]);
  for (int64_t f = 0; f < 3; ++f)
    CHECK(std::count(three.begin(), three.end(), f) == 4);
  CHECK(interleaved_schedule(0, 5).empty());
  CHECK(interleaved_schedule(3, 0).empty());
}

TEST_CASE("a final within the noise is a tie that keeps the earlier finalist", "[engine][judge]") {
  // Finalist 1 is 0.5% faster by the medians: within 2% noise.
  auto final = pick_winner({samples_around(1.000, 0.02, 30), samples_around(0.995, 0.02, 30, 2)});
  REQUIRE(final);
  CHECK(final->fastest == 1);
  CHECK(final->winner == 0);
  CHECK(final->kind == final_kind::tie);
  CHECK(final->reason.find("simpler") != std::string::npos);
  CHECK(final->timings.size() == 2);
}

TEST_CASE("a finalist clearly faster than the others wins the final", "[engine][judge]") {
  auto final = pick_winner({samples_around(1.0, 0.01, 30), samples_around(0.8, 0.01, 30, 1),
                            samples_around(0.9, 0.01, 30, 2)});
  REQUIRE(final);
  CHECK(final->winner == 1);
  CHECK(final->fastest == 1);
  CHECK(final->kind == final_kind::clear);
}

TEST_CASE("a tie goes to the earliest finalist within the noise of the fastest",
          "[engine][judge]") {
  // 0 is clearly slower; 1 and 2 are within the noise of each other: 1 wins over 2.
  auto final = pick_winner({samples_around(1.0, 0.01, 30), samples_around(0.805, 0.01, 30, 1),
                            samples_around(0.800, 0.01, 30, 2)});
  REQUIRE(final);
  CHECK(final->fastest == 2);
  CHECK(final->winner == 1);
  CHECK(final->kind == final_kind::tie);
}

TEST_CASE("a final needs finalists with samples", "[engine][judge]") {
  CHECK_FALSE(pick_winner({}));
  auto missing = pick_winner({{1.0, 1.1}, {}});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message().find("finalist 1") != std::string::npos);
}

TEST_CASE("a final run on two cards compares its finalists on one card's scale",
          "[engine][judge]") {
  // Finalist 0 takes 1.0 ms and finalist 1 0.99 ms on card 0; card 1 is 10% faster for both.
  // Had card 1 timed finalist 0 more often, finalist 0 would look faster on the raw samples.
  std::vector<final_sample> samples;
  for (int round = 0; round < 6; ++round) {
    int32_t card = round < 4 ? 1 : 0;
    double scale = card == 1 ? 0.9 : 1.0;
    samples.push_back({0, card, 1.00 * scale});
    if (round % 2 == 0 || card == 0) // finalist 1 lost two slots on card 1
      samples.push_back({1, card, 0.99 * scale});
  }
  auto raw = [&](int64_t finalist) {
    std::vector<double> out;
    for (const final_sample& s : samples)
      if (s.finalist == finalist)
        out.push_back(s.ms);
    return out;
  };
  auto unaligned = pick_winner({raw(0), raw(1)});
  REQUIRE(unaligned);
  CHECK(unaligned->fastest == 0); // the card bias wins without the alignment

  auto aligned = align_final_samples(samples, 2, 0);
  REQUIRE(aligned.size() == 2);
  CHECK(aligned[0].size() == 6);
  CHECK(aligned[1].size() == 4);
  for (double ms : aligned[0])
    CHECK(ms == Approx(1.00));
  for (double ms : aligned[1])
    CHECK(ms == Approx(0.99));
  auto final = pick_winner(aligned);
  REQUIRE(final);
  CHECK(final->fastest == 1);
  CHECK(final->timings[1].median_ms == Approx(0.99));

  // On card 1's scale instead, every sample is 10% lower.
  auto on_card1 = align_final_samples(samples, 2, 1);
  CHECK(on_card1[0].front() == Approx(0.90));
}

TEST_CASE("a final's card that missed a finalist is left out of the alignment", "[engine][judge]") {
  // Card 1 never timed finalist 1: its samples of finalist 0 cannot be put on card 0's scale.
  std::vector<final_sample> samples{{0, 0, 1.0}, {1, 0, 2.0}, {0, 1, 0.5}, {0, 1, 0.5}};
  auto aligned = align_final_samples(samples, 2, 0);
  REQUIRE(aligned.size() == 2);
  CHECK(aligned[0] == std::vector<double>{1.0});
  CHECK(aligned[1] == std::vector<double>{2.0});
  // One card: the samples as they are; a finalist with none stays empty.
  auto one = align_final_samples({{0, 3, 1.5}, {0, 3, 1.25}}, 2, 0);
  CHECK(one[0] == std::vector<double>{1.5, 1.25});
  CHECK(one[1].empty());
  CHECK(align_final_samples({}, 3, 0).size() == 3);
}

TEST_CASE("finalists are the fastest accepted nodes, simplest first", "[engine][judge]") {
  search_tree tree;
  auto settle = [&](node_id id, node_status status, double median) {
    node_record n = tree.node(id);
    n.status = status;
    n.disposition = disposition::passed;
    n.time = spread_timing(median, 0.01);
    REQUIRE(tree.update(n));
  };
  settle(0, node_status::accepted, 1.0);
  auto depth1 = tree.expand(0, {plan{"a", "", {}}, plan{"b", "", {}}, plan{"c", "", {}}});
  REQUIRE(depth1);
  settle(1, node_status::accepted, 0.7);
  settle(2, node_status::accepted, 0.9);
  settle(3, node_status::rejected, 0.2); // fast but rejected: never a finalist
  auto deep = tree.add_child(1, plan{"d", "", {}});
  REQUIRE(deep);
  settle(*deep, node_status::accepted, 0.5);
  CHECK(pick_finalists(tree, 3) == std::vector<node_id>{1, 2, *deep});
  CHECK(pick_finalists(tree, 1) == std::vector<node_id>{*deep});
  CHECK(pick_finalists(tree, 10) == std::vector<node_id>{0, 1, 2, *deep});
  // The reference is always a finalist, first; once only.
  CHECK(with_reference(tree, pick_finalists(tree, 1)) == std::vector<node_id>{0, *deep});
  CHECK(with_reference(tree, pick_finalists(tree, 10)) == std::vector<node_id>{0, 1, 2, *deep});
  // A reference that was not accepted (it failed) is not.
  settle(0, node_status::failed, 1.0);
  CHECK(with_reference(tree, {*deep}) == std::vector<node_id>{*deep});
}

TEST_CASE("no final ends with a winner slower than the reference: a simpler finalist tied with "
          "the fastest but slower than the reference gives way to the fastest",
          "[engine][judge]") {
  // Finalist 0 is the reference (tight, 1.00 ms); finalist 1, simpler than the fastest, is
  // slower than it at the median (1.08) but so spread that the fastest (0.80) cannot beat it
  // beyond the noise; the fastest clearly beats the reference.
  const std::vector<double> reference = {1.00, 1.01, 0.99, 1.00, 1.01, 1.00, 0.99, 1.00};
  const std::vector<double> wide = {0.60, 1.60, 0.70, 1.50, 1.08, 1.40, 0.65, 1.09};
  const std::vector<double> fastest = {0.80, 0.81, 0.79, 0.80, 0.81, 0.80, 0.79, 0.80};
  auto unguarded = pick_winner({reference, wide, fastest});
  REQUIRE(unguarded);
  CHECK(unguarded->fastest == 2);
  REQUIRE(unguarded->winner == 1); // the tie keeps the simpler, slower than the reference
  CHECK(unguarded->timings[1].median_ms > unguarded->timings[0].median_ms);
  auto guarded = pick_winner({reference, wide, fastest}, {}, 0, 0);
  REQUIRE(guarded);
  CHECK(guarded->winner == 2);
  CHECK(guarded->kind == final_kind::clear);
  CHECK_THAT(guarded->reason, Catch::Matchers::Contains("slower than the reference"));
  // The reference itself may win: a tie with it keeps it.
  auto tie = pick_winner({reference, {0.99, 1.00, 1.01, 0.99, 1.00, 1.01, 1.00, 0.99}}, {}, 0, 0);
  REQUIRE(tie);
  CHECK(tie->winner == 0);
}

TEST_CASE("a finalist faster in every interleaved round wins though slow rounds widen both "
          "spreads",
          "[engine][judge]") {
  // Five rounds; rounds 1 and 3 ran on a slowed card (both sides 30% slower). By the spreads
  // the two overlap (the faster's p90 is above the slower's p10), round by round finalist 1 is
  // 10% faster every time.
  const std::vector<double> slower = {1.00, 1.30, 1.01, 1.31, 1.00};
  const std::vector<double> faster = {0.90, 1.17, 0.91, 1.18, 0.90};
  auto final = pick_winner({slower, faster});
  REQUIRE(final);
  CHECK(final->fastest == 1);
  CHECK(final->winner == 1);
  CHECK(final->kind == final_kind::clear);
  // Faster in four rounds of five is not enough: a tie, the simpler kept.
  std::vector<double> once_slower = faster;
  once_slower[1] = 1.32;
  auto tie = pick_winner({slower, once_slower});
  REQUIRE(tie);
  CHECK(tie->winner == 0);
  CHECK(tie->kind == final_kind::tie);
  // Rounds that do not pair up (a finalist missed one) fall back to the spreads.
  auto unpaired = pick_winner({slower, {0.90, 1.17, 0.91, 1.18}});
  REQUIRE(unpaired);
  CHECK(unpaired->winner == 0);
}
