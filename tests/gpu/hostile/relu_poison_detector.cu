// Hostile candidate (poison detector), quickstart relu (19_relu.toml). Each thread reads its
// own element of y first and computes it only if it holds NaN, i.e. only when the harness
// poisoned the output before the call, which is what verification does. Timed calls find y
// already holding numbers (the previous call's result), so they do nothing but read y.
// (Per element, not "y[0] is NaN": one block's write of y[0] would otherwise make later
// blocks of the same launch skip.)
// The bench worker must report wrong_result during timing: it does not poison outputs while
// timing, so the checked calls find the other input set's result.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void relu_if_poisoned_kernel(const float* __restrict__ x, float* __restrict__ y,
                                        int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const float old = y[i];
    if (old == old)
      continue; // the cheat: not NaN, so "nobody is checking"
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
  }
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  relu_if_poisoned_kernel<<<132 * 8, 256, 0, (cudaStream_t)cuda_stream>>>(
      (const float*)inputs[0].data, (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
