// Which grid and cache hints let an elementwise kernel reach the copy bandwidth? KernelBench's
// activations (1.6e9 floats in, 1.6e9 out) end at 92-97% of the roofline with our kernels while
// torch's reach 100%: this times relu written several ways on one large tensor, beside a
// device-to-device copy of the same bytes, and prints a table (median of 20 calls, L2 flushed
// before each; events). Build and run on a GPU host:
//
//   nvcc -O3 -arch=sm_90a -o /tmp/ew benchmarks/elementwise_grid_bench.cu && /tmp/ew [N]
//
// Not part of the build: a measurement behind a skill's parameter space (docs/benchmarks.md).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

__device__ __forceinline__ float relu(float v) {
  return v < 0.0f ? 0.0f : v;
}
__device__ __forceinline__ float4 relu4(float4 v) {
  return make_float4(relu(v.x), relu(v.y), relu(v.z), relu(v.w));
}

/// Relu of float4s base, base + Threads, ... (Unroll of them): all loads, then all stores.
template <int Threads, int Unroll, bool Streaming>
__device__ __forceinline__ void relu_block(const float4* x, float4* y, int64_t n4, int64_t base) {
  float4 v[Unroll];
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const int64_t i = base + (int64_t)u * Threads;
    v[u] = i < n4 ? (Streaming ? __ldcs(x + i) : x[i]) : make_float4(0, 0, 0, 0);
  }
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const int64_t i = base + (int64_t)u * Threads;
    if (i < n4) {
      if (Streaming)
        __stcs(y + i, relu4(v[u]));
      else
        y[i] = relu4(v[u]);
    }
  }
}

/// A grid-stride loop over one wave (our elementwise_vectorized), streaming hints or not.
template <int Threads, int Unroll, bool Streaming>
__global__ void __launch_bounds__(Threads) grid_stride(const float4* x, float4* y, int64_t n4) {
  const int64_t step = (int64_t)gridDim.x * Threads * Unroll;
  for (int64_t base = (int64_t)blockIdx.x * Threads * Unroll + threadIdx.x; base < n4; base += step)
    relu_block<Threads, Unroll, Streaming>(x, y, n4, base);
}

/// One pass: a block per Threads x Unroll float4s, no loop (torch's vectorized kernel's shape).
template <int Threads, int Unroll, bool Streaming>
__global__ void __launch_bounds__(Threads) one_pass(const float4* x, float4* y, int64_t n4) {
  relu_block<Threads, Unroll, Streaming>(x, y, n4,
                                         (int64_t)blockIdx.x * Threads * Unroll + threadIdx.x);
}

/// The scalar grid-stride loop of the family reference.
__global__ void scalar_reference(const float* x, float* y, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    y[i] = relu(x[i]);
}

struct result {
  const char* name;
  float median_ms, p10_ms, p90_ms;
};

template <class Launch>
result time_it(const char* name, Launch launch, void* flush, size_t flush_bytes) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  launch(); // warm up
  std::vector<float> ms;
  for (int r = 0; r < 20; ++r) {
    cudaMemsetAsync(flush, r, flush_bytes);
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return {name, ms[ms.size() / 2], ms[2], ms[17]};
}

} // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t{4096} * 393216;
  const int64_t n4 = n / 4;
  float *x = nullptr, *y = nullptr;
  void* flush = nullptr;
  const size_t flush_bytes = size_t{256} << 20;
  if (cudaMalloc(&x, n * 4) != cudaSuccess || cudaMalloc(&y, n * 4) != cudaSuccess ||
      cudaMalloc(&flush, flush_bytes) != cudaSuccess) {
    std::printf("cannot allocate %lld floats twice\n", (long long)n);
    return 1;
  }
  cudaMemset(x, 0x3f, n * 4);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  auto blocks = [&](int64_t per_block) { return (unsigned)((n4 + per_block - 1) / per_block); };
  std::vector<result> rs;
  rs.push_back(time_it(
      "cudaMemcpy device to device",
      [&] { cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); }, flush, flush_bytes));
  rs.push_back(time_it(
      "reference: scalar grid-stride, 256 x 1M blocks",
      [&] {
        scalar_reference<<<(unsigned)std::min<int64_t>((n + 255) / 256, 1 << 20), 256>>>(x, y, n);
      },
      flush, flush_bytes));
  rs.push_back(time_it(
      "grid-stride 256 x unroll 4, 8/SM, streaming",
      [&] { grid_stride<256, 4, true><<<sms * 8, 256>>>(x4, y4, n4); }, flush, flush_bytes));
  rs.push_back(time_it(
      "grid-stride 256 x unroll 4, 8/SM, plain",
      [&] { grid_stride<256, 4, false><<<sms * 8, 256>>>(x4, y4, n4); }, flush, flush_bytes));
  rs.push_back(time_it(
      "grid-stride 256 x unroll 4, 64/SM, plain",
      [&] { grid_stride<256, 4, false><<<sms * 64, 256>>>(x4, y4, n4); }, flush, flush_bytes));
  rs.push_back(time_it(
      "one pass 128 x unroll 1, plain",
      [&] { one_pass<128, 1, false><<<blocks(128), 128>>>(x4, y4, n4); }, flush, flush_bytes));
  rs.push_back(time_it(
      "one pass 128 x unroll 2, plain",
      [&] { one_pass<128, 2, false><<<blocks(256), 128>>>(x4, y4, n4); }, flush, flush_bytes));
  rs.push_back(time_it(
      "one pass 128 x unroll 4, plain",
      [&] { one_pass<128, 4, false><<<blocks(512), 128>>>(x4, y4, n4); }, flush, flush_bytes));
  rs.push_back(time_it(
      "one pass 256 x unroll 4, plain",
      [&] { one_pass<256, 4, false><<<blocks(1024), 256>>>(x4, y4, n4); }, flush, flush_bytes));
  rs.push_back(time_it(
      "one pass 128 x unroll 4, streaming",
      [&] { one_pass<128, 4, true><<<blocks(512), 128>>>(x4, y4, n4); }, flush, flush_bytes));
  rs.push_back(time_it(
      "one pass 512 x unroll 2, plain",
      [&] { one_pass<512, 2, false><<<blocks(1024), 512>>>(x4, y4, n4); }, flush, flush_bytes));
  if (cudaGetLastError() != cudaSuccess) {
    std::printf("a launch failed\n");
    return 1;
  }
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  std::printf("%s, %lld floats in and out (%.2f GB moved)\n\n", p.name, (long long)n,
              8.0 * n / 1e9);
  std::printf("| kernel | median ms | p10 | p90 | GB/s | vs copy |\n|---|---|---|---|---|---|\n");
  for (const result& r : rs)
    std::printf("| %s | %.4f | %.4f | %.4f | %.0f | %.3f |\n", r.name, r.median_ms, r.p10_ms,
                r.p90_ms, 8.0 * n / 1e6 / r.median_ms, rs[0].median_ms / r.median_ms);
  return 0;
}
