// Planted: compute-bound. y = 2 x + 1 is one FMA per element, but each thread also runs eight
// independent chains of 1024 FMAs on its element, whose result is used only by a test that
// never holds (the compiler cannot drop it): the FMA pipe is full (eight chains hide its
// latency, every SM is full of warps) while DRAM moves only the task's bytes. Expected
// diagnosis: compute (SM throughput high, DRAM low, about 8000x the flops the task needs)
// (task affine.toml). A correct kernel.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {
constexpr int kChains = 8;
constexpr int kSteps = 1024;

__global__ void __launch_bounds__(256)
    affine_with_fma_loop(const float* __restrict__ x, float* __restrict__ y, int64_t n, float m,
                         float c) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = x[i];
  float a[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j)
    a[j] = v + (float)j;
#pragma unroll 4
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int j = 0; j < kChains; ++j)
      a[j] = fmaf(a[j], m, c);
  }
  float junk = 0.0f;
#pragma unroll
  for (int j = 0; j < kChains; ++j)
    junk += a[j];
  // m < 1 keeps every chain bounded (it tends to c / (1 - m) = 1), so junk stays far from
  // -1e30: the test never holds, but the compiler cannot know that.
  y[i] = junk == -1e30f ? junk : fmaf(2.0f, v, 1.0f);
}
} // namespace

extern "C" int ks_forward(const ks_tensor* in, int32_t n_in, ks_tensor* out, int32_t n_out,
                          void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KS_F32 || out[0].dtype != KS_F32)
    return 1;
  int64_t n = ks_numel(&in[0]);
  if (ks_numel(&out[0]) != n)
    return 2;
  if (n == 0)
    return 0;
  // Passed at run time so that the chains cannot be folded.
  volatile float m = 0.999f, c = 0.001f;
  affine_with_fma_loop<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, (float*)out[0].data, n, m, c);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
