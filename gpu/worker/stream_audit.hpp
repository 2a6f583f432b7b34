#pragma once

// The stream audit: which streams a candidate's GPU work actually ran on, read from CUPTI's
// activity records (kernels, copies, memsets), so work moved off the worker's stream is seen
// whatever its length. CUPTI is loaded at run time (cupti_library.hpp): a worker without it
// still starts and falls back to the host-clock rule of the timing job. The profile job
// records a call through the same audit (CUPTI's activity callbacks are global to the
// process), and reads each kernel's launch configuration off its record.

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ks::gpu::worker {

/// One piece of GPU work that CUPTI saw.
struct activity {
  enum class kind_type { kernel, memcpy, memset };
  kind_type kind = kind_type::kernel;
  std::string name;    ///< demangled kernel name, or "memcpy HtoD" and the like
  uint32_t stream = 0; ///< CUPTI's stream id; invalid_stream for synchronous copies
  uint64_t bytes = 0;  ///< copies and memsets
  uint64_t duration_ns = 0;
  uint64_t start_ns = 0; ///< GPU timestamps
  uint64_t end_ns = 0;
  // Kernels only: the launch configuration.
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers = 0;           ///< per thread
  int32_t static_shared_bytes = 0; ///< per block
  int32_t dynamic_shared_bytes = 0;
  uint32_t local_bytes_per_thread = 0;

  /// CUPTI's id of "no stream": a synchronous copy on the legacy default stream.
  static constexpr uint32_t invalid_stream = 0xFFFFFFFFu;
};

/// Records GPU work between begin() and end(). One per process (CUPTI's callbacks are global).
class stream_audit {
public:
  /// Returns the process's audit, loading CUPTI on first use.
  static stream_audit& instance();

  /// Checks whether CUPTI was loaded and accepted the activity kinds.
  bool available() const noexcept;

  /// Returns why the audit is unavailable ("" when it is available).
  const std::string& unavailable_reason() const noexcept;

  /// Returns CUPTI's id of `stream`, or nullopt-like invalid_stream when it cannot tell.
  uint32_t stream_id(cudaStream_t stream);

  /// Starts recording every kernel, copy and memset of the process. Returns false (and
  /// makes the audit unavailable) when CUPTI refuses.
  bool begin();

  /// Stops recording and returns what ran since begin(); `dropped` gets the records CUPTI
  /// lost for lack of buffer space (the audit is then incomplete).
  std::vector<activity> end(uint64_t& dropped);

  ~stream_audit();

private:
  stream_audit();
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ks::gpu::worker
