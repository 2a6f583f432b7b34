#pragma once

#include <cstdint>
#include <vector>

namespace ks::engine {

/// Summarizes the timing trials of one kernel, in milliseconds. `trials == 0` means "not
/// measured". The raw samples are optional: when both sides of a comparison carry enough of
/// them, the judge uses a rank test instead of the p10/p90 spread.
struct timing {
  double median_ms = 0;
  double p10_ms = 0; ///< 10th percentile
  double p90_ms = 0; ///< 90th percentile
  int64_t trials = 0;
  std::vector<double> samples_ms; ///< raw trial times, in trial order; may be empty

  /// Checks whether this holds a measurement (trials > 0 and a positive median).
  bool measured() const noexcept { return trials > 0 && median_ms > 0; }

  friend bool operator==(const timing&, const timing&) = default;
};

/// Returns the summary of `samples_ms` (median, p10, p90 by linear interpolation between order
/// statistics, trials = its size), keeping the samples; an all-zero timing if it is empty.
timing summarize(std::vector<double> samples_ms);

/// Returns the `q`-quantile (0 <= q <= 1) of `sorted_ms`, which must be sorted ascending and
/// non-empty, by linear interpolation between the nearest order statistics.
double quantile(const std::vector<double>& sorted_ms, double q);

} // namespace ks::engine
