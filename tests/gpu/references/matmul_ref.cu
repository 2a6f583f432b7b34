// Reference for the square matmul task (KernelBench level 1, problem 1): C = A @ B.
// A [M, K], B [K, N], C [M, N], all float32, row-major contiguous; shapes come from the
// tensors, so the same file serves every suite. Deliberately plain: one thread per output,
// the dot product accumulated in double (each float product is exact in double), so the
// result is the correctly rounded float of a nearly exact sum. It is the slowest reference.
//
// Return codes: 0 ok; 1 n_inputs != 2; 2 n_outputs != 1; 3 an input is not f32;
// 4 the output is not f32; 5 an input is not 2-D; 6 the output is not 2-D;
// 7 the shapes disagree; 8 a tensor is not contiguous row-major; 9 too large for the grid;
// 10 a CUDA error at launch.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

// Launch parameters, overridable with -D or a #define before this file (the offline planner
// tunes them through the manifest's tunables): a block covers KS_TILE_Y rows by KS_TILE_X
// columns of C, one thread per output.
#ifndef KS_TILE_X
#define KS_TILE_X 32
#endif
#ifndef KS_TILE_Y
#define KS_TILE_Y 8
#endif
static_assert(KS_TILE_X >= 1 && KS_TILE_Y >= 1 && KS_TILE_X * KS_TILE_Y <= 1024,
              "KS_TILE_X * KS_TILE_Y: threads per block, 1 to 1024");

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

constexpr int kTileX = KS_TILE_X; // threads along a row of C: coalesced reads of B, writes of C
constexpr int kTileY = KS_TILE_Y;

__global__ void matmul_ref_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                  float* __restrict__ C, int64_t M, int64_t N, int64_t K) {
  const int64_t col = (int64_t)blockIdx.x * kTileX + threadIdx.x;
  const int64_t row = (int64_t)blockIdx.y * kTileY + threadIdx.y;
  if (row >= M || col >= N)
    return;
  const float* a = A + row * K;
  double acc = 0.0;
  for (int64_t k = 0; k < K; ++k)
    acc += (double)a[k] * (double)B[k * N + col];
  C[row * N + col] = (float)acc;
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
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  if (B.shape[0] != K || C.shape[0] != M || C.shape[1] != N)
    return 7;
  if (!is_contiguous(A) || !is_contiguous(B) || !is_contiguous(C))
    return 8;
  if (M == 0 || N == 0)
    return 0;
  const int64_t grid_x = (N + kTileX - 1) / kTileX;
  const int64_t grid_y = (M + kTileY - 1) / kTileY;
  if (grid_x > 0x7fffffff || grid_y > 65535)
    return 9;
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  matmul_ref_kernel<<<dim3((unsigned)grid_x, (unsigned)grid_y), dim3(kTileX, kTileY), 0, stream>>>(
      (const float*)A.data, (const float*)B.data, (float*)C.data, M, N, K);
  return cudaGetLastError() != cudaSuccess ? 10 : 0;
}
