// Planted fault for the quickstart matmul task (C = A @ B, float32, 512 x 512): a "fast"
// matmul on TF32 tensor cores (wmma 16x16x8 fragments with precision::tf32, float
// accumulators). TF32 keeps 10 mantissa bits of each input, so the output's norm-relative
// error is about 3e-4 to 6e-4, far above the task's norm_rel of 1e-5.
// The bench worker must report wrong_result (by the norm-relative check).
// One warp per 16 x 16 tile of C, operands read straight from global memory (no library).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>

namespace {

using namespace nvcuda;

constexpr int kWarpsPerBlock = 8;

__global__ void matmul_tf32_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                   float* __restrict__ C, int64_t M, int64_t N, int64_t K) {
  const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int64_t tiles_n = N / 16;
  const int64_t tile_m = warp / tiles_n;
  const int64_t tile_n = warp % tiles_n;
  if (tile_m >= M / 16)
    return;

  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int64_t k = 0; k < K; k += 8) {
    wmma::load_matrix_sync(a, A + tile_m * 16 * K + k, (unsigned)K);
    wmma::load_matrix_sync(b, B + k * N + tile_n * 16, (unsigned)N);
    for (int t = 0; t < a.num_elements; ++t)
      a.x[t] = wmma::__float_to_tf32(a.x[t]);
    for (int t = 0; t < b.num_elements; ++t)
      b.x[t] = wmma::__float_to_tf32(b.x[t]);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + tile_m * 16 * N + tile_n * 16, acc, (unsigned)N, wmma::mem_row_major);
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 2 || n_outputs != 1)
    return 1;
  const ks_tensor& A = inputs[0];
  const ks_tensor& B = inputs[1];
  ks_tensor& C = outputs[0];
  if (A.dtype != KS_F32 || B.dtype != KS_F32 || C.dtype != KS_F32)
    return 2;
  if (A.ndim != 2 || B.ndim != 2 || C.ndim != 2)
    return 3;
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  if (B.shape[0] != K || C.shape[0] != M || C.shape[1] != N)
    return 4;
  if (M % 16 != 0 || N % 16 != 0 || K % 8 != 0)
    return 5; // specialized: whole tiles only
  const int64_t warps = (M / 16) * (N / 16);
  if (warps == 0)
    return 0;
  const int64_t blocks = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock;
  matmul_tf32_kernel<<<(unsigned)blocks, kWarpsPerBlock * 32, 0, (cudaStream_t)cuda_stream>>>(
      (const float*)A.data, (const float*)B.data, (float*)C.data, M, N, K);
  return cudaGetLastError() != cudaSuccess ? 6 : 0;
}
