// Planted fault for the quickstart relu task: a correct ReLU that compiles and links, but the
// entry point is misnamed ks_forward2, so the shared object exports no ks_forward.
// The bench worker must report load_error (dlsym finds no ks_forward).
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

} // namespace

extern "C" KS_EXPORT int ks_forward2(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                                     int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  const int block = 256;
  relu_kernel<<<(unsigned)((n + block - 1) / block), block, 0, (cudaStream_t)cuda_stream>>>(
      (const float*)inputs[0].data, (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
