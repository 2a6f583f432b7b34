// Reference for the matrix-vector task (KernelBench level 1, problem 4): C = A @ B.
// A [M, K], B [K, 1], C [M, 1], all float32, row-major contiguous; shapes come from the
// tensors. One block per row: each thread accumulates a strided part of the dot product in
// double, then cub::BlockReduce adds the partial sums (in double).
//
// Return codes: 0 ok; 1 n_inputs != 2; 2 n_outputs != 1; 3 an input is not f32;
// 4 the output is not f32; 5 an input is not 2-D; 6 the output is not 2-D;
// 7 the shapes disagree (B and C must have one column); 8 a tensor is not contiguous;
// 9 too many rows for the grid; 10 a CUDA error at launch.
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
    matvec_ref_kernel(const float* __restrict__ A, const float* __restrict__ x,
                      float* __restrict__ y, int64_t K) {
  using reduce_t = cub::BlockReduce<double, kBlock>;
  __shared__ typename reduce_t::TempStorage tmp;
  const float* a = A + (int64_t)blockIdx.x * K;
  double acc = 0.0;
  for (int64_t k = threadIdx.x; k < K; k += kBlock)
    acc += (double)a[k] * (double)x[k];
  const double total = reduce_t(tmp).Sum(acc);
  if (threadIdx.x == 0)
    y[blockIdx.x] = (float)total;
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 2)
    return 1;
  if (n_outputs != 1)
    return 2;
  const ks_tensor& A = inputs[0];
  const ks_tensor& B = inputs[1];
  ks_tensor& C = outputs[0];
  if (A.dtype != KS_F32 || B.dtype != KS_F32)
    return 3;
  if (C.dtype != KS_F32)
    return 4;
  if (A.ndim != 2 || B.ndim != 2)
    return 5;
  if (C.ndim != 2)
    return 6;
  const int64_t M = A.shape[0], K = A.shape[1];
  if (B.shape[0] != K || B.shape[1] != 1 || C.shape[0] != M || C.shape[1] != 1)
    return 7;
  if (!is_contiguous(A) || !is_contiguous(B) || !is_contiguous(C))
    return 8;
  if (M == 0)
    return 0;
  if (M > 0x7fffffff)
    return 9;
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  matvec_ref_kernel<<<(unsigned)M, kBlock, 0, stream>>>((const float*)A.data, (const float*)B.data,
                                                        (float*)C.data, K);
  return cudaGetLastError() != cudaSuccess ? 10 : 0;
}
