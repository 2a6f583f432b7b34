// Planted: launch-bound. A copy of 4096 rows of 256 floats done as 4096 launches of one block
// each: every kernel moves 2 KiB and lasts a couple of microseconds, so launch overhead and
// the gaps between kernels are the call's time. Expected diagnosis: launch (4096 launches per
// call, a few us each on average) (task copy_rows.toml). A correct copy.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {
__global__ void copy_one_row(const float* __restrict__ x, float* __restrict__ y, int64_t row,
                             int64_t cols) {
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    y[row * cols + c] = x[row * cols + c];
}
} // namespace

extern "C" int ks_forward(const ks_tensor* in, int32_t n_in, ks_tensor* out, int32_t n_out,
                          void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KS_F32 || out[0].dtype != KS_F32 || in[0].ndim != 2)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (ks_numel(&out[0]) != rows * cols)
    return 2;
  for (int64_t r = 0; r < rows; ++r)
    copy_one_row<<<1, 256, 0, (cudaStream_t)stream>>>((const float*)in[0].data, (float*)out[0].data,
                                                      r, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
