// Planted fault for the quickstart relu task: does not compile (a misspelled keyword and a
// missing semicolon in the kernel).
// The compiler must report compile_error, with nvcc's diagnostics kept.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] < 0.0f ? 0.0f : x[i]
}

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    retrun 1;
  const int64_t n = ks_numel(&inputs[0]);
  relu_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)cuda_stream>>>(
      (const float*)inputs[0].data, (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
