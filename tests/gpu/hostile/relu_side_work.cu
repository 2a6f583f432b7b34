// Hostile candidate (hidden side work), quickstart relu (19_relu.toml). The ReLU itself is
// honest and on the worker's stream (the kernel of tests/gpu/faulty/relu_good.cu), so every
// output is right whenever anyone looks. But each call also launches a second, short kernel
// (one block per SM spinning 24000 cycles, about 12-14 us, then writing a private scratch
// buffer) on a non-blocking stream of the candidate's own, never joined: work that the
// events do not pay for, as a candidate moving a reduction's second pass, a workspace reset
// or a cache update off the stream would. Since the outputs never depend on it, no output
// check can catch it: this is the test of the stream audit alone, on a kernel of ~13 us.
// The bench worker must report escaped_stream (CUPTI sees a kernel off its stream; without
// CUPTI, the side stream falls behind in a back-to-back batch, since its kernel is longer
// than the ReLU, and the device stays busy after the worker's stream is done).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr long long kSpinCycles = 24000;

__device__ __forceinline__ float relu1(float v) {
  return v < 0.0f ? 0.0f : v;
}

__global__ void relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4,
                                 const float* __restrict__ xs, float* __restrict__ ys, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += step) {
    float4 v = x[i];
    v.x = relu1(v.x);
    v.y = relu1(v.y);
    v.z = relu1(v.z);
    v.w = relu1(v.w);
    y[i] = v;
  }
  for (int64_t i = n4 * 4 + first; i < n; i += step)
    ys[i] = relu1(xs[i]);
}

__global__ void side_work_kernel(unsigned long long* scratch) {
  const long long start = clock64();
  long long now = start;
  while (now - start < kSpinCycles)
    now = clock64();
  if (threadIdx.x == 0)
    scratch[blockIdx.x] += (unsigned long long)(now - start);
}

cudaStream_t g_side_stream = nullptr;
unsigned long long* g_scratch = nullptr;
int g_sms = 0;

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  if (inputs[0].dtype != KS_F32 || outputs[0].dtype != KS_F32)
    return 2;
  if (g_side_stream == nullptr) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaMalloc(&g_scratch, sizeof(unsigned long long) * (size_t)g_sms) != cudaSuccess ||
        cudaMemset(g_scratch, 0, sizeof(unsigned long long) * (size_t)g_sms) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess ||
        cudaStreamCreateWithFlags(&g_side_stream, cudaStreamNonBlocking) != cudaSuccess)
      return 3;
  }
  const int64_t n = ks_numel(&inputs[0]);
  if (ks_numel(&outputs[0]) != n)
    return 4;
  if (n == 0)
    return 0;
  const float* x = (const float*)inputs[0].data;
  float* y = (float*)outputs[0].data;
  if (((uintptr_t)x | (uintptr_t)y) % 16 != 0)
    return 5;
  const int64_t n4 = n / 4;
  const int block = 256;
  int64_t grid = (n4 + block - 1) / block;
  if (grid < 1)
    grid = 1;
  if (grid > 132 * 16)
    grid = 132 * 16;
  relu_vec4_kernel<<<(unsigned)grid, block, 0, (cudaStream_t)cuda_stream>>>(
      (const float4*)x, (float4*)y, n4, x, y, n);
  side_work_kernel<<<(unsigned)g_sms, 128, 0, g_side_stream>>>(g_scratch); // the escape
  return cudaGetLastError() != cudaSuccess ? 6 : 0;
}
