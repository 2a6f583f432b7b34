// Planted candidate for the quickstart relu task: CORRECT and fast. Must PASS verification and
// be timed. float4 loads and stores in a grid-stride loop (the worker's tensors are
// cudaMalloc'd, so 16-byte aligned), a scalar loop for a tail of numel % 4 elements.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

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
  if (n == 0)
    return 0;
  const float* x = (const float*)inputs[0].data;
  float* y = (float*)outputs[0].data;
  if (((uintptr_t)x | (uintptr_t)y) % 16 != 0)
    return 4;
  const int64_t n4 = n / 4;
  const int block = 256;
  int64_t grid = (n4 + block - 1) / block;
  if (grid < 1)
    grid = 1;
  if (grid > 132 * 16)
    grid = 132 * 16; // a few waves; the grid-stride loop does the rest
  relu_vec4_kernel<<<(unsigned)grid, block, 0, (cudaStream_t)cuda_stream>>>(
      (const float4*)x, (float4*)y, n4, x, y, n);
  return cudaGetLastError() != cudaSuccess ? 5 : 0;
}
