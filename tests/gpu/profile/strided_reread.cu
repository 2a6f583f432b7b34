// Planted: cache-bound. Every output sums 32 inputs 4096 elements apart, each load cached in
// L2 only (ld.global.cg), so each input element is read 32 times through L2 while DRAM sees
// it once (16 MiB fit in L2). The loads are coalesced and all independent, and every SM is
// full of warps: L2 is what saturates. Expected diagnosis: cache (L2 throughput high, DRAM
// low, DRAM bytes near cost.bytes) (task strided_sum.toml).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {
constexpr int kTerms = 32;
constexpr int64_t kStride = 4096;

__global__ void __launch_bounds__(256)
    sum_strided(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v[kTerms];
#pragma unroll
  for (int k = 0; k < kTerms; ++k) {
    int64_t j = i + kStride * k;
    v[k] = __ldcg(&x[j >= n ? j - n : j]);
  }
  // Four partial sums: float32 accuracy for 32 terms of [0, 1), every index a constant (a
  // run-time index would put v in local memory).
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int k = 0; k < kTerms; ++k)
    s[k % 4] += v[k];
  y[i] = (s[0] + s[1]) + (s[2] + s[3]);
}
} // namespace

extern "C" int ks_forward(const ks_tensor* in, int32_t n_in, ks_tensor* out, int32_t n_out,
                          void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KS_F32 || out[0].dtype != KS_F32)
    return 1;
  int64_t n = ks_numel(&in[0]);
  if (ks_numel(&out[0]) != n || n < kStride * kTerms)
    return 2;
  sum_strided<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, (float*)out[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
