// Hostile candidate (output pointer swap), quickstart relu (19_relu.toml). Computes a correct
// ReLU into a buffer of its own and then points outputs[0].data at that buffer (the ABI
// passes the output descriptors as a writable array), as if the harness would read the
// result from wherever the descriptor points afterwards; the worker's own y is never
// written.
// The bench worker must report wrong_result during verification (its y still holds NaN): it
// reads outputs from its own buffers, never back from the descriptors.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

float* g_mine = nullptr;
int64_t g_mine_numel = 0;

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  if (g_mine_numel < n) {
    if (g_mine)
      cudaFree(g_mine);
    g_mine = nullptr;
    if (cudaMalloc(&g_mine, (size_t)n * sizeof(float)) != cudaSuccess)
      return 2;
    g_mine_numel = n;
  }
  const int block = 256;
  relu_kernel<<<(unsigned)((n + block - 1) / block), block, 0, (cudaStream_t)cuda_stream>>>(
      (const float*)inputs[0].data, g_mine, n);
  outputs[0].data = g_mine; // the planted swap
  return cudaGetLastError() != cudaSuccess ? 3 : 0;
}
