#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace ks::base {

/// Sums the time spent in one named step of a pipeline.
struct step_stats {
  int64_t count = 0;
  double total_ms = 0;
  double max_ms = 0;
};

/// Maps a step's path ("branch/compile") to its time: a perf tree flattened by path, as a
/// supervisor keeps it for its task and the campaign merges it over all tasks.
using perf_tree = std::map<std::string, step_stats>;

/// Times one step, from its start until done(); a step spans several messages (a request and
/// its reply), so it is stopped explicitly rather than at the end of a C++ scope.
class step_timer {
public:
  /// Starts timing step `path`.
  explicit step_timer(std::string_view path)
    : path_(path), start_(std::chrono::steady_clock::now()) {}

  /// Adds the time since the start to `tree` under the step's path; returns it in ms.
  double done(perf_tree& tree) const {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
                    .count();
    step_stats& s = tree[path_];
    s.count += 1;
    s.total_ms += ms;
    if (ms > s.max_ms)
      s.max_ms = ms;
    return ms;
  }

private:
  std::string path_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace ks::base
