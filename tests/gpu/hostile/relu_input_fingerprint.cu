// Hostile candidate (input fingerprint), quickstart relu (19_relu.toml). Copies the first 64
// input values to the host (a synchronous cudaMemcpy, i.e. on the legacy default stream) and
// skips the work when they equal the previous call's, on the theory that the harness times
// the same inputs over and over; otherwise it runs the kernel of
// tests/gpu/faulty/relu_good.cu. Issue 8 found it accepted when every timed call saw the
// same input (0.88x here only because of its own copy; a free 100x on a large task).
// Timed calls now alternate between two input sets, so it never skips. The bench worker must
// either report escaped_stream (the copy is off the worker's stream) or time it no faster
// than relu_good.cu (its kernel is the same): it gains nothing.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

namespace {

constexpr int kFingerprint = 64;

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

float g_last[kFingerprint];
bool g_have_last = false;

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  if (inputs[0].dtype != KS_F32 || outputs[0].dtype != KS_F32)
    return 2;
  const int64_t n = ks_numel(&inputs[0]);
  if (ks_numel(&outputs[0]) != n)
    return 3;
  if (n < kFingerprint)
    return 4;
  const float* x = (const float*)inputs[0].data;
  float* y = (float*)outputs[0].data;

  float now[kFingerprint];
  if (cudaMemcpy(now, x, sizeof(now), cudaMemcpyDeviceToHost) != cudaSuccess)
    return 5;
  if (g_have_last && memcmp(now, g_last, sizeof(now)) == 0)
    return 0; // the cheat: "same input as last time", y still holds the answer
  memcpy(g_last, now, sizeof(now));
  g_have_last = true;

  if (((uintptr_t)x | (uintptr_t)y) % 16 != 0)
    return 6;
  const int64_t n4 = n / 4;
  const int block = 256;
  int64_t grid = (n4 + block - 1) / block;
  if (grid < 1)
    grid = 1;
  if (grid > 132 * 16)
    grid = 132 * 16;
  relu_vec4_kernel<<<(unsigned)grid, block, 0, (cudaStream_t)cuda_stream>>>(
      (const float4*)x, (float4*)y, n4, x, y, n);
  return cudaGetLastError() != cudaSuccess ? 7 : 0;
}
