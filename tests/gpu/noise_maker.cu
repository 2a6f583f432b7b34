// ks-gpu-noise: makes a GPU noisy on purpose, for the noise step of scripts/gpu-check.sh
// (scripts/gpu-noise-check.sh), as a shared or busy card is: another process that competes
// for the card part of the time.
//
// It alternates bursts and pauses: for --on seconds it keeps the device busy with heavy
// kernels back to back (a copy between two 512 MiB buffers, which takes the memory bandwidth,
// and an FMA loop over every SM, each a few milliseconds), then it idles --off seconds, until
// --seconds have passed or it gets SIGTERM or SIGINT. Without MPS the driver time-slices the
// device between its contexts and ours, so a kernel of another process waits for our slices
// (its timing goes up, or splits into two levels); with MPS the copies take its bandwidth.
// It prints one line as each burst starts and ends ("noise: on at 4.0 s"), so that a log shows
// when the card was noisy. At most a few batches are queued at a time, so a burst ends when
// it should.

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

volatile std::sig_atomic_t stop_requested = 0;

void on_signal(int) {
  stop_requested = 1;
}

__global__ void noise_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void noise_fma(float* out, int iterations) {
  float a = threadIdx.x * 1e-3f, b = a + 1, c = a + 2, d = a + 3;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, 0.9999f, 1e-7f);
    b = fmaf(b, 0.9999f, 1e-7f);
    c = fmaf(c, 0.9999f, 1e-7f);
    d = fmaf(d, 0.9999f, 1e-7f);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d;
}

double number_after(int& i, int argc, char** argv, const char* name) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "ks-gpu-noise: %s needs a number\n", name);
    std::exit(2);
  }
  char* end = nullptr;
  double value = std::strtod(argv[++i], &end);
  if (*end != '\0' || !(value >= 0)) {
    std::fprintf(stderr, "ks-gpu-noise: %s needs a number >= 0, got '%s'\n", name, argv[i]);
    std::exit(2);
  }
  return value;
}

bool ok(cudaError_t err, const char* what, int device) {
  if (err == cudaSuccess)
    return true;
  std::fprintf(stderr, "ks-gpu-noise: cannot use device %d: %s: %s\n", device, what,
               cudaGetErrorString(err));
  return false;
}

} // namespace

int main(int argc, char** argv) {
  int device = 0;
  double on_s = 4, off_s = 3, total_s = 120;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device")
      device = static_cast<int>(number_after(i, argc, argv, "--device"));
    else if (arg == "--on")
      on_s = number_after(i, argc, argv, "--on");
    else if (arg == "--off")
      off_s = number_after(i, argc, argv, "--off");
    else if (arg == "--seconds")
      total_s = number_after(i, argc, argv, "--seconds");
    else {
      std::fprintf(stderr, "usage: ks-gpu-noise [--device N] [--on SECONDS] [--off SECONDS] "
                           "[--seconds SECONDS]\n  bursts of heavy kernels on the device for --on "
                           "seconds, then --off seconds idle, until --seconds pass (defaults 4, 3, "
                           "120)\n");
      return 2;
    }
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  cudaDeviceProp prop{};
  if (!ok(cudaSetDevice(device), "cudaSetDevice", device) ||
      !ok(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", device))
    return 3;
  const long long bytes = 512LL << 20;
  void *src = nullptr, *dst = nullptr;
  float* sink = nullptr;
  const int blocks = prop.multiProcessorCount * 8;
  cudaStream_t stream = nullptr;
  if (!ok(cudaMalloc(&src, bytes), "cudaMalloc", device) ||
      !ok(cudaMalloc(&dst, bytes), "cudaMalloc", device) ||
      !ok(cudaMalloc(&sink, sizeof(float) * blocks * 256), "cudaMalloc", device) ||
      !ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate", device))
    return 3;
  cudaMemsetAsync(src, 0x3c, bytes, stream);

  using clock_type = std::chrono::steady_clock;
  const auto start = clock_type::now();
  auto seconds = [&] { return std::chrono::duration<double>(clock_type::now() - start).count(); };
  std::printf("noise: device %d (%s), %.1f s on, %.1f s off, for %.0f s\n", device, prop.name, on_s,
              off_s, total_s);
  std::fflush(stdout);
  while (!stop_requested && seconds() < total_s) {
    double burst_end = std::min(seconds() + on_s, total_s);
    std::printf("noise: on at %.1f s\n", seconds());
    std::fflush(stdout);
    while (!stop_requested && seconds() < burst_end) {
      for (int k = 0; k < 4; ++k) {
        noise_copy<<<blocks, 512, 0, stream>>>(static_cast<const float4*>(src),
                                               static_cast<float4*>(dst), bytes / 16);
        noise_fma<<<blocks, 256, 0, stream>>>(sink, 1 << 16);
      }
      if (!ok(cudaStreamSynchronize(stream), "a burst", device))
        return 4;
    }
    std::printf("noise: off at %.1f s\n", seconds());
    std::fflush(stdout);
    double pause_end = std::min(seconds() + off_s, total_s);
    while (!stop_requested && seconds() < pause_end)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  cudaStreamDestroy(stream);
  cudaFree(src);
  cudaFree(dst);
  cudaFree(sink);
  std::printf("noise: done at %.1f s\n", seconds());
  return 0;
}
