#include "engine/judge.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

namespace ks::engine {

namespace {

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, pattern, a, b, c);
  return buffer;
}

// Decides whether `faster` beats `slower` by the two counts of the file's comment; the
// verdict's gain is relative to `slower`.
verdict beats(const timing& slower, const timing& faster, const judge_options& options) {
  verdict v;
  if (!slower.measured() || !faster.measured()) {
    v.reason = "no timing to compare";
    return v;
  }
  v.gain = 1 - faster.median_ms / slower.median_ms;
  if (!(faster.median_ms < slower.median_ms * (1 - options.min_gain))) {
    v.reason =
        format("gain %.2f%% is not above the minimum %.2f%%", v.gain * 100, options.min_gain * 100);
    return v;
  }
  auto enough = [&](const timing& t) {
    return static_cast<int64_t>(t.samples_ms.size()) >= options.min_samples;
  };
  if (enough(slower) && enough(faster)) {
    v.evidence = evidence::rank_test;
    v.p_value = rank_test_p_value(faster.samples_ms, slower.samples_ms);
    if (v.p_value < options.alpha) {
      v.decision = verdict_kind::accepted;
      v.reason = format("%.2f%% faster, rank test p = %.3g < %.3g", v.gain * 100, v.p_value,
                        options.alpha);
    } else {
      v.reason = format("%.2f%% faster by the medians, but within the noise (rank test p = "
                        "%.3g, needs < %.3g)",
                        v.gain * 100, v.p_value, options.alpha);
    }
    return v;
  }
  v.evidence = evidence::spread;
  if (faster.p90_ms < slower.p10_ms) {
    v.decision = verdict_kind::accepted;
    v.reason = format("%.2f%% faster, p90 %.4g ms below the other's p10 %.4g ms", v.gain * 100,
                      faster.p90_ms, slower.p10_ms);
  } else {
    v.reason = format("%.2f%% faster by the medians, but within the noise (p90 %.4g ms is not "
                      "below the other's p10 %.4g ms)",
                      v.gain * 100, faster.p90_ms, slower.p10_ms);
  }
  return v;
}

// Rounds a paired comparison needs: the chance that a finalist no faster than another is
// faster in every one of them is 2^-5, about 3%.
constexpr size_t min_paired_rounds = 5;

// Finals time the finalists in interleaved rounds (A B C, A B C, ...): sample r of every
// finalist comes from round r, so a burst that slows the card for a round slows both sides of
// it. Decides whether `faster` beats `slower` round by round: faster in every round, by more
// than min_gain at the median of the rounds' gains. Undecided (not accepted) when the rounds
// do not pair up or are too few.
verdict beats_in_rounds(const std::vector<double>& slower, const std::vector<double>& faster,
                        const judge_options& options) {
  verdict v;
  if (slower.size() != faster.size() || slower.size() < min_paired_rounds)
    return v;
  std::vector<double> gains;
  for (size_t r = 0; r < slower.size(); ++r) {
    if (!(faster[r] > 0) || !(faster[r] < slower[r]))
      return v;
    gains.push_back(1 - faster[r] / slower[r]);
  }
  std::sort(gains.begin(), gains.end());
  v.gain = quantile(gains, 0.5);
  if (!(v.gain > options.min_gain))
    return v;
  v.decision = verdict_kind::accepted;
  v.reason = format("%.2f%% faster at the median of %.0f interleaved rounds, faster in every one",
                    v.gain * 100, static_cast<double>(gains.size()));
  return v;
}

} // namespace

double min_gain_against(const judge_options& options, double slower_median_ms, double torch_ms) {
  if (torch_ms > 0 && slower_median_ms > torch_ms)
    return std::min(options.min_gain, options.torch_min_gain);
  return options.min_gain;
}

verdict accept(const timing& parent, const timing& child, const judge_options& options,
               double torch_ms) {
  judge_options against = options;
  against.min_gain = min_gain_against(options, parent.median_ms, torch_ms);
  return beats(parent, child, against);
}

