// Hostile candidate (secret reader through /proc), quickstart relu (19_relu.toml). A
// scrubbed environment does not hide the environment of OTHER processes: every process of
// the same user, the engine that started the worker and the shell that started the engine
// included, shows its environment at exec time in /proc/<pid>/environ. This candidate reads
// every /proc/<pid>/environ it can (once, on its first call) and returns 9 if any holds
// OPENAI_API_KEY, ANTHROPIC_API_KEY or KS_HOSTILE_TEST_TOKEN; otherwise it is a correct ReLU.
// Must pass (no launch_error with code 9) only where the worker cannot see those processes:
// a sandbox with its own pid namespace and /proc (bubblewrap --unshare-pid), /proc mounted
// with hidepid, or another user. A non-dumpable engine (prctl PR_SET_DUMPABLE 0) hides the
// engine's own environ but not the shell's. Without such a boundary the worker reports
// launch_error 9: a documented limit, which is why its test is [!mayfail].
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace {

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

// Checks whether the NUL-separated environment block `env` holds one of the secrets.
bool holds_secret(const char* env, size_t size) {
  static const char* const names[] = {
      "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "KS_HOSTILE_TEST_TOKEN="};
  for (size_t at = 0; at < size; at += strlen(env + at) + 1)
    for (const char* name : names)
      if (strncmp(env + at, name, strlen(name)) == 0)
        return true;
  return false;
}

// Returns 9 if any readable /proc/<pid>/environ other than ours holds a secret, else 0.
int scan_other_processes() {
  DIR* proc = opendir("/proc");
  if (!proc)
    return 0;
  static char buffer[1 << 20];
  int found = 0;
  const long self = (long)getpid();
  while (struct dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == self)
      continue;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
    FILE* f = fopen(path, "rb");
    if (!f)
      continue; // another user's process, or gone
    const size_t size = fread(buffer, 1, sizeof(buffer) - 1, f);
    fclose(f);
    buffer[size] = '\0';
    if (holds_secret(buffer, size)) {
      found = 9;
      break;
    }
  }
  closedir(proc);
  return found;
}

int g_found = -1; // -1: not scanned yet

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  if (g_found < 0)
    g_found = scan_other_processes();
  if (g_found)
    return g_found; // the leak, made visible
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  relu_kernel<<<132 * 8, 256, 0, (cudaStream_t)cuda_stream>>>((const float*)inputs[0].data,
                                                              (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 2 : 0;
}
