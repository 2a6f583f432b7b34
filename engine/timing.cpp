#include "engine/timing.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ks::engine {

double quantile(const std::vector<double>& sorted_ms, double q) {
  q = std::clamp(q, 0.0, 1.0);
  double position = q * static_cast<double>(sorted_ms.size() - 1);
  auto below = static_cast<size_t>(std::floor(position));
  size_t above = std::min(below + 1, sorted_ms.size() - 1);
  double weight = position - static_cast<double>(below);
  return sorted_ms[below] + weight * (sorted_ms[above] - sorted_ms[below]);
}

timing summarize(std::vector<double> samples_ms) {
  timing result;
  if (samples_ms.empty())
    return result;
  std::vector<double> sorted = samples_ms;
  std::sort(sorted.begin(), sorted.end());
  result.median_ms = quantile(sorted, 0.5);
  result.p10_ms = quantile(sorted, 0.1);
  result.p90_ms = quantile(sorted, 0.9);
  result.trials = static_cast<int64_t>(samples_ms.size());
  result.samples_ms = std::move(samples_ms);
  return result;
}

} // namespace ks::engine