double rank_test_p_value(const std::vector<double>& lower, const std::vector<double>& higher) {
  if (lower.empty() || higher.empty())
    return 1;
  // Rank the pooled samples, ties sharing their average rank.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(lower.size() + higher.size());
  for (double x : lower)
    pooled.emplace_back(x, 0);
  for (double x : higher)
    pooled.emplace_back(x, 1);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  auto n1 = static_cast<double>(lower.size());
  auto n2 = static_cast<double>(higher.size());
  double n = n1 + n2;
  double rank_sum_lower = 0;
  double tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first)
      ++j;
    double average_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second == 0)
        rank_sum_lower += average_rank;
    auto t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    i = j;
  }
  // u counts the pairs (lower, higher) where the lower sample is the smaller (ties count 1/2).
  double u = n1 * n2 - (rank_sum_lower - n1 * (n1 + 1) / 2);
  double mean = n1 * n2 / 2;
  double variance = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (!(variance > 0))
    return 1;
  double z = (u - mean - 0.5) / std::sqrt(variance);
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

std::vector<int64_t> interleaved_schedule(int64_t n_finalists, int64_t rounds) {
  std::vector<int64_t> order;
  if (n_finalists < 1 || rounds < 1)
    return order;
  order.reserve(static_cast<size_t>(n_finalists * rounds));
  for (int64_t round = 0; round < rounds; ++round)
    for (int64_t finalist = 0; finalist < n_finalists; ++finalist)
      order.push_back(finalist);
  return order;
}

std::vector<std::vector<double>> align_final_samples(const std::vector<final_sample>& samples,
                                                     int64_t n_finalists, int32_t scale_gpu) {
  auto n = static_cast<size_t>(std::max<int64_t>(n_finalists, 0));
  std::map<int32_t, std::vector<std::vector<double>>> by_card; // card -> finalist -> samples
  std::vector<bool> present(n, false);
  for (const final_sample& s : samples) {
    if (s.finalist < 0 || static_cast<size_t>(s.finalist) >= n || !(s.ms > 0))
      continue;
    auto& card = by_card[s.gpu];
    card.resize(n);
    card[static_cast<size_t>(s.finalist)].push_back(s.ms);
    present[static_cast<size_t>(s.finalist)] = true;
  }
  std::vector<std::vector<double>> out(n);
  if (by_card.empty())
    return out;
  auto complete = [&](const std::vector<std::vector<double>>& card) {
    for (size_t i = 0; i < n; ++i)
      if (present[i] && card[i].empty())
        return false;
    return true;
  };
  auto size_of = [&](const std::vector<std::vector<double>>& card) {
    size_t count = 0;
    for (const auto& v : card)
      count += v.size();
    return count;
  };
  // The scale card: the one asked for when it timed every finalist, else the fullest one that
  // did; when no card did, the fullest card alone.
  int32_t scale = by_card.begin()->first;
  bool scale_complete = false;
  for (const auto& [gpu, card] : by_card) {
    bool c = complete(card);
    bool better =
        (c && !scale_complete) || (c == scale_complete && size_of(card) > size_of(by_card[scale]));
    if (c && gpu == scale_gpu) {
      scale = gpu;
      scale_complete = true;
      break;
    }
    if (better) {
      scale = gpu;
      scale_complete = c;
    }
  }
  auto median_of = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return quantile(v, 0.5);
  };
  const auto& base = by_card[scale];
  for (const auto& [gpu, card] : by_card) {
    if (gpu != scale && (!scale_complete || !complete(card)))
      continue;
    double log_sum = 0;
    int64_t terms = 0;
    for (size_t i = 0; i < n; ++i) {
      if (card[i].empty() || base[i].empty())
        continue;
      log_sum += std::log(median_of(card[i]) / median_of(base[i]));
      ++terms;
    }
    double factor = terms > 0 ? std::exp(log_sum / static_cast<double>(terms)) : 1;
    for (size_t i = 0; i < n; ++i)
      for (double ms : card[i])
        out[i].push_back(gpu == scale ? ms : ms / factor);
  }
  return out;
}

