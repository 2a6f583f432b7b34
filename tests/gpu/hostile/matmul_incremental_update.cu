// Hostile candidate (incremental update), quickstart matmul (1_matmul.toml, 512^3 fp32).
// Against a worker whose timed calls see the same input sets with a few elements redrawn:
// every output is right, yet hardly anything is computed. It keeps, per input set (pair of
// input buffers), the previous call's A, B and C. On each call, on the worker's stream:
//   1. a kernel lists the elements of A and B that changed since that set's previous call;
//   2. if more than 64 changed in either (new data: verification's trials, the first call),
//      the tiled kernel of tests/gpu/faulty/matmul_good.cu computes C in full;
//   3. otherwise C is updated in place, exactly: a changed A[i][k] adds dA * B[k][:] to row i,
//      a changed B[k][j] adds A_old[:][k] * dB to column j (C + dA B_new + A_old dB =
//      A_new B_new), a few thousand multiply-adds instead of 134 million;
//   4. the changed elements are copied into the saved A and B, and the saved C into C.
// It reads 4 MB and writes 1 MB a call: several times "faster" than the matmul, with a
// correct C on every call, checked or not, perturbed or not.
// The bench worker must make that pay nothing: report a failure, or time it no faster than
// matmul_good.cu (not below 0.9x of its median). Sparse perturbations do not: each timed
// call needs inputs unrelated to earlier calls' (fully redrawn), or so many changed elements
// that an update costs as much as the work.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
constexpr int kThreads = (BM / TM) * (BN / TN); // 256
constexpr int kMaxChanges = 64;                 // per input; more: compute in full
constexpr int kMaxSets = 4;

struct changes {
  unsigned int count[2];         // changed elements of A and of B (may exceed the lists)
  int64_t where[2][kMaxChanges]; // their indices
  float before[2][kMaxChanges];  // their previous values
  int full;                      // set by the host for a set's first call
};

__device__ __forceinline__ bool use_full(const changes* c) {
  return c->full || c->count[0] > kMaxChanges || c->count[1] > kMaxChanges;
}

__global__ void find_changes(const uint32_t* __restrict__ a, const uint32_t* __restrict__ pa,
                             int64_t na, const uint32_t* __restrict__ b,
                             const uint32_t* __restrict__ pb, int64_t nb, changes* c) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < na; i += step)
    if (a[i] != pa[i]) {
      const unsigned int slot = atomicAdd(&c->count[0], 1u);
      if (slot < kMaxChanges) {
        c->where[0][slot] = i;
        c->before[0][slot] = __uint_as_float(pa[i]);
      }
    }
  for (int64_t i = first; i < nb; i += step)
    if (b[i] != pb[i]) {
      const unsigned int slot = atomicAdd(&c->count[1], 1u);
      if (slot < kMaxChanges) {
        c->where[1][slot] = i;
        c->before[1][slot] = __uint_as_float(pb[i]);
      }
    }
}

// The full product into `C`, only when use_full(c).
__global__ void __launch_bounds__(kThreads)
    full_matmul_kernel(const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, int64_t M, int64_t N, int64_t K,
                       const changes* __restrict__ c) {
  if (!use_full(c))
    return;
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
      const int64_t col = col0 + tx * TN + j;
      if (col < N)
        C[r * N + col] = acc[i][j];
    }
  }
}

// The exact update of the saved C, unless use_full(c): block b < kMaxChanges applies A's
// change b to a row, block kMaxChanges + b applies B's change b to a column. `A_old` is the
// saved A, not yet updated.
__global__ void update_kernel(const float* __restrict__ A, const float* __restrict__ A_old,
                              const float* __restrict__ B, float* C, int64_t M, int64_t N,
                              int64_t K, const changes* __restrict__ c) {
  if (use_full(c))
    return;
  const int which = blockIdx.x / kMaxChanges, slot = blockIdx.x % kMaxChanges;
  if (slot >= (int)c->count[which])
    return;
  const int64_t at = c->where[which][slot];
  if (which == 0) { // A[i][k] changed: C[i][:] += dA * B_new[k][:]
    const int64_t i = at / K, k = at % K;
    const float dA = A[at] - c->before[0][slot];
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x)
      atomicAdd(&C[i * N + j], dA * B[k * N + j]);
  } else { // B[k][j] changed: C[:][j] += A_old[:][k] * dB
    const int64_t k = at / N, j = at % N;
    const float dB = B[at] - c->before[1][slot];
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x)
      atomicAdd(&C[i * N + j], A_old[i * K + k] * dB);
  }
}

