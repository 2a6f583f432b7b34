// Hostile candidate (call counter), quickstart relu (19_relu.toml). Counts its calls in a
// static variable and does the ReLU only in its first 16 calls and every 50th call after;
// otherwise it returns 0 at once and leaves y as it was. Verification (a few calls, outputs
// poisoned with NaN) sees only honest calls; in timing almost every call is free, which the
// events alone would report as a 10x speedup.
// The bench worker must report wrong_result during timing: the checked calls find y holding
// the result of an earlier call on the other input set.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int64_t kHonestCalls = 16;
constexpr int64_t kEvery = 50;

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

int64_t g_calls = 0;

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t call = g_calls++;
  if (call >= kHonestCalls && call % kEvery != 0)
    return 0; // the cheat: skip the work
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  relu_kernel<<<132 * 8, 256, 0, (cudaStream_t)cuda_stream>>>((const float*)inputs[0].data,
                                                              (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
