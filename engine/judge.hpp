#pragma once

// The noise-aware judge. GPU timings are noisy (clocks, L2 state, the other work on the host)
// and skewed (a long right tail), so "the child's median is lower" is no evidence: two runs of
// the same kernel differ by a percent or more. A child is accepted only when it beats its
// parent on two counts:
//
//   1. practically: child median < parent median * (1 - min_gain). A gain below min_gain is
//      not worth the added complexity of the child, even when it is real;
//   2. statistically, beyond the measured noise:
//      - when both sides carry at least min_samples raw samples, by a one-sided Mann-Whitney
//        U test (normal approximation, tie-corrected, continuity-corrected) at level alpha: it
//        uses every sample, needs no normality, and a few outliers cannot sway it;
//      - otherwise, by the spreads not overlapping: child p90 < parent p10. If the two were the
//        same kernel, this would almost never happen, so a false accept is unlikely; the price
//        is that a real gain smaller than the spread is missed.
//
// Finalists are re-timed interleaved (A B C A B C ...): plain round robin, so that slow drift
// (clocks, temperature) falls on every finalist alike, unlike timing A fully then B. The
// winner is then the earliest finalist (the caller orders them simplest first) that the
// fastest does not beat by the same two counts, or round by round: sample r of each finalist
// comes from round r, so a burst that slows the card for a round slows both sides of it, and
// the fastest that is faster in every one of at least five rounds, by more than min_gain at the
// median of the rounds' gains, beats it though the spreads overlap (on one H100 five unpaired
// rounds let an 11% faster finalist "tie"). A difference within the noise is a tie, and a tie
// keeps the simpler kernel.
//
// Against a kernel slower than the task's torch baseline (torch_ms, when the campaign has
// one), the practical count asks only torch_min_gain (0.5%): a gain that closes the gap to
// torch is worth a less simple kernel, and the statistical count still rules out noise. On
// one H100, memory-bound tasks at the copy bandwidth trailed torch.compile by 1-3% because
// every step that closed it was below the 2% of min_gain.
//
// The reference is always a finalist (with_reference), the simplest, so that no task ends with
// a winner slower than its reference: a reference timed once while its card was slow makes
// every candidate look faster than it is, and only re-timing both in the same rounds shows
// it. And a winner is never slower than the reference at the median of the final: a simpler
// finalist that ties with the fastest but is slower than the reference gives way to the
// fastest (pick_winner's `reference`).

#include "engine/error.hpp"
#include "engine/search_tree.hpp"
#include "engine/timing.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ks::engine {

/// Sets how much evidence the judge asks for.
struct judge_options {
  double min_gain = 0.02;        ///< the smallest relative gain worth accepting (0.02 = 2%)
  double alpha = 0.01;           ///< one-sided significance level of the rank test
  int64_t min_samples = 8;       ///< raw samples each side needs before the rank test is used
  double torch_min_gain = 0.005; ///< min_gain against a kernel slower than torch (see above)

  friend bool operator==(const judge_options&, const judge_options&) = default;
};

/// Names the judge's decision. The numbers are stable ("storage order").
enum class verdict_kind : int32_t { rejected = 0, accepted = 1 };

/// Names the evidence a decision rests on. The numbers are stable ("storage order").
enum class evidence : int32_t {
  none = 0,      ///< decided before any test (no timing, or the gain is too small)
  spread = 1,    ///< p90 of the faster against p10 of the slower
  rank_test = 2, ///< one-sided Mann-Whitney U test on the raw samples
};

/// Holds a decision of the judge and what it rests on.
struct verdict {
  verdict_kind decision = verdict_kind::rejected;
  engine::evidence evidence = engine::evidence::none;
  double gain = 0;    ///< 1 - child median / parent median (0.1 = 10% faster)
  double p_value = 1; ///< the rank test's one-sided p-value; 1 when it did not run
  std::string reason; ///< one sentence for people

  /// Checks whether the child was accepted.
  bool accepted() const noexcept { return decision == verdict_kind::accepted; }
};

