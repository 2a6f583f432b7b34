// Hostile candidate (checked-call oracle), quickstart matmul (1_matmul.toml, 512^3 fp32).
// Against a worker that perturbs the inputs of every unchecked timed call (a few elements
// redrawn at random positions, so that memos miss) but gives checked calls their input set
// as drawn (because that is what the reference's outputs are for): then "the inputs are
// exactly as drawn" means "this call is checked", and everything else may be skipped.
//   1. Collecting (the first calls of each input buffer, i.e. the warm-up): copies each
//      call's A and B aside; three successive calls of a set that differ in only a few
//      elements give the drawn content back by a majority vote per element (each call's
//      redrawn elements are restored in the next call of that set). Wholesale changes
//      (verification's fresh trials) restart the collection. It computes honestly.
//   2. Then on every call, on the worker's stream: a kernel counts the elements of A and B
//      that differ from the drawn content; the matmul kernel computes C when none differ (a
//      checked call) or many do (new data: be honest), and returns at once when a few do,
//      leaving C as it was. The count reads 4 MB: a few microseconds against the matmul's
//      tens.
// Verification is honest. The bench worker must make that pay nothing: report a failure, or
// time it no faster than matmul_good.cu (not below 0.9x of its median). It takes checked
// calls that look like any other: perturbed too, with the reference run on the very inputs
// of the checked call (after the candidate's call, which also means that no answer exists
// in memory while the candidate runs).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
constexpr int kThreads = (BM / TM) * (BN / TN); // 256
constexpr unsigned long long kFew = 64;         // at most this many differences: perturbed
constexpr int kMaxSets = 4;

// Adds to *count the number of elements of a (and of b) whose bits differ from pa (pb).
__global__ void count_differences(const uint32_t* __restrict__ a, const uint32_t* __restrict__ pa,
                                  int64_t na, const uint32_t* __restrict__ b,
                                  const uint32_t* __restrict__ pb, int64_t nb,
                                  unsigned long long* count) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long mine = 0;
  for (int64_t i = first; i < na; i += step)
    mine += a[i] != pa[i];
  for (int64_t i = first; i < nb; i += step)
    mine += b[i] != pb[i];
  for (int off = 16; off > 0; off /= 2)
    mine += __shfl_down_sync(0xffffffffu, mine, off);
  if ((threadIdx.x % 32) == 0 && mine != 0)
    atomicAdd(count, mine);
}

// out[i] = the value at least two of s0, s1, s2 agree on (s2 when none do).
__global__ void majority(const uint32_t* __restrict__ s0, const uint32_t* __restrict__ s1,
                         const uint32_t* __restrict__ s2, uint32_t* __restrict__ out, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = s0[i] == s1[i] ? s0[i] : s2[i];
}

// The tiled kernel of matmul_good.cu; with `differences` set, it returns at once when the
// inputs differ from the drawn content in 1..kFew elements.
__global__ void __launch_bounds__(kThreads)
    oracle_matmul_kernel(const float* __restrict__ A, const float* __restrict__ B,
                         float* __restrict__ C, int64_t M, int64_t N, int64_t K,
                         const unsigned long long* __restrict__ differences) {
  if (differences) {
    const unsigned long long d = *differences;
    if (d > 0 && d <= kFew)
      return; // the cheat: "a perturbed call, nobody checks it"
  }
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN);
  const int ty = tid / (BN / TN);
  const int64_t row0 = (int64_t)blockIdx.y * BM;
  const int64_t col0 = (int64_t)blockIdx.x * BN;
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
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int64_t r = row0 + ty * TM + i;
    if (r >= M)
      continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int64_t c = col0 + tx * TN + j;
      if (c < N)
        C[r * N + c] = acc[i][j];
    }
  }
}

// What the candidate knows about one input set (one pair of input buffers).
struct set_state {
  const void* a = nullptr;
  const void* b = nullptr;
  uint32_t* seen[3][2] = {}; // A and B of the last collected calls
  uint32_t* drawn[2] = {};   // the reconstructed content as drawn
  int collected = 0;
  bool ready = false;
};

