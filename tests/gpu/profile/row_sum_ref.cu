// The reference of row_sum.toml: one thread per row, a double sum in order.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {
__global__ void row_sum_ref(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                            int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  double sum = 0;
  for (int64_t c = 0; c < cols; ++c)
    sum += x[r * cols + c];
  y[r] = (float)sum;
}
} // namespace

extern "C" int ks_forward(const ks_tensor* in, int32_t n_in, ks_tensor* out, int32_t n_out,
                          void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KS_F32 || out[0].dtype != KS_F32 || in[0].ndim != 2)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (ks_numel(&out[0]) != rows)
    return 2;
  row_sum_ref<<<(unsigned)((rows + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, (float*)out[0].data, rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
