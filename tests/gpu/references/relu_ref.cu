// Reference for the ReLU task (KernelBench level 1, problem 19): y = max(x, 0), elementwise.
// x and y float32 of the same shape (any rank), contiguous. One thread per element in a
// grid-stride loop with 64-bit indices. ReLU is exact in float32.
//
// Return codes: 0 ok; 1 n_inputs != 1; 2 n_outputs != 1; 3 the input is not f32;
// 4 the output is not f32; 5 input and output ranks differ; 7 the shapes differ;
// 8 a tensor is not contiguous; 10 a CUDA error at launch.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

// Launch parameters, overridable with -D or a #define before this file (the offline planner
// tunes them through the manifest's tunables): threads per block, and the grid's cap.
#ifndef KS_BLOCK_THREADS
#define KS_BLOCK_THREADS 256
#endif
#ifndef KS_MAX_BLOCKS
#define KS_MAX_BLOCKS 1048576
#endif
static_assert(KS_BLOCK_THREADS >= 1 && KS_BLOCK_THREADS <= 1024,
              "KS_BLOCK_THREADS: threads per block, 1 to 1024");
static_assert(KS_MAX_BLOCKS >= 1 && KS_MAX_BLOCKS <= 0x7fffffff,
              "KS_MAX_BLOCKS: the grid's cap, 1 to 2^31 - 1");

namespace {

bool is_contiguous(const ks_tensor& t) {
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.stride[d] != expect)
      return false;
    expect *= t.shape[d];
  }
  return true;
}

__global__ void relu_ref_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1)
    return 1;
  if (n_outputs != 1)
    return 2;
  const ks_tensor& x = inputs[0];
  ks_tensor& y = outputs[0];
  if (x.dtype != KS_F32)
    return 3;
  if (y.dtype != KS_F32)
    return 4;
  if (x.ndim != y.ndim)
    return 5;
  for (int32_t d = 0; d < x.ndim; ++d)
    if (x.shape[d] != y.shape[d])
      return 7;
  if (!is_contiguous(x) || !is_contiguous(y))
    return 8;
  const int64_t n = ks_numel(&x);
  if (n == 0)
    return 0;
  const int block = KS_BLOCK_THREADS;
  int64_t grid = (n + block - 1) / block;
  if (grid > KS_MAX_BLOCKS)
    grid = KS_MAX_BLOCKS; // the grid-stride loop covers the rest
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  relu_ref_kernel<<<(unsigned)grid, block, 0, stream>>>((const float*)x.data, (float*)y.data, n);
  return cudaGetLastError() != cudaSuccess ? 10 : 0;
}
