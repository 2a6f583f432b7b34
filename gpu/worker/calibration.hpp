#pragma once

#include "gpu/worker_protocol.hpp"

#include <cuda_runtime.h>

namespace ks::gpu::worker {

/// Measures the device's peak DRAM bandwidth (a large device-to-device copy, bytes read
/// plus written) and fp32 FMA rate on `stream`; fills `out`. Returns the first CUDA error.
cudaError_t calibrate_device(int32_t device, cudaStream_t stream, calibration& out);

} // namespace ks::gpu::worker
