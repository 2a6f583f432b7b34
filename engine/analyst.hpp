#pragma once

// The analyst's bottleneck rules: what limits a timed kernel, from its task's cost, its
// median time and the device's measured peaks (see analyst.cpp for the method).

#include "engine/error.hpp"
#include "engine/task.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ks::engine {

/// Names what limits a kernel: its bottleneck class. The numbers are stable ("storage
/// order"). The timing-only analyst here gives memory, compute or latency; the others are for
/// a diagnosis from hardware counters (cache hit rates, occupancy, kernel counts), which skill
/// files may already name.
enum class bound_kind : int32_t {
  memory = 0,      ///< moving bytes through device memory: the bandwidth term dominates
  compute = 1,     ///< floating-point work: the compute term dominates
  latency = 2,     ///< neither: a short kernel far from both peaks (launch, too little work)
  cache = 3,       ///< L1/L2 traffic, not DRAM, is what saturates
  occupancy = 4,   ///< too few warps resident to hide latency (registers, shared memory)
  launch = 5,      ///< many small kernels: launch overhead dominates
  at_roofline = 6, ///< already at the limit: nothing left to gain in this kernel
};

/// Lists every bottleneck class, in the order of their numbers.
inline constexpr bound_kind all_bound_kinds[] = {
    bound_kind::memory,    bound_kind::compute, bound_kind::latency,    bound_kind::cache,
    bound_kind::occupancy, bound_kind::launch,  bound_kind::at_roofline};

/// Returns the stable name of `k` ("memory", "compute", "latency", ...).
const char* to_string(bound_kind k) noexcept;

/// Parses a stable name back; nullopt if unknown.
std::optional<bound_kind> parse_bound_kind(std::string_view name) noexcept;

/// Holds a device's measured peaks; a value <= 0 is unknown.
struct device_peaks {
  double gbps = 0;   ///< memory bandwidth, GB/s (1e9 bytes per second)
  double gflops = 0; ///< float32 throughput, GFLOP/s
};

/// Holds what ptxas reported for the kernel (the hottest one, for several), as plain numbers:
/// gpu::kernel_resources without the names.
struct kernel_usage {
  int32_t registers = 0;    ///< per thread
  int64_t shared_bytes = 0; ///< static shared memory per block
  int64_t spill_stores = 0; ///< bytes per thread
  int64_t spill_loads = 0;  ///< bytes per thread
};

/// Marks a kernel latency-bound when it reaches less than this fraction of both peaks ...
inline constexpr double latency_max_fraction = 0.10;

/// ... and runs for less than this many milliseconds (20 us).
inline constexpr double latency_max_ms = 0.020;

/// The analyst's verdict on one timed kernel.
struct bottleneck {
  bound_kind bound = bound_kind::memory;
  double fraction_of_roofline = 0; ///< roofline floor / median: 1 is at the limit
  double achieved_gbps = 0;        ///< the task's bytes / median, GB/s
  double achieved_gflops = 0;      ///< the task's flops / median, GFLOP/s
  std::string text;                ///< one or two sentences for people and planners
};

/// Diagnoses a kernel that did the work `cost` in `median_ms` milliseconds on a device with
/// `peaks`, mentioning register spills when `usage` reports any. Returns errc::invalid_input
/// when `median_ms` is not a finite number > 0 or both peaks are unknown.
[[nodiscard]] expected<bottleneck>
diagnose_bottleneck(const task_cost& cost, double median_ms, const device_peaks& peaks,
                    const std::optional<kernel_usage>& usage = std::nullopt);

} // namespace ks::engine
