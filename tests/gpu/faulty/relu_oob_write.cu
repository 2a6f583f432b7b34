// Planted fault for the quickstart relu task: every thread also stores far outside y
// (1 TiB past it: no allocation of the worker's can be there), so the kernel faults.
// The bench worker must report illegal_address (a sticky error: the worker restarts).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void relu_oob_kernel(const float* __restrict__ x, float* y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const float v = x[i];
  y[i] = v < 0.0f ? 0.0f : v;
  y[i + ((int64_t)1 << 38)] = v; // the planted out-of-bounds store: y + 2^38 floats
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  const int block = 256;
  relu_oob_kernel<<<(unsigned)((n + block - 1) / block), block, 0, (cudaStream_t)cuda_stream>>>(
      (const float*)inputs[0].data, (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
