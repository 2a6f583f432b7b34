#pragma once

// A profile of one call of a candidate's ks_forward, as the bench worker's profile job
// measures it (gpu/worker/profiler.cpp) and the analyst reads it (analyst.hpp,
// diagnose_profile): every kernel the call launched, with its launch configuration and
// duration (CUPTI's activity API), and the hardware metrics of the call and of each kernel
// (CUPTI's range profiler) where the counters could be read. The metric names are CUPTI's
// (Nsight Compute's), listed once here: the worker asks for these, the analyst's rules read
// these, and a recorded profile (a JSON fixture) names these. The bench worker's .cu files
// include this header through the protocol, so it stays C++17.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// Names the hardware metrics a profile asks for. Values: bytes and counts for `.sum`, percent
/// (0..100) for `.pct` and `pct_of_peak_*`, nanoseconds for gpu__time_duration.
namespace metric {
inline constexpr std::string_view dram_read_bytes = "dram__bytes_read.sum";
inline constexpr std::string_view dram_write_bytes = "dram__bytes_write.sum";
inline constexpr std::string_view dram_throughput =
    "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view l2_hit_rate = "lts__t_sector_hit_rate.pct";
inline constexpr std::string_view l2_throughput =
    "lts__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view l1_hit_rate = "l1tex__t_sector_hit_rate.pct";
inline constexpr std::string_view l1_throughput =
    "l1tex__throughput.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view sm_throughput =
    "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view achieved_occupancy =
    "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view issue_active =
    "smsp__issue_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view fma_pipe =
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view tensor_pipe =
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view tensor_gmma_pipe =
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view branch_uniformity =
    "smsp__sass_average_branch_targets_threads_uniform.pct";
inline constexpr std::string_view load_efficiency =
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct";
inline constexpr std::string_view store_efficiency =
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct";
inline constexpr std::string_view local_load_bytes = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum";
inline constexpr std::string_view local_store_bytes = "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum";
inline constexpr std::string_view ffma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
inline constexpr std::string_view fadd = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr std::string_view fmul = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr std::string_view duration = "gpu__time_duration.sum";

/// The prefix and suffix around a stall reason: smsp__warp_issue_stalled_<reason>_per_warp_
/// active.pct is the share of active warps stalled for that reason.
inline constexpr std::string_view stall_prefix = "smsp__warp_issue_stalled_";
inline constexpr std::string_view stall_suffix = "_per_warp_active.pct";
} // namespace metric

/// Lists the warp-stall reasons a profile asks for (their metric is stall_metric(reason)).
const std::vector<std::string_view>& stall_reasons();

/// Returns the metric of stall reason `reason` ("long_scoreboard" ->
/// "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct").
std::string stall_metric(std::string_view reason);

/// Lists every metric the worker asks for, the most useful first: it drops those the chip
/// lacks, and falls back to core_metrics() when the whole set cannot be collected.
std::vector<std::string> profile_metrics();

/// Lists the few metrics the bottleneck rules cannot do without (DRAM, caches, SM,
/// occupancy): the worker's second try when the full set fails.
std::vector<std::string> core_metrics();

/// Checks whether `name` is a metric that adds up over kernels and launches (a `.sum` count
/// of bytes, instructions or nanoseconds); the others are rates and ratios, averaged with the
/// kernels' durations as weights.
bool is_additive(std::string_view name) noexcept;

/// Holds the limits of one SM that decide how many blocks of a kernel fit on it.
struct device_limits {
  int32_t sms = 0; ///< multiprocessors
  int32_t max_warps_per_sm = 64;
  int32_t max_blocks_per_sm = 32;
  int32_t registers_per_sm = 65536;
  int32_t max_registers_per_block = 65536;
  int64_t shared_bytes_per_sm = 233472; ///< usable by blocks (the carveout's maximum)
  int64_t shared_bytes_per_block_optin = 232448;
  int64_t reserved_shared_bytes_per_block = 1024; ///< the runtime's own, per block
  int32_t register_allocation_unit = 256;         ///< registers are given to a warp in these steps
  int32_t warp_allocation_granularity = 4;        ///< warps' register files come in groups of this
};

/// One kernel of a call: all of its launches in that call.
struct kernel_profile {
  std::string name;              ///< demangled
  int64_t launches = 0;          ///< in one call
  double duration_ms = 0;        ///< all its launches, from the activity records
  std::array<int32_t, 3> grid{}; ///< of its first launch
  std::array<int32_t, 3> block{};
  int32_t registers = 0;                 ///< per thread
  int64_t static_shared_bytes = 0;       ///< per block
  int64_t dynamic_shared_bytes = 0;      ///< per block
  int64_t local_bytes_per_thread = 0;    ///< stack frame and spills
  std::map<std::string, double> metrics; ///< counters over its launches; empty without them

  /// Returns threads per block.
  int64_t threads_per_block() const noexcept { return int64_t{block[0]} * block[1] * block[2]; }
};

/// Names how the counters were scoped.
inline constexpr std::string_view range_per_kernel = "per_kernel"; ///< one range per launch
inline constexpr std::string_view range_whole_call = "whole_call"; ///< one range around the call

/// What the profile job measured of one call of a kernel's ks_forward.
struct profile {
  std::vector<kernel_profile> kernels;   ///< longest (all launches) first
  int64_t launches = 0;                  ///< kernel launches of one call
  int64_t copies = 0;                    ///< memcpy and memset operations of one call
  double kernel_ms = 0;                  ///< the kernels' durations, summed
  double span_ms = 0;                    ///< first kernel start to last kernel end
  bool counters = false;                 ///< hardware counters were read
  std::string counters_unavailable;      ///< why not, when not ("" when they were)
  std::string range;                     ///< range_per_kernel or range_whole_call
  std::string replay;                    ///< "user" (the worker replays the call) or "kernel"
  int32_t passes = 0;                    ///< replay passes the counters took
  std::map<std::string, double> metrics; ///< the whole call's (summed or duration-weighted)
  std::vector<std::string> notes;        ///< metrics skipped, and why
  device_limits device;
  double profile_ms = 0; ///< wall time the profiling took in the worker

  /// Returns the call's value of `name`, or `fallback` when it was not collected.
  double value(std::string_view name, double fallback = -1) const;

  /// Checks whether the call's metric `name` was collected.
  bool has(std::string_view name) const;
};

/// How many blocks of a kernel fit on one SM, and what stops more from fitting.
struct occupancy_limit {
  int32_t blocks_per_sm = 0;  ///< the smallest of the four below
  double theoretical_pct = 0; ///< resident warps / max_warps_per_sm, in percent
  int32_t by_registers = 0;   ///< blocks that the register file allows
  int32_t by_shared_memory = 0;
  int32_t by_warps = 0;  ///< the block size against max_warps_per_sm
  int32_t by_blocks = 0; ///< max_blocks_per_sm
  std::string limiter;   ///< "registers", "shared_memory", "block_size" or
                         ///< "blocks"; "" when the kernel is unknown
};

/// Returns the theoretical occupancy of `k` on a device with `limits` (CUDA's occupancy
/// calculator, simplified: registers per warp rounded up to the allocation unit, warps to the
/// allocation granularity, the runtime's reserved shared memory added per block).
occupancy_limit theoretical_occupancy(const kernel_profile& k, const device_limits& limits);

/// Combines per-launch (or per-kernel) metric sets into one: additive metrics summed, the
/// others averaged with `weights` (durations); a metric missing from some sets is averaged
/// over those that have it.
std::map<std::string, double>
combine_metrics(const std::vector<std::map<std::string, double>>& sets,
                const std::vector<double>& weights);

} // namespace ks::engine
