// Hostile candidate (abort), quickstart relu (19_relu.toml). Launches a correct ReLU and
// then calls abort(), as a candidate with a failing assert() in its host code would: the
// whole worker process dies with SIGABRT in the middle of a job.
// The bench worker's client must report crash during verification (end of file instead of a
// reply, "signal 6"), and the next job must start a fresh worker and succeed.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

namespace {

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t n = ks_numel(&inputs[0]);
  if (n > 0) {
    const int block = 256;
    relu_kernel<<<(unsigned)((n + block - 1) / block), block, 0, (cudaStream_t)cuda_stream>>>(
        (const float*)inputs[0].data, (float*)outputs[0].data, n);
  }
  abort(); // the planted fault
}