set_state g_sets[kMaxSets];
int g_set_count = 0;
unsigned long long* g_differences = nullptr; // device counter

set_state* state_for(const void* a, const void* b, int64_t a_bytes, int64_t b_bytes) {
  for (int s = 0; s < g_set_count; ++s)
    if (g_sets[s].a == a && g_sets[s].b == b)
      return &g_sets[s];
  if (g_set_count == kMaxSets)
    return nullptr;
  set_state& st = g_sets[g_set_count];
  for (int k = 0; k < 3; ++k)
    if (cudaMalloc(&st.seen[k][0], (size_t)a_bytes) != cudaSuccess ||
        cudaMalloc(&st.seen[k][1], (size_t)b_bytes) != cudaSuccess)
      return nullptr;
  if (cudaMalloc(&st.drawn[0], (size_t)a_bytes) != cudaSuccess ||
      cudaMalloc(&st.drawn[1], (size_t)b_bytes) != cudaSuccess)
    return nullptr;
  st.a = a;
  st.b = b;
  ++g_set_count;
  return &st;
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
  if (M == 0 || N == 0 || K == 0)
    return 0;
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  const int64_t na = M * K, nb = K * N;
  if (g_differences == nullptr &&
      cudaMalloc(&g_differences, sizeof(unsigned long long)) != cudaSuccess)
    return 5;
  set_state* st = state_for(A.data, B.data, na * 4, nb * 4);
  if (st == nullptr)
    return 6;
  const uint32_t* a = (const uint32_t*)A.data;
  const uint32_t* b = (const uint32_t*)B.data;
  const unsigned count_grid = 132 * 4;

  const unsigned long long* skip_if_few = nullptr;
  if (!st->ready) {
    // Collecting (warm-up, where the worker synchronizes after every call anyway).
    if (st->collected > 0) {
      unsigned long long differences = 0;
      if (cudaMemsetAsync(g_differences, 0, sizeof(unsigned long long), stream) != cudaSuccess)
        return 7;
      count_differences<<<count_grid, 256, 0, stream>>>(a, st->seen[st->collected - 1][0], na, b,
                                                        st->seen[st->collected - 1][1], nb,
                                                        g_differences);
      if (cudaMemcpyAsync(&differences, g_differences, sizeof(differences), cudaMemcpyDeviceToHost,
                          stream) != cudaSuccess ||
          cudaStreamSynchronize(stream) != cudaSuccess)
        return 8;
      if (differences > 2 * kFew)
        st->collected = 0; // new data: start over
    }
    if (cudaMemcpyAsync(st->seen[st->collected][0], a, (size_t)na * 4, cudaMemcpyDeviceToDevice,
                        stream) != cudaSuccess ||
        cudaMemcpyAsync(st->seen[st->collected][1], b, (size_t)nb * 4, cudaMemcpyDeviceToDevice,
                        stream) != cudaSuccess)
      return 9;
    if (++st->collected == 3) {
      for (int t = 0; t < 2; ++t)
        majority<<<count_grid, 256, 0, stream>>>(st->seen[0][t], st->seen[1][t], st->seen[2][t],
                                                 st->drawn[t], t == 0 ? na : nb);
      st->ready = true;
    }
  } else {
    if (cudaMemsetAsync(g_differences, 0, sizeof(unsigned long long), stream) != cudaSuccess)
      return 10;
    count_differences<<<count_grid, 256, 0, stream>>>(a, st->drawn[0], na, b, st->drawn[1], nb,
                                                      g_differences);
    skip_if_few = g_differences;
  }
  const int64_t gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
  if (gy > 65535)
    return 11;
  oracle_matmul_kernel<<<dim3((unsigned)gx, (unsigned)gy), kThreads, 0, stream>>>(
      (const float*)A.data, (const float*)B.data, (float*)C.data, M, N, K, skip_if_few);
  return cudaGetLastError() != cudaSuccess ? 12 : 0;
}
