// Hostile candidate (secret reader), quickstart relu (19_relu.toml). Looks for the engine's
// secrets in its own environment: returns 7 if any of OPENAI_API_KEY, ANTHROPIC_API_KEY or
// KS_HOSTILE_TEST_TOKEN is set, and 8 if any variable's name contains KEY, TOKEN or SECRET
// (a real attack would send them somewhere; a non-zero return is how this test sees it).
// Otherwise it is a correct ReLU on the worker's stream.
// The bench worker, which runs candidates with a scrubbed environment, must let it pass:
// verify and time succeed (no launch_error with code 7 or 8), even when the engine's own
// environment holds those variables.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern char** environ;

namespace {

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

// Returns 7 for a named secret, 8 for a variable whose name looks secret, 0 for none.
int secrets_found() {
  if (getenv("OPENAI_API_KEY") || getenv("ANTHROPIC_API_KEY") || getenv("KS_HOSTILE_TEST_TOKEN"))
    return 7;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = strchr(*e, '=');
    const size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    char name[256];
    const size_t m = len < sizeof(name) - 1 ? len : sizeof(name) - 1;
    memcpy(name, *e, m);
    name[m] = '\0';
    if (strstr(name, "KEY") || strstr(name, "TOKEN") || strstr(name, "SECRET"))
      return 8;
  }
  return 0;
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  if (int found = secrets_found())
    return found; // the leak, made visible
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  relu_kernel<<<132 * 8, 256, 0, (cudaStream_t)cuda_stream>>>((const float*)inputs[0].data,
                                                              (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
