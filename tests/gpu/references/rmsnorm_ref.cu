// Reference for the RMSNorm task (KernelBench level 1, problem 36):
//   y = x / sqrt(mean(x^2 over dim 1) + eps),  eps = 1e-5,
// x and y float32 [N, C, d2, d3, ...] (rank >= 2), contiguous; the norm runs over dim 1 (the
// features, C) for every other index. eps is not carried by the ABI: it is the task's
// (KernelBench's default, 1e-5) and fixed here. One thread per (n, position) loops over the
// C features (neighbouring threads read neighbouring positions: coalesced); the mean of
// squares and the division are done in double.
//
// Return codes: 0 ok; 1 n_inputs != 1; 2 n_outputs != 1; 3 the input is not f32;
// 4 the output is not f32; 5 the input has rank < 2; 6 the output's rank differs;
// 7 the shapes differ; 8 a tensor is not contiguous; 10 a CUDA error at launch.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <math.h>
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

constexpr double kEps = 1e-5;

__global__ void rmsnorm_ref_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t N,
                                   int64_t C, int64_t inner, double eps) {
  const int64_t total = N * inner;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < total; p += step) {
    const int64_t n = p / inner;
    const int64_t i = p % inner;
    const int64_t base = n * C * inner + i;
    double ss = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double v = (double)x[base + c * inner];
      ss += v * v;
    }
    const double rms = sqrt(ss / (double)C + eps);
    for (int64_t c = 0; c < C; ++c)
      y[base + c * inner] = (float)((double)x[base + c * inner] / rms);
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
  if (x.ndim < 2)
    return 5;
  if (y.ndim != x.ndim)
    return 6;
  for (int32_t d = 0; d < x.ndim; ++d)
    if (x.shape[d] != y.shape[d])
      return 7;
  if (!is_contiguous(x) || !is_contiguous(y))
    return 8;
  const int64_t N = x.shape[0], C = x.shape[1];
  int64_t inner = 1;
  for (int32_t d = 2; d < x.ndim; ++d)
    inner *= x.shape[d];
  const int64_t positions = N * inner;
  if (positions == 0 || C == 0)
    return 0;
  const int block = KS_BLOCK_THREADS;
  int64_t grid = (positions + block - 1) / block;
  if (grid > (1 << 20))
    grid = 1 << 20; // the grid-stride loop covers the rest
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  rmsnorm_ref_kernel<<<(unsigned)grid, block, 0, stream>>>((const float*)x.data, (float*)y.data, N,
                                                           C, inner, kEps);
  return cudaGetLastError() != cudaSuccess ? 10 : 0;
}
