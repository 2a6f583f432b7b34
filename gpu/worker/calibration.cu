// Device calibration: the two ceilings of the roofline, measured rather than read off a
// datasheet (METHOD.md: "measure the two ceilings once on the device machine").
//
// Bandwidth: a float4 grid-stride copy between two buffers far larger than L2 (1 GiB each,
// or a quarter of free memory), counting bytes read plus bytes written; the median of 15
// runs after 3 warm-ups. The better of our kernel and cudaMemcpyAsync is kept.
// FMA rate: every thread runs 8 independent FMA chains (enough to cover FMA latency), the
// grid fills every SM several times, and the results are stored so nothing is dead code.
//
// The stability probe (engine/card_stability.hpp) is the same copy on smaller buffers (four
// times the L2, 64 to 256 MiB each, halved while the device cannot hold them): a warm-up of at
// least 10 ms (the clocks of a card that idled ramp up), then its samples queued back to back
// between CUDA events and waited for once, so that a slow host (the compile pool on every core)
// cannot stretch a sample by launching it late; only the device's own time is measured.

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

// Returns the q-quantile of `sorted` (ascending, non-empty) by linear interpolation, as
// engine::quantile does.
double quantile_of(const std::vector<double>& sorted, double q) {
  double at = q * static_cast<double>(sorted.size() - 1);
  auto low = static_cast<size_t>(at);
  size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (at - static_cast<double>(low));
}

constexpr int64_t mib = int64_t{1} << 20;

// Times `copies` copies of `n4` float4s back to back after a warm-up of at least 10 ms, in
// windows of `window` copies between two events each; fills `times` with each window's time per
// copy (ms, in order; copies beyond a whole number of windows are not run). Windows, not single
// copies: another context's time slice (about 2.5 ms on an H100) lands between two copies, so
// per-copy samples miss it (measured under ks-gpu-noise: 2 of 32 copies take 2.7 ms, the median
// and p90 stay at 0.150 ms), while a window of eight that holds one takes about three times
// as long per copy.
cudaError_t time_probe_copies(cudaStream_t stream, int blocks, const float4* src, float4* dst,
                              int64_t n4, int32_t copies, int32_t window,
                              std::vector<double>& times) {
  const int32_t samples = std::max(copies / window, 1);
  std::vector<cudaEvent_t> events(static_cast<size_t>(samples) + 1, nullptr);
  cudaError_t err = cudaSuccess;
  for (cudaEvent_t& e : events)
    if (err == cudaSuccess)
      err = cudaEventCreate(&e);
  // Warm-up: batches of four copies until 10 ms of them ran (at most 64 batches).
  double warm_ms = 0;
  for (int batch = 0; batch < 64 && warm_ms < 10 && err == cudaSuccess; ++batch) {
    cudaEventRecord(events[0], stream);
    for (int i = 0; i < 4; ++i)
      copy_kernel<<<blocks, 512, 0, stream>>>(src, dst, n4);
    cudaEventRecord(events[1], stream);
    err = cudaEventSynchronize(events[1]);
    float ms = 0;
    if (err == cudaSuccess)
      err = cudaEventElapsedTime(&ms, events[0], events[1]);
    warm_ms += ms;
  }
  if (err == cudaSuccess) {
    cudaEventRecord(events[0], stream);
    for (size_t i = 1; i < events.size(); ++i) {
      for (int32_t c = 0; c < window; ++c)
        copy_kernel<<<blocks, 512, 0, stream>>>(src, dst, n4);
      cudaEventRecord(events[i], stream);
    }
    err = cudaEventSynchronize(events.back());
  }
  for (size_t i = 1; i < events.size() && err == cudaSuccess; ++i) {
    float ms = 0;
    err = cudaEventElapsedTime(&ms, events[i - 1], events[i]);
    times.push_back(static_cast<double>(ms) / window);
  }
  for (cudaEvent_t e : events)
    if (e != nullptr)
      cudaEventDestroy(e);
  return err == cudaSuccess ? cudaGetLastError() : err;
}

} // namespace

cudaError_t probe_device(int32_t device, cudaStream_t stream, const probe_options& opt,
                         probe_result& out) {
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess)
    return err;
  int64_t bytes = opt.bytes > 0
                      ? opt.bytes
                      : std::clamp<int64_t>(4 * int64_t{prop.l2CacheSize}, 64 * mib, 256 * mib);
  bytes &= ~int64_t{255};
  void *src = nullptr, *dst = nullptr;
  // A device that holds a large task's tensors may not have room: halve, down to 8 MiB.
  for (;;) {
    err = cudaMalloc(&src, bytes);
    if (err == cudaSuccess) {
      err = cudaMalloc(&dst, bytes);
      if (err != cudaSuccess) {
        cudaFree(src);
        src = nullptr;
      }
    }
    if (err != cudaErrorMemoryAllocation || bytes / 2 < 8 * mib || opt.bytes > 0)
      break;
    cudaGetLastError(); // not sticky: clear it and try smaller buffers
    bytes /= 2;
  }
  if (err != cudaSuccess)
    return err;
  cudaMemsetAsync(src, 0x3c, bytes, stream);
  std::vector<double> times;
  // Windows of eight copies (1.2 ms on an H100) where there are at least four of them.
  const int32_t copies = std::max(opt.samples, 1);
  err =
      time_probe_copies(stream, prop.multiProcessorCount * 8, static_cast<const float4*>(src),
                        static_cast<float4*>(dst), bytes / 16, copies, copies >= 32 ? 8 : 1, times);
  cudaFree(src);
  cudaFree(dst);
  if (err != cudaSuccess)
    return err;
  std::sort(times.begin(), times.end());
  out.bytes = bytes;
  out.samples = static_cast<int32_t>(times.size());
  out.median_ms = quantile_of(times, 0.5);
  out.p10_ms = quantile_of(times, 0.1);
  out.p90_ms = quantile_of(times, 0.9);
  out.min_ms = times.front();
  out.max_ms = times.back();
  return cudaSuccess;
}

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
