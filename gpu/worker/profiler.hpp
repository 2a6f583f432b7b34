#pragma once

// The profile job's two halves: the activity part (every kernel of one call, from the stream
// audit's records) and the counters (CUPTI's range profiler). See profiler.cpp for the method.

#include "engine/profile.hpp"
#include "gpu/worker/stream_audit.hpp"
#include "gpu/worker_protocol.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ks::gpu::worker {

/// What the range profiler needs from the session to replay one call of ks_forward.
struct profiled_call {
  std::function<void()> prepare; ///< before each pass, outside any range: flush L2
  std::function<void()> run;     ///< one call of ks_forward, then the device synchronized;
                                 ///< throws (the session's job failure) when it fails
};

/// Fills the activity part of `p` (kernels, launches, copies, kernel_ms, span_ms) from the
/// records of one call; returns the call's kernel launches in the order they ran.
std::vector<activity> fill_activity(engine::profile& p, std::vector<activity> records);

/// Reads hardware metrics through CUPTI's range profiler. One per process: CUPTI's profiler
/// is initialized once, and a device that refuses its counters refuses them for good.
class range_profiler {
public:
  /// Returns the process's profiler.
  static range_profiler& instance();

  /// Reads the metrics of `call` on CUDA device `device` into `p` (p.metrics, each kernel's
  /// metrics, p.counters, p.passes, p.range, p.replay, p.notes); `launches` are the call's
  /// kernel launches in order (fill_activity). When the counters cannot be read it sets
  /// p.counters_unavailable and leaves the rest; a failure of the call itself propagates.
  void collect(engine::profile& p, const std::vector<activity>& launches, const profiled_call& call,
               const profile_options& options, int32_t device);

  range_profiler(const range_profiler&) = delete;
  range_profiler& operator=(const range_profiler&) = delete;
  ~range_profiler();

private:
  range_profiler();
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ks::gpu::worker
