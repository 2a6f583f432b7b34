// Reference for the MaxPool2d task (KernelBench level 1, problem 42):
//   y = max_pool2d(x, kernel_size=4, stride=1, padding=1, dilation=1),
// x float32 [N, C, H, W], y float32 [N, C, OH, OW] with OH = (H + 2*1 - 1*(4-1) - 1)/1 + 1
// = H - 1 (likewise OW), contiguous. The pooling parameters are not carried by the ABI: they
// are the task's and fixed here (checked against the output shape). Padding counts as -inf.
// One thread per output element in a grid-stride loop with 64-bit indices. Exact in float32.
//
// Return codes: 0 ok; 1 n_inputs != 1; 2 n_outputs != 1; 3 the input is not f32;
// 4 the output is not f32; 5 the input is not 4-D; 6 the output is not 4-D;
// 7 the output shape is not the pooled input shape; 8 a tensor is not contiguous;
// 10 a CUDA error at launch.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <math.h>
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

constexpr int64_t kKernel = 4;
constexpr int64_t kStride = 1;
constexpr int64_t kPadding = 1;
constexpr int64_t kDilation = 1;

int64_t pooled_size(int64_t in) {
  return (in + 2 * kPadding - kDilation * (kKernel - 1) - 1) / kStride + 1;
}

__global__ void maxpool_ref_kernel(const float* __restrict__ x, float* __restrict__ y,
                                   int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  const int64_t total = planes * OH * OW;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < total; p += step) {
    const int64_t ow = p % OW;
    const int64_t t = p / OW;
    const int64_t oh = t % OH;
    const int64_t plane = t / OH;
    const float* xp = x + plane * H * W;
    float m = -INFINITY;
    for (int64_t kh = 0; kh < kKernel; ++kh) {
      const int64_t ih = oh * kStride - kPadding + kh * kDilation;
      if (ih < 0 || ih >= H)
        continue;
      for (int64_t kw = 0; kw < kKernel; ++kw) {
        const int64_t iw = ow * kStride - kPadding + kw * kDilation;
        if (iw < 0 || iw >= W)
          continue;
        const float v = xp[ih * W + iw];
        if (v > m || v != v)
          m = v; // NaN propagates, as in PyTorch
      }
    }
    y[p] = m;
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
  if (x.ndim != 4)
    return 5;
  if (y.ndim != 4)
    return 6;
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OH = pooled_size(H), OW = pooled_size(W);
  if (y.shape[0] != N || y.shape[1] != C || y.shape[2] != OH || y.shape[3] != OW)
    return 7;
  if (!is_contiguous(x) || !is_contiguous(y))
    return 8;
  const int64_t total = N * C * OH * OW;
  if (total <= 0)
    return 0;
  const int block = KS_BLOCK_THREADS;
  int64_t grid = (total + block - 1) / block;
  if (grid > KS_MAX_BLOCKS)
    grid = KS_MAX_BLOCKS; // the grid-stride loop covers the rest
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  maxpool_ref_kernel<<<(unsigned)grid, block, 0, stream>>>((const float*)x.data, (float*)y.data,
                                                           N * C, H, W, OH, OW);
  return cudaGetLastError() != cudaSuccess ? 10 : 0;
}
