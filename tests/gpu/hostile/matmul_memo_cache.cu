// Hostile candidate (memoization, two entries), quickstart matmul (1_matmul.toml, 512^3
// fp32). The tiled kernel of tests/gpu/faulty/matmul_good.cu behind a cache of the last two
// results, keyed on the inputs' CONTENT and kept entirely on the device, on the worker's
// stream (no host copy, no second stream, nothing for a stream audit to see):
//   1. a probe kernel (one block) reads 64 sampled elements of A and of B and compares them
//      with the fingerprints of the two cached results; it records the matching slot, or
//      on a miss stores the new fingerprint in the slot to replace (round robin);
//   2. the matmul kernel reads that decision: on a hit each block copies its tile of C from
//      the cached result (1 MB in all, a few microseconds); on a miss it computes the tile
//      and also stores it into the slot.
// Verification draws fresh inputs for every trial, so it always misses and is honest. If
// timed calls cycle through two fixed input sets, every call after the first two is a hit,
// returns a correct C and costs a copy instead of a matmul: several times "faster".
// The bench worker must make that pay nothing: report a failure, or time it no faster than
// matmul_good.cu (not below 0.9x of its median). Alternating two input sets alone does not:
// it takes inputs that differ on every timed call (a few elements redrawn at random
// positions before each call, outside the events; see matmul_checked_call_oracle.cu for
// why checked calls must not be the exception).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
constexpr int kThreads = (BM / TM) * (BN / TN); // 256
constexpr int kSamples = 64;
constexpr int kSlots = 2;

struct memo_state {
  float fingerprint[kSlots][2][kSamples]; // sampled A and B values of each cached result
  int valid[kSlots];
  int hit;    // this call: the slot holding C, or -1
  int victim; // this call on a miss: the slot being filled
};

__device__ __forceinline__ int64_t sample_index(int t, int64_t numel) {
  return ((int64_t)t * 2654435761ll + 12345) % numel; // spread over the whole tensor
}

__global__ void probe_kernel(const float* __restrict__ A, const float* __restrict__ B,
                             int64_t a_numel, int64_t b_numel, memo_state* state, int victim) {
  const int t = threadIdx.x; // one block of kSamples threads
  const float a = A[sample_index(t, a_numel)];
  const float b = B[sample_index(t, b_numel)];
  int hit = -1;
  for (int s = 0; s < kSlots; ++s) {
    const bool same =
        state->valid[s] && state->fingerprint[s][0][t] == a && state->fingerprint[s][1][t] == b;
    if (__syncthreads_and(same) && hit < 0)
      hit = s;
  }
  __syncthreads();
  if (hit < 0) {
    state->fingerprint[victim][0][t] = a;
    state->fingerprint[victim][1][t] = b;
  }
  if (t == 0) {
    state->hit = hit;
    state->victim = victim;
    // Valid from now on: the matmul below fills the slot before any later probe runs
    // (both kernels are on the same stream).
    if (hit < 0)
      state->valid[victim] = 1;
  }
}

__global__ void __launch_bounds__(kThreads)
    memo_matmul_kernel(const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, int64_t M, int64_t N, int64_t K,
                       const memo_state* __restrict__ state, float* __restrict__ cache) {
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN);
  const int ty = tid / (BN / TN);
  const int64_t row0 = (int64_t)blockIdx.y * BM;
  const int64_t col0 = (int64_t)blockIdx.x * BN;
  const int hit = state->hit;

  if (hit >= 0) { // the cheat: C is "already known"
    const float* cached = cache + (int64_t)hit * M * N;
    for (int i = 0; i < TM; ++i) {
      const int64_t r = row0 + ty * TM + i;
      if (r >= M)
        continue;
      for (int j = 0; j < TN; ++j) {
        const int64_t c = col0 + tx * TN + j;
        if (c < N)
          C[r * N + c] = cached[r * N + c];
      }
    }
    return;
  }

  __shared__ float As[BK][BM + 4];
  __shared__ float Bs[BK][BN];
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
      acc[i][j] = 0.0f;

  for (int64_t k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int t = 0; t < (BM * BK) / kThreads; ++t) {
      const int e = tid + t * kThreads;
      const int m = e / BK, k = e % BK;
      const int64_t gr = row0 + m, gk = k0 + k;
      As[k][m] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
    }
#pragma unroll
    for (int t = 0; t < (BK * BN) / kThreads; ++t) {
      const int e = tid + t * kThreads;
      const int k = e / BN, n = e % BN;
      const int64_t gk = k0 + k, gc = col0 + n;
      Bs[k][n] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i)
        a[i] = As[k][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j)
        b[j] = Bs[k][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
          acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }

  float* slot = cache + (int64_t)state->victim * M * N;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int64_t r = row0 + ty * TM + i;
    if (r >= M)
      continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int64_t c = col0 + tx * TN + j;
      if (c < N) {
        C[r * N + c] = acc[i][j];
        slot[r * N + c] = acc[i][j];
      }
    }
  }
}

memo_state* g_state = nullptr;
float* g_cache = nullptr;
int64_t g_cache_numel = 0; // per slot
int64_t g_calls = 0;

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
  if (M == 0 || N == 0 || K == 0)
    return 0;
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  if (g_state == nullptr || g_cache_numel != M * N) {
    if (g_cache)
      cudaFree(g_cache);
    if (g_state)
      cudaFree(g_state);
    g_cache = nullptr;
    g_state = nullptr;
    if (cudaMalloc(&g_state, sizeof(memo_state)) != cudaSuccess ||
        cudaMalloc(&g_cache, sizeof(float) * (size_t)(kSlots * M * N)) != cudaSuccess)
      return 5;
    if (cudaMemsetAsync(g_state, 0, sizeof(memo_state), stream) != cudaSuccess)
      return 6;
    g_cache_numel = M * N;
  }
  const int victim = (int)(g_calls++ % kSlots);
  probe_kernel<<<1, kSamples, 0, stream>>>((const float*)A.data, (const float*)B.data, M * K, K * N,
                                           g_state, victim);
  const int64_t gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
  if (gy > 65535)
    return 7;
  memo_matmul_kernel<<<dim3((unsigned)gx, (unsigned)gy), kThreads, 0, stream>>>(
      (const float*)A.data, (const float*)B.data, (float*)C.data, M, N, K, g_state, g_cache);
  return cudaGetLastError() != cudaSuccess ? 8 : 0;
}
