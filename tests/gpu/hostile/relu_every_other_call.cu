// Hostile candidate (every other call), quickstart relu (19_relu.toml). Honest in its first
// 16 calls (verification and the start of the warm-up), then does the ReLU only on even
// calls and returns at once on odd ones: half the calls are free, a 2x "speedup". Because
// timed calls alternate between two input sets, the skipped calls are always those of one
// set, whose checks find y holding the other set's result.
// The bench worker must report wrong_result during timing. (A worker that checks only calls
// of one parity, e.g. always the last of an even-sized batch, could miss it: the checked
// calls must cover both input sets.)
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int64_t kHonestCalls = 16;

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
  if (call >= kHonestCalls && call % 2 == 1)
    return 0; // the cheat: odd calls do nothing
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  relu_kernel<<<132 * 8, 256, 0, (cudaStream_t)cuda_stream>>>((const float*)inputs[0].data,
                                                              (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
