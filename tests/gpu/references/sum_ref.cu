// Reference for the sum-reduction task (KernelBench level 1, problem 47):
//   y = torch.sum(x, dim=1, keepdim=True),
// x float32 [B, R, I], y float32 [B, 1, I], contiguous; shapes come from the tensors. One
// thread per output (b, j) loops over the R reduced elements (neighbouring threads read
// neighbouring j: coalesced) and accumulates in double.
//
// Return codes: 0 ok; 1 n_inputs != 1; 2 n_outputs != 1; 3 the input is not f32;
// 4 the output is not f32; 5 the input is not 3-D; 6 the output is not 3-D;
// 7 the output shape is not [B, 1, I]; 8 a tensor is not contiguous;
// 10 a CUDA error at launch.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

// Launch parameter, overridable with -D or a #define before this file (the offline planner
// tunes it through the manifest's tunables): threads per block.
#ifndef KS_BLOCK_THREADS
#define KS_BLOCK_THREADS 256
#endif
static_assert(KS_BLOCK_THREADS >= 1 && KS_BLOCK_THREADS <= 1024,
              "KS_BLOCK_THREADS: threads per block, 1 to 1024");

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

__global__ void sum_ref_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t B,
                               int64_t R, int64_t I) {
  const int64_t total = B * I;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < total; p += step) {
    const int64_t b = p / I;
    const int64_t j = p % I;
    const float* xs = x + b * R * I + j;
    double acc = 0.0;
    for (int64_t r = 0; r < R; ++r)
      acc += (double)xs[r * I];
    y[p] = (float)acc; // y[b, 0, j]
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
  if (x.ndim != 3)
    return 5;
  if (y.ndim != 3)
    return 6;
  const int64_t B = x.shape[0], R = x.shape[1], I = x.shape[2];
  if (y.shape[0] != B || y.shape[1] != 1 || y.shape[2] != I)
    return 7;
  if (!is_contiguous(x) || !is_contiguous(y))
    return 8;
  const int64_t total = B * I;
  if (total == 0)
    return 0;
  const int block = KS_BLOCK_THREADS;
  int64_t grid = (total + block - 1) / block;
  if (grid > (1 << 20))
    grid = 1 << 20; // the grid-stride loop covers the rest
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  sum_ref_kernel<<<(unsigned)grid, block, 0, stream>>>((const float*)x.data, (float*)y.data, B, R,
                                                       I);
  return cudaGetLastError() != cudaSuccess ? 10 : 0;
}
