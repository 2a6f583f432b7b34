#include "gpu/visible_devices.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

#include "tests/test_context.hpp"

using namespace ks;
namespace fs = std::filesystem;

TEST_CASE("the device count hint counts CUDA_VISIBLE_DEVICES' entries when it is set",
          "[devices]") {
  test::test_context ctx;
  fs::path driver = ctx.dir() / "gpus";
  fs::create_directories(driver / "0000:18:00.0");
  fs::create_directories(driver / "0000:2a:00.0");

  CHECK(gpu::visible_device_count_hint("0", driver) == 1);
  CHECK(gpu::visible_device_count_hint("1,0,3", driver) == 3);
  CHECK(gpu::visible_device_count_hint("GPU-8d2c1f00-aaaa,MIG-11112222", driver) == 2);
  CHECK(gpu::visible_device_count_hint("0,,1,", driver) == 2);
  // Set but empty hides every device: no hint, the first worker says why.
  CHECK_FALSE(gpu::visible_device_count_hint("", driver).has_value());
  CHECK_FALSE(gpu::visible_device_count_hint(" ", driver).has_value());
}

TEST_CASE("without CUDA_VISIBLE_DEVICES the hint counts the driver's GPU entries", "[devices]") {
  test::test_context ctx;
  fs::path driver = ctx.dir() / "gpus";
  CHECK_FALSE(gpu::visible_device_count_hint(nullptr, driver).has_value()); // no driver folder
  fs::create_directories(driver);
  CHECK_FALSE(gpu::visible_device_count_hint(nullptr, driver).has_value()); // no GPU in it
  fs::create_directories(driver / "0000:18:00.0");
  fs::create_directories(driver / "0000:2a:00.0");
  fs::create_directories(driver / "0000:3b:00.0");
  CHECK(gpu::visible_device_count_hint(nullptr, driver) == 3);
}
