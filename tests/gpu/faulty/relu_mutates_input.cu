// Planted fault for the quickstart relu task: y is computed correctly, but the kernel also
// applies ReLU in place to x (the negative inputs become 0), as if x were a scratch buffer.
// The bench worker must report wrong_result (an input was changed).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void relu_inplace_too_kernel(float* x, float* y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const float r = x[i] < 0.0f ? 0.0f : x[i];
  y[i] = r;
  x[i] = r; // the planted bug: writes to the input
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  const int block = 256;
  relu_inplace_too_kernel<<<(unsigned)((n + block - 1) / block), block, 0,
                            (cudaStream_t)cuda_stream>>>((float*)inputs[0].data,
                                                         (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
