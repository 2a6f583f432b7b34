// Hostile candidate (own stream, short kernel), quickstart relu (19_relu.toml). The ReLU is
// correct, but it runs on a non-blocking stream the candidate created, and ks_forward
// returns without joining the worker's stream: the worker's events bracket nothing. Unlike
// tests/gpu/faulty/relu_side_stream.cu (10 ms), the kernel is short: the vectorized ReLU
// (about 5 us on an H100 for the 8 MB input) followed by a spin of 12000 cycles in every
// block (about 6-7 us), all blocks resident at once: 10-15 us in all, the length of the
// shortest kernels of our suites, too short for a host-clock rule with a 0.1 ms floor.
// The bench worker must report escaped_stream (CUPTI sees a kernel off its stream; without
// CUPTI, the back-to-back batch's host time against the event median). A worker that checks
// a timed call's outputs before the escaped kernel has finished may report wrong_result
// during timing instead, which is also a rejection.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr long long kSpinCycles = 12000;

__global__ void relu_then_spin_kernel(const float4* __restrict__ x, float4* __restrict__ y,
                                      int64_t n4, const float* __restrict__ xs,
                                      float* __restrict__ ys, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += step) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.0f);
    v.y = fmaxf(v.y, 0.0f);
    v.z = fmaxf(v.z, 0.0f);
    v.w = fmaxf(v.w, 0.0f);
    y[i] = v;
  }
  for (int64_t i = n4 * 4 + first; i < n; i += step)
    ys[i] = fmaxf(xs[i], 0.0f);
  const long long start = clock64();
  while (clock64() - start < kSpinCycles) {
  }
}

cudaStream_t g_own_stream = nullptr;
int g_sms = 0;

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  (void)cuda_stream; // the planted fault: the worker's stream is ignored
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  if (g_own_stream == nullptr) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaStreamCreateWithFlags(&g_own_stream, cudaStreamNonBlocking) != cudaSuccess)
      return 2;
  }
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  const float* x = (const float*)inputs[0].data;
  float* y = (float*)outputs[0].data;
  // 4 blocks of 256 per SM: every block is resident, so the spin adds once, not per wave.
  relu_then_spin_kernel<<<(unsigned)(g_sms * 4), 256, 0, g_own_stream>>>(
      (const float4*)x, (float4*)y, n / 4, x, y, n);
  return cudaGetLastError() != cudaSuccess ? 3 : 0;
}
