// Planted: DRAM-bound with waste. A copy whose warps touch 32 consecutive 32-byte sectors
// and use 4 bytes of each: thread t copies element (t % (n/8)) * 8 + t / (n/8), so the
// sectors' other seven floats are copied by threads n/8 apart, long after L2 (50 MB) evicted
// the 256 MiB of sectors read in between. Every sector is read from DRAM about eight times
// (and written back as often). Expected diagnosis: memory (DRAM-bound), DRAM bytes several
// times cost.bytes, global load efficiency near 12.5% (task copy_256m.toml). A correct copy.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {
__global__ void copy_sector_stride(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t eighth = n / 8;
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n)
    return;
  int64_t j = (t % eighth) * 8 + t / eighth;
  y[j] = x[j];
}
} // namespace

extern "C" int ks_forward(const ks_tensor* in, int32_t n_in, ks_tensor* out, int32_t n_out,
                          void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KS_F32 || out[0].dtype != KS_F32)
    return 1;
  int64_t n = ks_numel(&in[0]);
  if (ks_numel(&out[0]) != n || n % 8 != 0)
    return 2;
  copy_sector_stride<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, (float*)out[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
