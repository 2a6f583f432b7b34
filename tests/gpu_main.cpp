// The [gpu] tests' main: probes for a GPU through the real bench worker first. Where there
// is none, it says why and exits 125, which ctest reports as skipped (ccache's PROBE habit).

#include "gpu/worker_client.hpp"

#include <cstdio>

#include "test_context.hpp"

// This file writes main() itself: the define must come before Catch's header.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  ks::gpu::worker_options options;
  options.executable = ks::test::bin_dir() / "ks-bench-worker";
  ks::gpu::worker_client probe(options);
  auto info = probe.info();
  probe.shutdown();
  if (!info) {
    std::printf("skipped: the [gpu] tests need a CUDA GPU: %s\n", info.error().message.c_str());
    return 125;
  }
  std::printf("[gpu] tests on device %d: %s (%s, %d SMs)\n", info->index, info->name.c_str(),
              info->arch.c_str(), info->sms);
  return Catch::Session().run(argc, argv);
}
