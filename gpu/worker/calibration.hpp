#pragma once

#include "gpu/worker_protocol.hpp"

#include <cuda_runtime.h>

namespace ks::gpu::worker {

/// Measures the device's peak DRAM bandwidth (a large device-to-device copy, bytes read
/// plus written) and fp32 FMA rate on `stream`; fills `out`. Returns the first CUDA error.
cudaError_t calibrate_device(int32_t device, cudaStream_t stream, calibration& out);

/// Times the stability probe on `stream` (engine/card_stability.hpp): copies between two
/// buffers of opt.bytes (0: four times the L2, 64 to 256 MiB, halved while they do not fit),
/// opt.samples of them timed back to back after a warm-up; fills `out`. Returns the first
/// CUDA error.
cudaError_t probe_device(int32_t device, cudaStream_t stream, const probe_options& opt,
                         probe_result& out);

} // namespace ks::gpu::worker
