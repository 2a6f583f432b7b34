// Hostile candidate (host compute), quickstart relu (19_relu.toml). Launches no kernel at
// all: copies x to pinned host memory with a synchronous cudaMemcpy (the legacy default
// stream, which does not wait for the worker's non-blocking stream), applies ReLU on the CPU
// and copies the result into y the same way. The result is right and complete when
// ks_forward returns, but nothing ran on the worker's stream, so its events measure an
// empty interval: a "speedup" of 100x or more.
// The bench worker must report escaped_stream (CUPTI sees copies off its stream; without
// CUPTI, the host time per call of a back-to-back batch is far above the event median).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

float* g_host = nullptr; // pinned, so the copies are DMA transfers
int64_t g_host_numel = 0;

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  (void)cuda_stream; // the planted fault: nothing goes on the worker's stream
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  if (inputs[0].dtype != KS_F32 || outputs[0].dtype != KS_F32)
    return 2;
  const int64_t n = ks_numel(&inputs[0]);
  if (ks_numel(&outputs[0]) != n)
    return 3;
  if (n == 0)
    return 0;
  if (g_host_numel < n) {
    if (g_host)
      cudaFreeHost(g_host);
    g_host = nullptr;
    if (cudaMallocHost((void**)&g_host, (size_t)n * sizeof(float)) != cudaSuccess)
      return 4;
    g_host_numel = n;
  }
  const size_t bytes = (size_t)n * sizeof(float);
  if (cudaMemcpy(g_host, inputs[0].data, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
    return 5;
  for (int64_t i = 0; i < n; ++i)
    if (g_host[i] < 0.0f)
      g_host[i] = 0.0f;
  if (cudaMemcpy(outputs[0].data, g_host, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
    return 6;
  return 0;
}
