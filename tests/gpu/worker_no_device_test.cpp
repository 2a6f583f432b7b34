#include "gpu/worker_client.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>

using namespace ks;
using namespace std::chrono_literals;

TEST_CASE("the real worker reports no_device on a machine without a GPU", "[worker]") {
  gpu::worker_options options;
  options.executable = test::bin_dir() / "ks-bench-worker";
  options.start_timeout = 20000ms;
  options.info_timeout = 20000ms;
  gpu::worker_client client(options);

  auto start = std::chrono::steady_clock::now();
  auto info = client.info();
  double elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  client.shutdown();

  if (info.has_value()) {
    // This machine has a GPU: the contract under test does not apply.
    CHECK(info->device_count >= 1);
    KS_SKIP("a CUDA device is present (" + info->name + "): nothing to check here");
  }
  INFO("failure " << gpu::to_string(info.error().kind) << ": " << info.error().message);
  CHECK(info.error().kind == gpu::failure_kind::no_device);
  std::string message = info.error().message;
  std::transform(message.begin(), message.end(), message.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  CHECK(message.find("cuda") != std::string::npos);
  CHECK(
      (message.find("device") != std::string::npos || message.find("driver") != std::string::npos));
  // It answered; it neither hung until the watchdog nor crashed.
  CHECK(elapsed < 15000);
}