expected<final_result> pick_winner(const std::vector<std::vector<double>>& samples_ms,
                                   const judge_options& options, double torch_ms,
                                   int64_t reference) {
  if (samples_ms.empty())
    return fail(errc::invalid_input, "a final needs at least one finalist");
  final_result result;
  for (size_t i = 0; i < samples_ms.size(); ++i) {
    if (samples_ms[i].empty())
      return fail(errc::invalid_input, "finalist " + std::to_string(i) + " has no samples");
    result.timings.push_back(summarize(samples_ms[i]));
  }
  for (size_t i = 1; i < result.timings.size(); ++i)
    if (result.timings[i].median_ms < result.timings[static_cast<size_t>(result.fastest)].median_ms)
      result.fastest = static_cast<int64_t>(i);
  const timing& fastest = result.timings[static_cast<size_t>(result.fastest)];
  for (size_t i = 0; i < result.timings.size(); ++i) {
    if (static_cast<int64_t>(i) == result.fastest) {
      result.winner = result.fastest;
      result.reason = "finalist " + std::to_string(i) +
                      " is the fastest and beats every "
                      "simpler finalist beyond the noise";
      break;
    }
    judge_options against = options;
    against.min_gain = min_gain_against(options, result.timings[i].median_ms, torch_ms);
    verdict v = beats(result.timings[i], fastest, against);
    if (!v.accepted()) {
      // A slow round moves both sides of it: compare round by round before calling it a tie.
      verdict paired =
          beats_in_rounds(samples_ms[i], samples_ms[static_cast<size_t>(result.fastest)], against);
      if (paired.accepted())
        continue;
      result.winner = static_cast<int64_t>(i);
      result.kind = final_kind::tie;
      result.reason = "finalist " + std::to_string(i) + " ties with the fastest (finalist " +
                      std::to_string(result.fastest) + "): " + v.reason +
                      "; the simpler one is kept";
      break;
    }
  }
  // Never a winner slower than the reference: the fastest is not (its median is the lowest).
  auto ref = static_cast<size_t>(reference);
  if (reference >= 0 && ref < result.timings.size() && result.winner != reference &&
      result.timings[static_cast<size_t>(result.winner)].median_ms >
          result.timings[ref].median_ms) {
    result.reason = "finalist " + std::to_string(result.winner) +
                    " tied with the fastest but is slower than the reference (finalist " +
                    std::to_string(reference) + ") at the median; the fastest, finalist " +
                    std::to_string(result.fastest) + ", wins";
    result.winner = result.fastest;
    result.kind = final_kind::clear;
  }
  return result;
}

std::vector<node_id> with_reference(const search_tree& tree, std::vector<node_id> finalists) {
  if (tree.nodes().empty() || tree.root().status != node_status::accepted ||
      std::find(finalists.begin(), finalists.end(), tree.root().id) != finalists.end())
    return finalists;
  finalists.insert(finalists.begin(), tree.root().id);
  return finalists;
}

std::vector<node_id> pick_finalists(const search_tree& tree, int64_t count) {
  std::vector<node_id> accepted;
  for (const node_record& n : tree.nodes())
    if (n.status == node_status::accepted)
      accepted.push_back(n.id);
  std::stable_sort(accepted.begin(), accepted.end(), [&](node_id a, node_id b) {
    return tree.node(a).time.median_ms < tree.node(b).time.median_ms;
  });
  if (count < 0)
    count = 0;
  if (static_cast<int64_t>(accepted.size()) > count)
    accepted.resize(static_cast<size_t>(count));
  std::sort(accepted.begin(), accepted.end(), [&](node_id a, node_id b) {
    const node_record& x = tree.node(a);
    const node_record& y = tree.node(b);
    return x.depth != y.depth ? x.depth < y.depth : x.id < y.id;
  });
  return accepted;
}

} // namespace ks::engine