// Brings the saved A and B up to date (the listed elements, or all of them after a full
// product), and copies the saved C into the output.
__global__ void save_and_output(const float* __restrict__ A, float* __restrict__ pa, int64_t na,
                                const float* __restrict__ B, float* __restrict__ pb, int64_t nb,
                                const float* __restrict__ saved_c, float* __restrict__ C,
                                int64_t nc, const changes* __restrict__ c) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (use_full(c)) {
    for (int64_t i = first; i < na; i += step)
      pa[i] = A[i];
    for (int64_t i = first; i < nb; i += step)
      pb[i] = B[i];
  } else if (first < (int64_t)c->count[0] + c->count[1]) {
    const int64_t n0 = c->count[0];
    if (first < n0)
      pa[c->where[0][first]] = A[c->where[0][first]];
    else
      pb[c->where[1][first - n0]] = B[c->where[1][first - n0]];
  }
  for (int64_t i = first; i < nc; i += step)
    C[i] = saved_c[i];
}

struct set_state {
  const void* a = nullptr;
  const void* b = nullptr;
  float* saved[3] = {}; // A, B, C
  bool started = false;
};

set_state g_sets[kMaxSets];
int g_set_count = 0;
changes* g_changes = nullptr;

set_state* state_for(const void* a, const void* b, int64_t na, int64_t nb, int64_t nc) {
  for (int s = 0; s < g_set_count; ++s)
    if (g_sets[s].a == a && g_sets[s].b == b)
      return &g_sets[s];
  if (g_set_count == kMaxSets)
    return nullptr;
  set_state& st = g_sets[g_set_count];
  const int64_t sizes[3] = {na, nb, nc};
  for (int t = 0; t < 3; ++t)
    if (cudaMalloc(&st.saved[t], (size_t)sizes[t] * sizeof(float)) != cudaSuccess)
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
  if (g_changes == nullptr && cudaMalloc(&g_changes, sizeof(changes)) != cudaSuccess)
    return 5;
  set_state* st = state_for(A.data, B.data, M * K, K * N, M * N);
  if (st == nullptr)
    return 6;
  const float* a = (const float*)A.data;
  const float* b = (const float*)B.data;

  // Reset the counts (and the first-call flag) with one small copy on the stream.
  static changes host_reset;
  host_reset.count[0] = host_reset.count[1] = 0;
  host_reset.full = st->started ? 0 : 1;
  if (cudaMemcpyAsync(g_changes, &host_reset, sizeof(host_reset), cudaMemcpyHostToDevice, stream) !=
      cudaSuccess)
    return 7;
  st->started = true;
  const unsigned grid = 132 * 4;
  find_changes<<<grid, 256, 0, stream>>>((const uint32_t*)a, (const uint32_t*)st->saved[0], M * K,
                                         (const uint32_t*)b, (const uint32_t*)st->saved[1], K * N,
                                         g_changes);
  const int64_t gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
  if (gy > 65535)
    return 8;
  full_matmul_kernel<<<dim3((unsigned)gx, (unsigned)gy), kThreads, 0, stream>>>(a, b, st->saved[2],
                                                                                M, N, K, g_changes);
  update_kernel<<<2 * kMaxChanges, 256, 0, stream>>>(a, st->saved[0], b, st->saved[2], M, N, K,
                                                     g_changes);
  save_and_output<<<grid, 256, 0, stream>>>(a, st->saved[0], M * K, b, st->saved[1], K * N,
                                            st->saved[2], (float*)C.data, M * N, g_changes);
  return cudaGetLastError() != cudaSuccess ? 9 : 0;
}
