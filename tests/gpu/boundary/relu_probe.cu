// A correct ReLU candidate (tasks/quickstart/19_relu.toml) that first probes the bench
// worker's boundary from its host code, and fails with a return code (a launch_error whose
// message names the code) at the first thing it can reach that it should not:
//
//   90  $OPENAI_API_KEY is in its environment (set it in the engine's to check the scrub)
//   91  it could create a file in /etc (outside the sandbox as root, this is expected)
//   92  it could connect to 127.0.0.1:$KS_PROBE_PORT (start a listener there; unset: skipped)
//   93  it could create a file in /tmp (the engine's temporary folder; expected outside
//       the sandbox)
//   94  its working directory and $TMPDIR are not one writable folder (the boundary is broken)
//
// So: without the sandbox it fails with 91 as root (93 otherwise), never 90 or 94; with
// `--sandbox` it passes like the reference. Run on a GPU host:
//   OPENAI_API_KEY=sk-probe kernelskill eval tasks/quickstart/19_relu.toml \
//     tests/gpu/boundary/relu_probe.cu --sandbox
#include "kernelskill/abi.h"

#include <arpa/inet.h>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

// Checks whether a file can be created in `dir` (and removes it again).
bool can_create_in(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/ks-boundary-probe-%d", dir, (int)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    return false;
  close(fd);
  unlink(path);
  return true;
}

bool can_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, (const sockaddr*)&addr, sizeof addr) == 0;
  close(fd);
  return ok;
}

// Returns the first boundary breach found, or 0.
int probe() {
  if (getenv("OPENAI_API_KEY") != nullptr)
    return 90;
  if (can_create_in("/etc"))
    return 91;
  if (const char* port = getenv("KS_PROBE_PORT"); port != nullptr && atoi(port) > 0)
    if (can_connect(atoi(port)))
      return 92;
  if (can_create_in("/tmp"))
    return 93;
  const char* tmpdir = getenv("TMPDIR");
  char cwd[4096];
  if (tmpdir == nullptr || getcwd(cwd, sizeof cwd) == nullptr || strcmp(cwd, tmpdir) != 0 ||
      !can_create_in(cwd))
    return 94;
  return 0;
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  static const int breach = probe(); // once: the checks cost more than the kernel
  if (breach != 0)
    return breach;
  if (n_inputs != 1 || n_outputs != 1)
    return 1;
  const int64_t n = ks_numel(&inputs[0]);
  if (n == 0)
    return 0;
  int64_t grid = (n + 255) / 256;
  if (grid > 1048576)
    grid = 1048576;
  relu_kernel<<<(unsigned)grid, 256, 0, (cudaStream_t)cuda_stream>>>((const float*)inputs[0].data,
                                                                     (float*)outputs[0].data, n);
  return cudaGetLastError() != cudaSuccess ? 10 : 0;
}
