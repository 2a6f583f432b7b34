# Shared by the eval and profile CLI tests: writes into the current folder a copy task
# (task.toml), its reference (ref.cu), a good candidate (good.cu, the reference itself) and a
# manifest with an unknown dtype on line 4 (bad.toml); find_nvcc prints the nvcc to use, if any.

cat >ref.cu <<'CU'
#include "kernelskill/abi.h"
#include <cuda_runtime.h>

__global__ void copy_kernel(const float* x, float* y, int64_t n) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

extern "C" int ks_forward(const ks_tensor* in, int32_t n_in, ks_tensor* out, int32_t n_out,
                          void* stream) {
  if (n_in != 1 || n_out != 1) return 1;
  int64_t n = ks_numel(&in[0]);
  copy_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
    (const float*)in[0].data, (float*)out[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 10;
}
CU
cp ref.cu good.cu

cat >task.toml <<'TOML'
name = "copy"
family = "elementwise"
reference = "ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [256, 64] } ]
outputs = [ { name = "y", dtype = "f32", shape = [256, 64] } ]
params = { op = "x" }
cost = { flops = 0, bytes = 131072 }
TOML

cat >bad.toml <<'TOML'
name = "copy"
family = "elementwise"
reference = "ref.cu"
inputs = [ { name = "x", dtype = "float42", shape = [256, 64] } ]
outputs = [ { name = "y", dtype = "f32", shape = [256, 64] } ]
params = { op = "x" }
cost = { flops = 0, bytes = 131072 }
TOML

find_nvcc() {
  local nvcc=${KS_NVCC:-}
  [ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
  [ -n "$nvcc" ] || nvcc=$(command -v nvcc || true)
  echo "$nvcc"
}
