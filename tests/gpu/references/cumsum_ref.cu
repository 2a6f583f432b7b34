// Reference for the cumulative-sum task (KernelBench level 1, problem 89):
//   y = torch.cumsum(x, dim=1),
// x and y float32 [rows, cols], contiguous; shapes come from the tensors. One block per row
// walks it in chunks of blockDim elements: cub::BlockScan gives the inclusive prefix sums of a
// chunk in double, the running carry (double) adds the sums of the chunks before it. Every
// output is the float rounding of a double prefix sum.
//
// Return codes: 0 ok; 1 n_inputs != 1; 2 n_outputs != 1; 3 the input is not f32;
// 4 the output is not f32; 5 the input is not 2-D; 6 the output is not 2-D;
// 7 the shapes differ; 8 a tensor is not contiguous; 9 too many rows for the grid;
// 10 a CUDA error at launch.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/cub.cuh>

// Launch parameter, overridable with -D or a #define before this file (the offline planner
// tunes it through the manifest's tunables): threads per block (one block per row).
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

constexpr int kBlock = KS_BLOCK_THREADS;

__global__ void __launch_bounds__(kBlock)
    cumsum_ref_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  using scan_t = cub::BlockScan<double, kBlock>;
  __shared__ typename scan_t::TempStorage tmp;
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;
  double carry = 0.0; // sum of the row before this chunk; the same in every thread
  for (int64_t base = 0; base < cols; base += kBlock) {
    const int64_t k = base + threadIdx.x;
    const double v = k < cols ? (double)xr[k] : 0.0;
    double inclusive = 0.0, chunk_total = 0.0;
    scan_t(tmp).InclusiveSum(v, inclusive, chunk_total);
    if (k < cols)
      yr[k] = (float)(carry + inclusive);
    carry += chunk_total;
    __syncthreads(); // tmp is reused by the next chunk
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
  if (x.ndim != 2)
    return 5;
  if (y.ndim != 2)
    return 6;
  if (x.shape[0] != y.shape[0] || x.shape[1] != y.shape[1])
    return 7;
  if (!is_contiguous(x) || !is_contiguous(y))
    return 8;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (rows == 0 || cols == 0)
    return 0;
  if (rows > 0x7fffffff)
    return 9;
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  cumsum_ref_kernel<<<(unsigned)rows, kBlock, 0, stream>>>((const float*)x.data, (float*)y.data,
                                                           cols);
  return cudaGetLastError() != cudaSuccess ? 10 : 0;
}
