#pragma once

// What the bench worker (gpu/worker/bench_session.cu) holds on a GPU for one task, so that a
// task whose tensors cannot fit a GPU is reported by `task check` and the dry run, before a
// GPU is needed, instead of failing on the GPU host with "cannot allocate".
//
// The worker allocates, for the task it serves (bench_session.cu's prepare(),
// reference_outputs() and prepare_timing_sets()):
//
//   inputs             bench_input_sets x every input: timing alternates between two input
//                      sets; verification refills both
//   outputs            2 x every output: the candidate's outputs and the reference's
//   timing references  bench_input_sets x every output: the reference's outputs for each
//                      timing set; none for a compute-bound task (more than
//                      bench_fresh_intensity flops per byte), timed on fresh inputs
//   reference cache    the reference's outputs kept per verification seed and trial parity,
//                      as many whole output sets as fit bench_reference_cache_bytes
//   flush              the L2 flush buffer: 4 x the L2 size, at least 64 MiB
//
// plus a few kilobytes of statistics, the CUDA context and whatever a candidate allocates
// itself (bench_context_reserve_bytes stands for the context; a candidate's workspace is not
// counted). The worker reads its constants from here, so the two cannot drift apart.

#include "engine/task.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace ks::engine {

/// Input sets the worker draws and alternates between when it times a task.
inline constexpr int64_t bench_input_sets = 2;

/// Bytes of reference outputs the worker keeps cached on the device, at most.
inline constexpr int64_t bench_reference_cache_bytes = int64_t{4} << 30;

/// Flops per byte of the task's cost above which the worker times on inputs drawn afresh for
/// every call (and keeps no reference outputs for timing).
inline constexpr double bench_fresh_intensity = 8;

/// The smallest L2 flush buffer, bytes (the buffer is 4 x the L2 size otherwise).
inline constexpr int64_t bench_min_flush_bytes = int64_t{64} << 20;

/// Bytes set aside for the CUDA context and the worker's own small buffers.
inline constexpr int64_t bench_context_reserve_bytes = int64_t{512} << 20;

/// The device memory the bench worker holds for one task, bytes, by purpose.
struct bench_memory {
  int64_t inputs = 0;            ///< every input, once per input set
  int64_t outputs = 0;           ///< every output twice: the candidate's and the reference's
  int64_t timing_references = 0; ///< the reference's outputs per timing set (0: compute-bound)
  int64_t reference_cache = 0;   ///< cached reference outputs, at most
  int64_t flush = 0;             ///< the L2 flush buffer

  /// Returns the sum of the parts.
  int64_t total() const noexcept;
};

/// Returns what the worker holds for `subject` on a GPU whose L2 holds `l2_bytes`.
bench_memory bench_memory_of(const task& subject, int64_t l2_bytes) noexcept;

/// The memory of the GPU a task is checked against.
struct gpu_memory {
  int64_t bytes = 0;    ///< device memory
  int64_t l2_bytes = 0; ///< L2 cache size (the flush buffer's size follows it)
  std::string name;     ///< "NVIDIA H100 80GB HBM3"; "the GPU" when assumed
  std::string origin;   ///< where the numbers come from, for people: "assumed: no GPU is known"
  bool assumed = false; ///< no GPU is known: a stated default
};

/// Returns the GPU assumed when none is known: 80 GB (an H100 or A100 80GB), 50 MiB of L2.
gpu_memory assumed_gpu_memory();

/// Returns "8.6 GB", "512 MB", "48 kB": `bytes` in decimal units, three significant digits.
std::string memory_text(int64_t bytes);

/// Returns why `subject` cannot fit `gpu` (what the worker needs, by part, against what the
/// GPU has, and what to do), or nullopt when the worker's tensors and the context reserve fit.
std::optional<std::string> memory_problem(const task& subject, const gpu_memory& gpu);

} // namespace ks::engine
