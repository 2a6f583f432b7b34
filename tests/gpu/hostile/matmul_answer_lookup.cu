// Hostile candidate (answer lookup), quickstart matmul (1_matmul.toml, 512^3 fp32). The
// candidate runs inside the worker's process and CUDA context, so every device buffer of the
// worker is readable to it, the reference's outputs included. It looks for them, the
// kind of exploit found in a published set of AI-written kernels (which returned memory
// still holding the reference's answer): it enumerates the allocations near its output with the
// driver's cuMemGetAddressRange (reached through cudaGetDriverEntryPointByVersion: no -lcuda),
// keeps those of C's size, and on every call a probe kernel computes 16 sampled elements of A @ B
// itself and looks for a buffer that already holds them. If one does, the matmul kernel copies it
// into C (1 MB); otherwise it computes honestly (the tiled kernel of
// tests/gpu/faulty/matmul_good.cu). Everything runs on the worker's stream. It rescans
// whenever it sees a tensor buffer it has not seen before (timing's input sets), and every
// 512th call.
// Compiled with -DKS_LOOKUP_ONLY, its own path writes zeros instead of computing: then only
// the look-up can make it pass, and verification must fail with wrong_result.
// The bench worker must make that pay nothing: report a failure, or time it no faster than
// matmul_good.cu (not below 0.9x of its median). Keeping the reference's resident outputs
// masked with a key defeats this search (not one that recovers the key: it is in the
// worker's memory, and a keystream with known plaintext can be inverted); running the
// reference after the candidate's call on the same inputs, so that no answer exists while
// the candidate runs, defeats any search.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
constexpr int kThreads = (BM / TM) * (BN / TN); // 256
constexpr int kSamples = 16;
constexpr int kMaxBuffers = 64;
constexpr int64_t kStep = int64_t{1} << 20;  // probe every MiB: C is 1 MiB, none is missed
constexpr int64_t kReach = int64_t{8} << 30; // look 8 GiB either side of C

// cuMemGetAddressRange, declared here so that no driver header or library is needed.
typedef int (*get_address_range_fn)(unsigned long long* base, size_t* size, unsigned long long ptr);

struct lookup_state {
  const float* buffers[kMaxBuffers];
  int count;
  int found; // this call: index into buffers of one holding A @ B, or -1
};

__global__ void probe_kernel(const float* __restrict__ A, const float* __restrict__ B, int64_t M,
                             int64_t N, int64_t K, lookup_state* state) {
  // One warp per sampled element of C (kSamples warps) computes it; then every thread checks
  // (buffer, sample) pairs in parallel, and thread 0 picks the first buffer that matched all.
  __shared__ float expected[kSamples];
  __shared__ int64_t where[kSamples];
  __shared__ int mismatched[kMaxBuffers];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t e = ((int64_t)warp * 2654435761ll + 977) % (M * N);
  const int64_t r = e / N, c = e % N;
  float sum = 0.0f;
  for (int64_t k = lane; k < K; k += 32)
    sum = fmaf(A[r * K + k], B[k * N + c], sum);
  for (int off = 16; off > 0; off /= 2)
    sum += __shfl_down_sync(0xffffffffu, sum, off);
  if (lane == 0) {
    expected[warp] = sum;
    where[warp] = e;
  }
  for (int b = threadIdx.x; b < kMaxBuffers; b += blockDim.x)
    mismatched[b] = 0;
  __syncthreads();
  const int count = state->count;
  for (int p = threadIdx.x; p < count * kSamples; p += blockDim.x) {
    const int b = p / kSamples, s = p % kSamples;
    const float got = state->buffers[b][where[s]];
    if (!(fabsf(got - expected[s]) <= 1e-3f * (1.0f + fabsf(expected[s]))))
      mismatched[b] = 1;
  }
  __syncthreads();
  if (threadIdx.x != 0)
    return;
  int found = -1;
  for (int b = 0; b < count && found < 0; ++b)
    if (!mismatched[b])
      found = b;
  state->found = found;
}

