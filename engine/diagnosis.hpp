#pragma once

// The typed diagnosis of a kernel that travels to the planner: its bottleneck class, how close
// it is to the roofline, what ptxas said of its resources, and the evidence for the verdict
// (metric, value, threshold). A diagnosis from hardware counters (analyst.hpp,
// diagnose_profile) also carries what the counters said (`hardware`): DRAM, cache and SM
// throughput, achieved occupancy and what limits it, the main stall reason, and the waste
// (bytes and flops moved against the task's minimum). Skill preconditions are evaluated
// against its facts(), never against its prose; the prose (`text`) is for people and
// language models.

#include "engine/analyst.hpp"
#include "engine/expression.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// One measurement behind a verdict: `metric` compared with `threshold` ("fraction_of_roofline
/// 0.42 < 0.9"). Counter-based diagnoses add one per metric they used.
struct metric_evidence {
  std::string metric; ///< "fraction_of_roofline", "dram_throughput", ...
  double value = 0;
  std::string relation; ///< "<", ">=", ...: how value stands to threshold
  double threshold = 0;

  friend bool operator==(const metric_evidence&, const metric_evidence&) = default;
};

/// What the hardware counters of a profile said, in the terms the rules and the skills use.
/// A value below 0 (or an empty text) is unknown: the counter was not read.
struct hardware_summary {
  bool counters = false;           ///< hardware counters were read (else activity only)
  std::string kernel;              ///< the kernel that took the most time
  double kernel_share = -1;        ///< its share of the call's kernel time, 0..1
  int64_t launches = 0;            ///< kernel launches per call; 0 when not profiled
  double mean_kernel_us = -1;      ///< kernel time per launch
  double dram_bytes = -1;          ///< read + written per call
  double bytes_waste = -1;         ///< dram_bytes / the task's minimum (cost.bytes)
  double executed_flops = -1;      ///< fp32: 2 per FFMA, 1 per FADD and FMUL
  double flops_waste = -1;         ///< executed_flops / the task's flops
  double dram_throughput_pct = -1; ///< percent of peak, as the metrics below
  double l2_throughput_pct = -1;
  double l1_throughput_pct = -1;
  double sm_throughput_pct = -1;
  double l2_hit_pct = -1;
  double l1_hit_pct = -1;
  double occupancy_pct = -1; ///< achieved: active warps of the SM's maximum
  double theoretical_occupancy_pct = -1;
  std::string occupancy_limiter; ///< "registers", "shared_memory", "block_size",
                                 ///< "blocks", "grid" (fewer blocks than SMs), "none"
  std::string top_stall;         ///< the stall reason of the most active warps
  double top_stall_pct = -1;     ///< share of active warps stalled for it
  double local_bytes = -1;       ///< local-memory (spill) traffic per call

  friend bool operator==(const hardware_summary&, const hardware_summary&) = default;
};

/// Lists every fact a skill's `requires` may name (diagnosis::facts() gives those known).
std::span<const std::string_view> diagnosis_fact_names();

/// What the analyst concluded about one timed kernel; a default value is "not diagnosed".
struct diagnosis {
  bool diagnosed = false;                ///< false: not diagnosed (no peaks, not timed); the rest
                                         ///< is then meaningless
  bound_kind bound = bound_kind::memory; ///< the bottleneck class, when diagnosed
  double fraction_of_roofline = 0;       ///< roofline floor / median; 0 when unknown
  double achieved_gbps = 0;              ///< the task's bytes / median
  double achieved_gflops = 0;            ///< the task's flops / median
  int32_t registers = 0;                 ///< per thread, of the heaviest kernel; 0 when unknown
  int64_t spill_bytes = -1;              ///< spill stores + loads per thread; -1 when unknown
  std::vector<metric_evidence> evidence;
  std::string text;          ///< for people and prompts; never parsed
  hardware_summary hardware; ///< what a profile's counters said; unknown otherwise

  /// Returns the facts a skill's preconditions may name (diagnosis_fact_names()), only those
  /// known: "diagnosis.bound" (a class name), "diagnosis.fraction_of_roofline",
  /// "diagnosis.achieved_gbps", "diagnosis.achieved_gflops", "diagnosis.registers",
  /// "diagnosis.spills" (bytes per thread), and from a profile "diagnosis.counters" (1 when
  /// hardware counters were read), "diagnosis.launches", "diagnosis.dram_throughput",
  /// "diagnosis.l2_throughput", "diagnosis.l1_throughput", "diagnosis.sm_throughput",
  /// "diagnosis.l2_hit_rate", "diagnosis.l1_hit_rate", "diagnosis.occupancy" (achieved, all
  /// percentages 0..100), "diagnosis.theoretical_occupancy", "diagnosis.occupancy_limiter" (a
  /// name), "diagnosis.bytes_waste" and "diagnosis.flops_waste" (ratios to the task's
  /// minimum), "diagnosis.stall" (the main stall reason's name), "diagnosis.stall_pct".
  fact_map facts() const;

  friend bool operator==(const diagnosis&, const diagnosis&) = default;
};

/// Returns the typed diagnosis of `verdict`, with `usage` (when known) for registers and
/// spills, and the evidence of its class.
diagnosis make_diagnosis(const bottleneck& verdict, const std::optional<kernel_usage>& usage);

} // namespace ks::engine
