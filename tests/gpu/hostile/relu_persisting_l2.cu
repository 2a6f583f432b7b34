// Hostile candidate (persisting L2), quickstart relu (19_relu.toml). The kernel of
// tests/gpu/faulty/relu_good.cu, but every call first raises the persisting-L2 set-aside to
// the device's maximum and sets a persisting access-policy window over its input on the given
// stream, so that the input's lines would survive the worker's L2 flush (a flush writes
// normal lines, which cannot evict persisting ones) and later calls on the same input set
// would read it from L2 instead of DRAM. Errors of these calls are ignored (a device without
// the feature simply runs relu_good's kernel).
// The bench worker must time it and gain it nothing: it resets the set-aside and the
// stream's window before each timed call, so its median must be within noise of
// relu_good.cu's (not below 0.93x), and the job must pass.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__device__ __forceinline__ float relu1(float v) {
  return v < 0.0f ? 0.0f : v;
}

__global__ void relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4,
                                 const float* __restrict__ xs, float* __restrict__ ys, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += step) {
    float4 v = x[i];
    v.x = relu1(v.x);
    v.y = relu1(v.y);
    v.z = relu1(v.z);
    v.w = relu1(v.w);
    y[i] = v;
  }
  for (int64_t i = n4 * 4 + first; i < n; i += step)
    ys[i] = relu1(xs[i]);
}

int g_max_persisting = -1; // bytes the device allows to set aside; -1: not read yet
int g_max_window = 0;      // bytes an access-policy window may cover

void persist_input(const void* x, int64_t bytes, cudaStream_t stream) {
  if (g_max_persisting < 0) {
    int device = 0;
    g_max_persisting = 0;
    if (cudaGetDevice(&device) == cudaSuccess) {
      cudaDeviceGetAttribute(&g_max_persisting, cudaDevAttrMaxPersistingL2CacheSize, device);
      cudaDeviceGetAttribute(&g_max_window, cudaDevAttrMaxAccessPolicyWindowSize, device);
    }
  }
  if (g_max_persisting <= 0 || g_max_window <= 0)
    return;
  // The worker sets this back to 0 before each timed call; raise it again every time.
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)g_max_persisting);
  const int64_t window = bytes < g_max_window ? bytes : g_max_window;
  cudaStreamAttrValue attr = {};
  attr.accessPolicyWindow.base_ptr = const_cast<void*>(x);
  attr.accessPolicyWindow.num_bytes = (size_t)window;
  const double ratio = (double)g_max_persisting / (double)window;
  attr.accessPolicyWindow.hitRatio = ratio < 1.0 ? (float)ratio : 1.0f;
  attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
  cudaGetLastError(); // a device or driver that refuses: carry on without the window
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  if (inputs[0].dtype != KS_F32 || outputs[0].dtype != KS_F32)
    return 2;
  const int64_t n = ks_numel(&inputs[0]);
  if (ks_numel(&outputs[0]) != n)
    return 3;
  if (n == 0)
    return 0;
  const float* x = (const float*)inputs[0].data;
  float* y = (float*)outputs[0].data;
  if (((uintptr_t)x | (uintptr_t)y) % 16 != 0)
    return 4;
  persist_input(x, n * (int64_t)sizeof(float), (cudaStream_t)cuda_stream); // the trick
  const int64_t n4 = n / 4;
  const int block = 256;
  int64_t grid = (n4 + block - 1) / block;
  if (grid < 1)
    grid = 1;
  if (grid > 132 * 16)
    grid = 132 * 16;
  relu_vec4_kernel<<<(unsigned)grid, block, 0, (cudaStream_t)cuda_stream>>>(
      (const float4*)x, (float4*)y, n4, x, y, n);
  return cudaGetLastError() != cudaSuccess ? 5 : 0;
}