/// Returns the smallest gain that counts against a kernel of `slower_median_ms`: the smaller of
/// min_gain and torch_min_gain while that kernel is slower than `torch_ms` (> 0), else min_gain.
double min_gain_against(const judge_options& options, double slower_median_ms, double torch_ms);

/// Returns whether `child` beats `parent` beyond the noise, under `options` (see the top of
/// the file), the task's torch baseline being `torch_ms` (0: none). Rejects when either timing
/// is not measured.
verdict accept(const timing& parent, const timing& child, const judge_options& options = {},
               double torch_ms = 0);

/// Returns the one-sided p-value of the Mann-Whitney U test for "`lower` tends to be smaller
/// than `higher`" (normal approximation with tie and continuity corrections); 1 if either is
/// empty or every value is equal.
double rank_test_p_value(const std::vector<double>& lower, const std::vector<double>& higher);

/// Returns the order in which to time `n_finalists` finalists for `rounds` rounds: finalist
/// indices in round robin, 0 1 .. n-1 0 1 .. n-1 ...; empty if either count is below 1.
std::vector<int64_t> interleaved_schedule(int64_t n_finalists, int64_t rounds);

/// Holds one re-timing of a final: which finalist, and which GPU measured it. A final's
/// rounds may run on different GPUs of one model, each round whole on one card (a block).
struct final_sample {
  int64_t finalist = 0;
  int32_t gpu = 0;
  double ms = 0;

  friend bool operator==(const final_sample&, const final_sample&) = default;
};

/// Returns each finalist's samples (by index, `n_finalists` of them) on the scale of GPU
/// `scale_gpu`: two cards of one model differ by a percent or so, a bias that would otherwise
/// land on whichever finalist a card timed more. A card's factor is the geometric mean, over
/// the finalists, of its median over the scale card's median; samples are divided by it. Only
/// cards that timed every finalist that has samples anywhere are used (the scale card one of
/// them when it qualifies, else the one with the most samples); the rest are left out. With
/// one card the samples come back as they are.
std::vector<std::vector<double>> align_final_samples(const std::vector<final_sample>& samples,
                                                     int64_t n_finalists, int32_t scale_gpu);

/// Says whether a final was won clearly or by a tie. The numbers are stable ("storage order").
enum class final_kind : int32_t {
  clear = 0, ///< the fastest finalist won
  tie = 1,   ///< a simpler finalist was within the noise of the fastest and won
};

/// Holds the outcome of an interleaved final.
struct final_result {
  int64_t winner = 0;  ///< index of the winning finalist
  int64_t fastest = 0; ///< index of the finalist with the lowest median
  final_kind kind = final_kind::clear;
  std::vector<timing> timings; ///< each finalist's summary, by index
  std::string reason;          ///< one sentence for people
};

/// Returns the winner of a final from each finalist's samples in ms (`samples_ms[i]` for
/// finalist i; order the finalists simplest first): the earliest finalist that the fastest
/// does not beat beyond the noise (see the top of the file; `torch_ms` as accept's). Fails with
/// invalid_input if there is no finalist or one has no samples. With `reference` the index of
/// the task's reference among them, the winner is never slower than it at the median: a tied
/// winner that is gives way to the fastest.
[[nodiscard]] expected<final_result> pick_winner(const std::vector<std::vector<double>>& samples_ms,
                                                 const judge_options& options = {},
                                                 double torch_ms = 0, int64_t reference = -1);

/// Returns the finalists of `tree`: its `count` fastest accepted nodes (the root included),
/// ordered simplest first (shallower, then older), as pick_winner expects.
std::vector<node_id> pick_finalists(const search_tree& tree, int64_t count);

/// Returns `finalists` (as pick_finalists orders them) with the tree's root, the reference,
/// first among them when it is accepted and not there yet: every final re-times the reference
/// beside the candidates (see the top of the file).
std::vector<node_id> with_reference(const search_tree& tree, std::vector<node_id> finalists);

} // namespace ks::engine
