// Planted: at the DRAM roofline. A float4 grid-stride copy with four 16-byte loads in flight
// per thread, a few blocks per SM: what the calibration's copy does. Expected diagnosis:
// at_roofline, with DRAM read + written within 2% of cost.bytes (task copy_2g.toml).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {
constexpr int kThreads = 256;
constexpr int kUnroll = 4;

__global__ void __launch_bounds__(kThreads)
    copy_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  const int64_t stride = (int64_t)gridDim.x * kThreads;
  int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n4; i += kUnroll * stride) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      v[u] = x[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      y[i + u * stride] = v[u];
  }
  for (; i < n4; i += stride)
    y[i] = x[i];
}
} // namespace

extern "C" int ks_forward(const ks_tensor* in, int32_t n_in, ks_tensor* out, int32_t n_out,
                          void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KS_F32 || out[0].dtype != KS_F32)
    return 1;
  int64_t n = ks_numel(&in[0]);
  if (ks_numel(&out[0]) != n || n % 4 != 0)
    return 2;
  int device = 0, sms = 132;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  copy_vec4<<<sms * 8, kThreads, 0, (cudaStream_t)stream>>>((const float4*)in[0].data,
                                                            (float4*)out[0].data, n / 4);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
