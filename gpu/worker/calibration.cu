// Device calibration: the two ceilings of the roofline, measured rather than read off a
// datasheet (METHOD.md: "measure the two ceilings once on the device machine").
//
// Bandwidth: a float4 grid-stride copy between two buffers far larger than L2 (1 GiB each,
// or a quarter of free memory), counting bytes read plus bytes written; the median of 15
// runs after 3 warm-ups. The better of our kernel and cudaMemcpyAsync is kept.
// FMA rate: every thread runs 8 independent FMA chains (enough to cover FMA latency), the
// grid fills every SM several times, and the results are stored so nothing is dead code.

#include "gpu/worker/calibration.hpp"

#include <algorithm>
#include <vector>

namespace ks::gpu::worker {

namespace {

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = src[i];
}

constexpr int fma_iterations = 4096;

__global__ void fma_kernel(float* out, float seed) {
  float a0 = seed + threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3;
  float a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  const float m = 0.999999f, c = 1e-7f;
#pragma unroll 16
  for (int i = 0; i < fma_iterations; ++i) {
    a0 = fmaf(a0, m, c);
    a1 = fmaf(a1, m, c);
    a2 = fmaf(a2, m, c);
    a3 = fmaf(a3, m, c);
    a4 = fmaf(a4, m, c);
    a5 = fmaf(a5, m, c);
    a6 = fmaf(a6, m, c);
    a7 = fmaf(a7, m, c);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

template <class F>
cudaError_t median_ms(cudaStream_t stream, int warmups, int runs, F&& launch, double& out) {
  cudaEvent_t start, stop;
  cudaError_t err = cudaEventCreate(&start);
  if (err != cudaSuccess)
    return err;
  err = cudaEventCreate(&stop);
  if (err != cudaSuccess)
    return err;
  for (int i = 0; i < warmups; ++i)
    launch();
  std::vector<double> times;
  for (int i = 0; i < runs && err == cudaSuccess; ++i) {
    cudaEventRecord(start, stream);
    launch();
    cudaEventRecord(stop, stream);
    err = cudaEventSynchronize(stop);
    float ms = 0;
    if (err == cudaSuccess)
      err = cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (err != cudaSuccess)
    return err;
  std::sort(times.begin(), times.end());
  out = times[times.size() / 2];
  return cudaGetLastError();
}

} // namespace

cudaError_t calibrate_device(int32_t device, cudaStream_t stream, calibration& out) {
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess)
    return err;
  size_t free_bytes = 0, total_bytes = 0;
  if ((err = cudaMemGetInfo(&free_bytes, &total_bytes)) != cudaSuccess)
    return err;
  int64_t bytes = std::min<int64_t>(int64_t{1} << 30, static_cast<int64_t>(free_bytes / 4));
  bytes &= ~int64_t{255};
  void *src = nullptr, *dst = nullptr;
  if ((err = cudaMalloc(&src, bytes)) != cudaSuccess)
    return err;
  if ((err = cudaMalloc(&dst, bytes)) != cudaSuccess) {
    cudaFree(src);
    return err;
  }
  cudaMemsetAsync(src, 0x3c, bytes, stream);
  int64_t n4 = bytes / 16;
  int blocks = prop.multiProcessorCount * 8;
  double kernel_ms = 0, memcpy_ms = 0;
  err = median_ms(
      stream, 3, 15,
      [&] {
        copy_kernel<<<blocks, 512, 0, stream>>>(static_cast<const float4*>(src),
                                                static_cast<float4*>(dst), n4);
      },
      kernel_ms);
  if (err == cudaSuccess)
    err = median_ms(
        stream, 3, 15, [&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream); },
        memcpy_ms);
  cudaFree(src);
  cudaFree(dst);
  if (err != cudaSuccess)
    return err;
  out.copy_bytes = bytes;
  out.copy_ms = std::min(kernel_ms, memcpy_ms);
  out.dram_gbps = 2.0 * static_cast<double>(bytes) / (out.copy_ms * 1e-3) / 1e9;

  int fma_blocks = prop.multiProcessorCount * 16;
  int fma_threads = 256;
  float* sink = nullptr;
  if ((err = cudaMalloc(&sink, sizeof(float) * fma_blocks * fma_threads)) != cudaSuccess)
    return err;
  double fma_ms = 0;
  err = median_ms(
      stream, 3, 15, [&] { fma_kernel<<<fma_blocks, fma_threads, 0, stream>>>(sink, 1.0f); },
      fma_ms);
  cudaFree(sink);
  if (err != cudaSuccess)
    return err;
  double flops = 2.0 * 8.0 * fma_iterations * static_cast<double>(fma_blocks) * fma_threads;
  out.fma_ms = fma_ms;
  out.fp32_gflops = flops / (fma_ms * 1e-3) / 1e9;
  return cudaSuccess;
}

} // namespace ks::gpu::worker
