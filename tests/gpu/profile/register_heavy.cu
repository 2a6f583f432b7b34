// Planted: occupancy-bound. One thread per row keeps 200 partial sums live in registers
// (255 registers per thread, no spills), so one 256-thread block fits on an SM: 8 warps of 64,
// 12.5% occupancy, limited by registers. Each thread walks its row with dependent loads (the
// next index depends on the value just loaded, through a NaN test that never holds), so with
// so few warps nothing hides the memory latency and no unit gets busy. Expected diagnosis:
// occupancy, the limiter registers, warps stalled on long_scoreboard (task row_sum.toml).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {
constexpr int kThreads = 256;
constexpr int kLive = 200; // the row's 400 floats go to 200 partial sums, two each

__global__ void __launch_bounds__(kThreads, 1)
    register_heavy(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
  for (int64_t r = (int64_t)blockIdx.x * kThreads + threadIdx.x; r < rows;
       r += (int64_t)gridDim.x * kThreads) {
    const float* row = x + r * cols;
    float part[kLive];
#pragma unroll
    for (int k = 0; k < kLive; ++k)
      part[k] = 0.0f;
    int64_t c = 0;
    for (int64_t base = 0; base + kLive <= cols; base += kLive) {
#pragma unroll
      for (int k = 0; k < kLive; ++k) {
        float v = row[c];
        part[k] += v;
        c += 1 + (v != v); // a dependency on the load, never taken for a number
      }
    }
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kLive; ++k)
      sum += part[k];
    y[r] = sum;
  }
}
} // namespace

extern "C" int ks_forward(const ks_tensor* in, int32_t n_in, ks_tensor* out, int32_t n_out,
                          void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KS_F32 || out[0].dtype != KS_F32 || in[0].ndim != 2)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (ks_numel(&out[0]) != rows || cols % kLive != 0)
    return 2;
  int device = 0, sms = 132;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  register_heavy<<<sms, kThreads, 0, (cudaStream_t)stream>>>((const float*)in[0].data,
                                                             (float*)out[0].data, rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
