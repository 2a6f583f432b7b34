// Hostile candidate (null write), quickstart relu (19_relu.toml). Computes y correctly, and
// thread 0 also stores through a null pointer (passed as an argument, so the compiler cannot
// drop the store as undefined behaviour), as a kernel with an unset workspace pointer would.
// The bench worker must report illegal_address during verification (a sticky error: the
// worker exits after answering, and the next job starts a fresh one).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void relu_null_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                 float* workspace) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const float v = x[i];
  y[i] = v < 0.0f ? 0.0f : v;
  if (i == 0)
    workspace[0] = v; // the planted store: workspace is null
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  float* workspace = nullptr; // "allocated later", never
  const int block = 256;
  relu_null_kernel<<<(unsigned)((n + block - 1) / block), block, 0, (cudaStream_t)cuda_stream>>>(
      (const float*)inputs[0].data, (float*)outputs[0].data, n, workspace);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
