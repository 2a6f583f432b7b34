// Hostile candidate (half precision), quickstart relu (19_relu.toml, float32). Reads x as
// float, but computes and rounds through __half (as a candidate that stores an fp16
// intermediate to halve its traffic would): every output keeps 11 significant bits, a
// relative error up to 2^-11, a norm-relative error near 2e-4, far above the task's 1e-6.
// The bench worker must report wrong_result during verification (by the element tolerance
// and the norm-relative check).
#include "kernelskill/abi.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void relu_half_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const __half h = __float2half_rn(x[i]); // the planted downgrade
  y[i] = __half2float(__hlt(h, __float2half_rn(0.0f)) ? __float2half_rn(0.0f) : h);
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
  relu_half_kernel<<<(unsigned)((n + block - 1) / block), block, 0, (cudaStream_t)cuda_stream>>>(
      (const float*)inputs[0].data, (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
