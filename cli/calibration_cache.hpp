#pragma once

// Device peaks are measured once per device and kept in <cache>/calibration/<uuid>.json, so
// that `devices` and every `eval` after the first report the roofline without re-measuring.
// The file also records the device (its memory among the rest), so that `task check` and a
// dry run know the GPUs of this host without one.

#include "engine/bench_memory.hpp"
#include "gpu/worker_client.hpp"

#include <filesystem>
#include <optional>

namespace ks::cli {

/// Whether to measure again even when the cache holds the device's peaks.
enum class recalibrate { no, yes };

/// A device's peaks and where they came from.
struct cached_calibration {
  gpu::calibration peaks;
  bool cached = false;        ///< read from the cache, not measured now
  std::filesystem::path file; ///< the cache file
  double ms = 0;              ///< time spent here (reading or measuring)
};

/// Returns the cache file of `device` under `cache_dir`.
std::filesystem::path calibration_file(const std::filesystem::path& cache_dir,
                                       const gpu::device_info& device);

/// Returns `device`'s peaks: read from its cache file, or measured with `client` (which
/// drives that device) and stored when the file is missing, unreadable or `again` is yes.
/// A cache that cannot be written gives a warning, not a failure.
gpu::job_result<cached_calibration> calibrate_cached(gpu::worker_client& client,
                                                     const gpu::device_info& device,
                                                     const std::filesystem::path& cache_dir,
                                                     recalibrate again);

/// Returns the GPU a task's memory is checked against before a GPU is needed: `gigabytes`
/// (10^9 bytes) when given, else the device with the least memory among the calibration
/// files under `cache_dir` that record it (`devices`, `eval` and `profile` write them), else
/// engine::assumed_gpu_memory(). Its origin says which.
engine::gpu_memory memory_target(const std::filesystem::path& cache_dir,
                                 std::optional<double> gigabytes);

} // namespace ks::cli
