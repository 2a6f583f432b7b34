#pragma once

// The typed diagnosis of a kernel that travels to the planner: its bottleneck class, how close
// it is to the roofline, what ptxas said of its resources, and the evidence for the verdict
// (metric, value, threshold). Skill preconditions are evaluated against its facts(), never
// against its prose; the prose (`text`) is for people and language models.

#include "engine/analyst.hpp"
#include "engine/expression.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ks::engine {

/// One measurement behind a verdict: `metric` compared with `threshold` ("fraction_of_roofline
/// 0.42 < 0.9"). Counter-based diagnoses add one per metric they used.
struct metric_evidence {
  std::string metric;   ///< "fraction_of_roofline", "dram_throughput", ...
  double value = 0;
  std::string relation; ///< "<", ">=", ...: how value stands to threshold
  double threshold = 0;

  friend bool operator==(const metric_evidence&, const metric_evidence&) = default;
};

/// What the analyst concluded about one timed kernel; a default value is "not diagnosed".
struct diagnosis {
  bool diagnosed = false;           ///< false: not diagnosed (no peaks, not timed); the rest
                                    ///< is then meaningless
  bound_kind bound = bound_kind::memory; ///< the bottleneck class, when diagnosed
  double fraction_of_roofline = 0;  ///< roofline floor / median; 0 when unknown
  double achieved_gbps = 0;         ///< the task's bytes / median
  double achieved_gflops = 0;       ///< the task's flops / median
  int32_t registers = 0;            ///< per thread, of the heaviest kernel; 0 when unknown
  int64_t spill_bytes = -1;         ///< spill stores + loads per thread; -1 when unknown
  std::vector<metric_evidence> evidence;
  std::string text;                 ///< for people and prompts; never parsed

  /// Returns the facts a skill's preconditions may name: "diagnosis.bound" (a class name),
  /// "diagnosis.fraction_of_roofline", "diagnosis.achieved_gbps", "diagnosis.achieved_gflops",
  /// "diagnosis.registers", "diagnosis.spills" (bytes per thread); only those known.
  fact_map facts() const;

  friend bool operator==(const diagnosis&, const diagnosis&) = default;
};

/// Returns the typed diagnosis of `verdict`, with `usage` (when known) for registers and
/// spills, and the evidence of its class.
diagnosis make_diagnosis(const bottleneck& verdict, const std::optional<kernel_usage>& usage);

} // namespace ks::engine
