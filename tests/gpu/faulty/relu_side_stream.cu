// Planted fault for the quickstart relu task: the ReLU is correct, but it runs on a stream of
// the candidate's own (created once, cudaStreamNonBlocking, so it never waits for the legacy
// default stream either) and ks_forward returns without joining the worker's stream. The
// kernel writes y in its first pass, then repeats the pass 200 times with a ~100k-cycle spin
// after each (measured 10.7 ms on an H200 at 1980 MHz; at most 132 blocks, so all spin
// together), so it is still running long after the worker's own stream has drained.
// The bench worker must report escaped_stream (its host-clock check sees work it did not
// wait for). Note: a worker that compares outputs before checking for escaped work may see
// NaN (wrong_result) if it reads y before the first pass has run.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int kRepeats = 200;
constexpr long long kSpinCycles = 100000;

__global__ void relu_slow_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 1
  for (int r = 0; r < kRepeats; ++r) {
    for (int64_t i = first; i < n; i += step) {
      const float v = x[i];
      y[i] = v < 0.0f ? 0.0f : v;
    }
    const long long start = clock64();
    while (clock64() - start < kSpinCycles) {
    }
  }
}

cudaStream_t g_own_stream = nullptr;

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  (void)cuda_stream; // the planted fault: the worker's stream is ignored
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  if (g_own_stream == nullptr &&
      cudaStreamCreateWithFlags(&g_own_stream, cudaStreamNonBlocking) != cudaSuccess)
    return 2;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  const int block = 256;
  int64_t grid = (n + block - 1) / block;
  if (grid > 132)
    grid = 132; // at most one block per SM: every block is resident at once
  relu_slow_kernel<<<(unsigned)grid, block, 0, g_own_stream>>>((const float*)inputs[0].data,
                                                               (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 3 : 0;
}
