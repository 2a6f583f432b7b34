// Hostile candidate (work from a host thread after return), quickstart relu (19_relu.toml).
// ks_forward starts a detached host thread and returns 0 at once, having launched nothing;
// the thread waits 20 ms, then runs the ReLU on a non-blocking stream of its own and
// synchronizes it. When the worker synchronizes the device after the call, there is nothing
// to wait for yet, so y still holds the NaN poison when it is compared.
// The bench worker must report wrong_result during verification, with NaN outputs. (The
// stray thread writes y about 20 ms later: a test waits before its next job.)
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

#include <chrono>
#include <thread>

namespace {

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

void late_relu(const float* x, float* y, int64_t n) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
    return;
  const int block = 256;
  relu_kernel<<<(unsigned)((n + block - 1) / block), block, 0, stream>>>(x, y, n);
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  (void)cuda_stream;
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  std::thread(late_relu, (const float*)inputs[0].data, (float*)outputs[0].data, n).detach();
  return 0; // the planted fault: "done", before anything ran
}
