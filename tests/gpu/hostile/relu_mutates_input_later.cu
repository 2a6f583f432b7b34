// Hostile candidate (input mutation during timing only), quickstart relu (19_relu.toml).
// Honest in its first 8 calls, which cover verification (where inputs are compared with a
// copy after every call); from then on its kernel, after computing y, adds 1 to x[0], as a
// candidate using its input as scratch space would. Nothing else changes, so only the input
// checksum around timing (or a checked call on the same set, whose y[0] no longer matches
// the reference) can see it.
// The bench worker must report wrong_result during timing (an input changed, or y[0] of a
// checked call differs).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int64_t kHonestCalls = 8;

__global__ void relu_kernel(float* x, float* __restrict__ y, int64_t n, int mutate) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
    if (mutate && i == 0)
      x[0] = v + 1.0f; // the planted write, after its own read
  }
}

int64_t g_calls = 0;

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int mutate = g_calls++ >= kHonestCalls ? 1 : 0;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  relu_kernel<<<132 * 8, 256, 0, (cudaStream_t)cuda_stream>>>((float*)inputs[0].data,
                                                              (float*)outputs[0].data, n, mutate);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
