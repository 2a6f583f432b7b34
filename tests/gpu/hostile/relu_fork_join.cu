// Hostile candidate (fork-join escape), quickstart relu (19_relu.toml). The ReLU (with a
// short spin, 10-15 us in all, as in relu_own_stream.cu) runs on the candidate's own
// non-blocking stream, which does NOT wait for the worker's stream first; the worker's stream
// is then joined back with cudaStreamWaitEvent, so nothing is left running when ks_forward's
// work is "done". The kernel starts as soon as it is launched, while the worker's L2 flush is
// still running, and the worker's start event, recorded after the flush, comes too late to
// see it: the events measure only the tail of the join, a fake speedup.
// The bench worker must report escaped_stream (CUPTI sees the kernel on another stream;
// without CUPTI, the host time per call of a back-to-back batch is far above the event
// median). A worker whose check of a timed call races the next call's early start may
// report wrong_result during timing instead, which is also a rejection.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr long long kSpinCycles = 12000;

__global__ void relu_then_spin_kernel(const float4* __restrict__ x, float4* __restrict__ y,
                                      int64_t n4, const float* __restrict__ xs,
                                      float* __restrict__ ys, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += step) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.0f);
    v.y = fmaxf(v.y, 0.0f);
    v.z = fmaxf(v.z, 0.0f);
    v.w = fmaxf(v.w, 0.0f);
    y[i] = v;
  }
  for (int64_t i = n4 * 4 + first; i < n; i += step)
    ys[i] = fmaxf(xs[i], 0.0f);
  const long long start = clock64();
  while (clock64() - start < kSpinCycles) {
  }
}

cudaStream_t g_own_stream = nullptr;
cudaEvent_t g_done = nullptr;
int g_sms = 0;

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  if (g_own_stream == nullptr) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaStreamCreateWithFlags(&g_own_stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&g_done, cudaEventDisableTiming) != cudaSuccess)
      return 2;
  }
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  const float* x = (const float*)inputs[0].data;
  float* y = (float*)outputs[0].data;
  // The fork without a dependency: no cudaStreamWaitEvent(g_own_stream, <worker's work>).
  relu_then_spin_kernel<<<(unsigned)(g_sms * 4), 256, 0, g_own_stream>>>(
      (const float4*)x, (float4*)y, n / 4, x, y, n);
  // The join: the worker's stream waits for the kernel, so nothing outlives the call.
  if (cudaEventRecord(g_done, g_own_stream) != cudaSuccess ||
      cudaStreamWaitEvent((cudaStream_t)cuda_stream, g_done, 0) != cudaSuccess)
    return 3;
  return cudaGetLastError() != cudaSuccess ? 4 : 0;
}