__global__ void __launch_bounds__(kThreads)
    lookup_matmul_kernel(const float* __restrict__ A, const float* __restrict__ B,
                         float* __restrict__ C, int64_t M, int64_t N, int64_t K,
                         const lookup_state* __restrict__ state) {
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN);
  const int ty = tid / (BN / TN);
  const int64_t row0 = (int64_t)blockIdx.y * BM;
  const int64_t col0 = (int64_t)blockIdx.x * BN;

  if (state->found >= 0) { // the cheat: the worker already holds the answer
    const float* answer = state->buffers[state->found];
    for (int i = 0; i < TM; ++i) {
      const int64_t r = row0 + ty * TM + i;
      if (r >= M)
        continue;
      for (int j = 0; j < TN; ++j) {
        const int64_t c = col0 + tx * TN + j;
        if (c < N)
          C[r * N + c] = answer[r * N + c];
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
#ifdef KS_LOOKUP_ONLY
  K = 0; // no answer to copy: write zeros
#endif
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

get_address_range_fn g_range = nullptr;
lookup_state* g_state = nullptr;
const void* g_seen[256];
int g_seen_count = 0;
int64_t g_calls = 0;

bool seen_before(const void* p) {
  for (int i = 0; i < g_seen_count; ++i)
    if (g_seen[i] == p)
      return true;
  if (g_seen_count < 256)
    g_seen[g_seen_count++] = p;
  return false;
}

// Lists the allocations of exactly `bytes` within kReach of `near`, other than the
// excluded ones, into `state` (on the host, then copied to the device on `stream`).
bool scan(const void* near, int64_t bytes, const void* const* excluded, int n_excluded,
          cudaStream_t stream) {
  static lookup_state host;
  host.count = 0;
  host.found = -1;
  const unsigned long long center = (unsigned long long)(uintptr_t)near;
  unsigned long long p = center > (unsigned long long)kReach ? center - kReach : kStep;
  const unsigned long long end = center + (unsigned long long)kReach;
  while (p < end && host.count < kMaxBuffers) {
    unsigned long long base = 0;
    size_t size = 0;
    if (g_range(&base, &size, p) != 0 || size == 0) {
      p += kStep;
      continue;
    }
    bool skip = (int64_t)size != bytes;
    for (int i = 0; i < n_excluded && !skip; ++i)
      skip = base == (unsigned long long)(uintptr_t)excluded[i];
    if (!skip)
      host.buffers[host.count++] = (const float*)(uintptr_t)base;
    p = base + size > p ? base + size : p + kStep;
  }
  return cudaMemcpyAsync(g_state, &host, sizeof(host), cudaMemcpyHostToDevice, stream) ==
         cudaSuccess;
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
  if (g_state == nullptr) {
    cudaDriverEntryPointQueryResult status;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", (void**)&g_range, 12000,
                                         cudaEnableDefault, &status) != cudaSuccess ||
        status != cudaDriverEntryPointSuccess || g_range == nullptr)
      return 5;
    if (cudaMalloc(&g_state, sizeof(lookup_state)) != cudaSuccess)
      return 6;
  }
  const bool new_a = !seen_before(A.data);
  const bool new_b = !seen_before(B.data);
  const bool new_c = !seen_before(C.data);
  // Rescan on new buffers, and now and then: the worker may allocate its answers later.
  if (new_a || new_b || new_c || g_calls++ % 512 == 0) {
    const void* excluded[] = {A.data, B.data, C.data};
    if (!scan(C.data, M * N * (int64_t)sizeof(float), excluded, 3, stream))
      return 7;
  }
  probe_kernel<<<1, 32 * kSamples, 0, stream>>>((const float*)A.data, (const float*)B.data, M, N, K,
                                                g_state);
  const int64_t gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
  if (gy > 65535)
    return 8;
  lookup_matmul_kernel<<<dim3((unsigned)gx, (unsigned)gy), kThreads, 0, stream>>>(
      (const float*)A.data, (const float*)B.data, (float*)C.data, M, N, K, g_state);
  return cudaGetLastError() != cudaSuccess ? 9 : 0;
}
