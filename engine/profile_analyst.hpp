#pragma once

// The analyst from hardware counters: the bottleneck class of a profiled kernel with its
// evidence (metric, value, threshold) and its waste, from a profile (profile.hpp), the task's
// minimum cost and the device's measured peaks. See profile_analyst.cpp for the rules.

#include "engine/diagnosis.hpp"
#include "engine/profile.hpp"
#include "engine/task.hpp"

#include <optional>

namespace ks::engine {

/// The thresholds of the counter rules; the defaults are tested on the counter sets of
/// tests/engine/profiles/ (hand-written ones, and h100_* recorded by scripts/gpu-profile.sh).
/// at_roofline_fraction sits below the search's stop (95%): a plain float4 copy on an H100
/// runs at 93-97% of the calibrated copy bandwidth from run to run, while a reference at 92%
/// (matvec) still had 11% to gain.
struct profile_thresholds {
  int64_t launch_min_launches = 16;    ///< launch-bound: at least this many kernels per call
  double launch_max_mean_us = 10;      ///< ... each this short on average
  double at_roofline_fraction = 0.93;  ///< at the roofline: timing's fraction at least this ...
  double at_roofline_pct = 90;         ///< ... or DRAM (SM) throughput at least this percent
  double at_roofline_max_waste = 1.15; ///< ... while moving (computing) at most this multiple
                                       ///< of the task's minimum
  double busy_pct = 60;                ///< a unit this busy (percent of peak) is the bottleneck
  double saturated_pct = 80;           ///< a unit this busy wins over low occupancy
  double math_busy_pct = 50;           ///< compute-bound needs a math pipe this busy, or ...
  double issue_busy_pct = 80;          ///< ... the issue slots this busy
  double cache_over_dram_pct = 25;     ///< the caches win over a busy DRAM by this many points
  double waste_note = 1.5;             ///< waste from this multiple on is named in the text
  double low_occupancy_pct = 30;       ///< occupancy-bound: achieved occupancy below this ...
  double low_theoretical_pct = 50;     ///< ... and the launch allows no more than this
  double stall_note_pct = 20;          ///< a stall reason of this share of warps is evidence
};

/// Returns the diagnosis of a kernel profiled as `p`, for a task of minimum cost `cost` on a
/// device with `peaks`. `median_ms` is the kernel's timed median (0: use the profile's own
/// kernel time); `usage` is what ptxas said, when known. Without counters (p.counters false)
/// the class comes from the timing rules (diagnose_bottleneck), except that the activity
/// records still tell a launch-bound call; the hardware summary then holds what the activity
/// records gave. A profile of nothing (no kernel launched, no time) is not diagnosed.
diagnosis diagnose_profile(const profile& p, const task_cost& cost, const device_peaks& peaks,
                           double median_ms,
                           const std::optional<kernel_usage>& usage = std::nullopt,
                           const profile_thresholds& thresholds = {});

} // namespace ks::engine
