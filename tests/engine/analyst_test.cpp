#include "engine/analyst.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

using namespace ks::engine;

namespace {

/// An H100-like device: 3.0 TB/s, 51.2 TFLOP/s (float32).
const device_peaks h100{3000, 51200};

/// The ReLU task of KernelBench level 1: 1.6 GFLOP, 12.9 GB.
const task_cost relu_cost{1.610612736e9, 1.2884901888e10};

/// The square matmul of KernelBench level 1: 137 GFLOP, 0.2 GB.
const task_cost matmul_cost{1.37438953472e11, 2.01326592e8};

/// Returns the median (ms) at which `bytes` move at `gbps`.
double ms_for_bytes(double bytes, double gbps) {
  return bytes / (gbps * 1e9) * 1e3;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

} // namespace

TEST_CASE("a kernel moving bytes near the bandwidth peak is memory-bound", "[engine][analyst]") {
  expected<bottleneck> verdict =
      diagnose_bottleneck(relu_cost, ms_for_bytes(relu_cost.bytes, 2100), h100);
  REQUIRE(verdict.has_value());
  CHECK(verdict->bound == bound_kind::memory);
  CHECK(verdict->achieved_gbps == Approx(2100));
  CHECK(verdict->achieved_gflops == Approx(262.5));
  CHECK(verdict->fraction_of_roofline == Approx(0.70));
  CHECK(verdict->text == "memory-bound: 2.1 TB/s of 3.0 measured (70%); compute at 0.51% of "
                         "51.2 TFLOP/s.");
}

TEST_CASE("a kernel doing flops near the compute peak is compute-bound", "[engine][analyst]") {
  double median_ms = matmul_cost.flops / (0.6 * 51200e9) * 1e3;
  expected<bottleneck> verdict = diagnose_bottleneck(matmul_cost, median_ms, h100);
  REQUIRE(verdict.has_value());
  CHECK(verdict->bound == bound_kind::compute);
  CHECK(verdict->fraction_of_roofline == Approx(0.60));
  CHECK(verdict->achieved_gflops == Approx(30720));
  CHECK(starts_with(verdict->text, "compute-bound: 30.7 TFLOP/s of 51.2 measured (60%); memory "
                                   "at 2% of 3.0 TB/s."));
}

TEST_CASE("a slow kernel far below both peaks keeps its side and says something else limits it",
          "[engine][analyst]") {
  // The plain reference matmul: about 100 ms, 2.7% of the compute peak.
  expected<bottleneck> verdict = diagnose_bottleneck(matmul_cost, 100.0, h100);
  REQUIRE(verdict.has_value());
  CHECK(verdict->bound == bound_kind::compute);
  CHECK(verdict->fraction_of_roofline == Approx(0.02684).epsilon(0.001));
  CHECK(starts_with(verdict->text, "compute-bound: 1.4 TFLOP/s of 51.2 measured (3%)"));
  CHECK(verdict->text.find("Far below the roofline") != std::string::npos);
}

TEST_CASE("a short kernel far below both peaks is latency-bound", "[engine][analyst]") {
  task_cost tiny{2.6e5, 2.1e6}; // a 256 x 1024 elementwise op
  expected<bottleneck> verdict = diagnose_bottleneck(tiny, 0.010, h100);
  REQUIRE(verdict.has_value());
  CHECK(verdict->bound == bound_kind::latency);
  CHECK(verdict->achieved_gbps == Approx(210));
  CHECK(verdict->text == "latency-bound: 10.0 us, at 7% of the memory roofline and 0.051% of "
                         "compute; launch overhead and too little parallel work dominate.");
}

TEST_CASE("a short kernel near a peak is not latency-bound", "[engine][analyst]") {
  task_cost small{0, 5.0e7};
  expected<bottleneck> verdict = diagnose_bottleneck(small, 0.019, h100);
  REQUIRE(verdict.has_value());
  CHECK(verdict->bound == bound_kind::memory);
  CHECK(verdict->fraction_of_roofline == Approx(5.0e7 / 0.019e-3 / 3000e9));
}

TEST_CASE("a long kernel far below both peaks is not latency-bound", "[engine][analyst]") {
  task_cost tiny{2.6e5, 2.1e6};
  expected<bottleneck> verdict = diagnose_bottleneck(tiny, 0.020, h100);
  REQUIRE(verdict.has_value());
  CHECK(verdict->bound == bound_kind::memory);
  CHECK(verdict->text.find("Far below the roofline") != std::string::npos);
}

TEST_CASE("register spills are mentioned only when there are some", "[engine][analyst]") {
  double median_ms = ms_for_bytes(relu_cost.bytes, 2100);
  expected<bottleneck> clean =
      diagnose_bottleneck(relu_cost, median_ms, h100, kernel_usage{32, 0, 0, 0});
  REQUIRE(clean.has_value());
  CHECK(clean->text.find("spill") == std::string::npos);

  expected<bottleneck> spilling =
      diagnose_bottleneck(relu_cost, median_ms, h100, kernel_usage{255, 4096, 64, 128});
  REQUIRE(spilling.has_value());
  CHECK(spilling->text == "memory-bound: 2.1 TB/s of 3.0 measured (70%); compute at 0.51% of "
                          "51.2 TFLOP/s. It spills to local memory (64 bytes stored, 128 loaded "
                          "per thread, 255 registers).");
}

TEST_CASE("an unknown peak leaves its side out", "[engine][analyst]") {
  expected<bottleneck> verdict =
      diagnose_bottleneck(relu_cost, ms_for_bytes(relu_cost.bytes, 800), device_peaks{900, 0});
  REQUIRE(verdict.has_value());
  CHECK(verdict->bound == bound_kind::memory);
  CHECK(verdict->text == "memory-bound: 800 GB/s of 900 measured (89%).");
}

TEST_CASE("the analyst refuses a median that is not positive and a device without peaks",
          "[engine][analyst]") {
  for (double median : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::infinity()}) {
    expected<bottleneck> verdict = diagnose_bottleneck(relu_cost, median, h100);
    REQUIRE_FALSE(verdict.has_value());
    CHECK(verdict.error().code() == errc::invalid_input);
  }
  expected<bottleneck> verdict = diagnose_bottleneck(relu_cost, 1.0, device_peaks{});
  REQUIRE_FALSE(verdict.has_value());
  CHECK(verdict.error().code() == errc::invalid_input);
}

TEST_CASE("bound kinds have stable names", "[engine][analyst]") {
  CHECK(std::string(to_string(bound_kind::memory)) == "memory");
  CHECK(std::string(to_string(bound_kind::compute)) == "compute");
  CHECK(std::string(to_string(bound_kind::latency)) == "latency");
}
