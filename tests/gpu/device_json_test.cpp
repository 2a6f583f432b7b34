#include "gpu/device_json.hpp"
#include "json/decode.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <limits>

using namespace ks;
using namespace ks::gpu;
namespace json = boost::json;

TEST_CASE("device info: every writer's spelling reads back the same device") {
  device_info d;
  d.index = 1;
  d.device_count = 2;
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-1234";
  d.arch = "sm_90a";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sms = 132;
  d.memory_bytes = 85'000'000'000;
  d.l2_bytes = 52'428'800;
  d.sm_clock_khz = 1'980'000;
  json::object o = device_info_json(d);
  CHECK(o.at("cc").as_string() == "9.0");
  device_info back = device_info_from_json(o);
  CHECK(back.name == d.name);
  CHECK(back.cc_major == 9);
  CHECK(back.sm_clock_khz == 1'980'000);

  // The worker protocol's older spelling and the command line's read the same.
  o.erase("cc");
  o["cc_major"] = 9;
  o["cc_minor"] = 0;
  CHECK(device_info_from_json(o).cc_major == 9);
  o.erase("cc_major");
  o["compute_capability"] = "9.x";
  CHECK_THROWS_AS(device_info_from_json(o), decode::malformed);
}

TEST_CASE("calibration: one spelling for the worker, the store and the cache") {
  calibration c{3000.5, 60'000, 1 << 30, 0.7, 1.25};
  json::object o = calibration_json(c);
  CHECK(o.size() == 5);
  calibration back = calibration_from_json(o);
  CHECK(back.dram_gbps == c.dram_gbps);
  CHECK(back.fp32_gflops == c.fp32_gflops);
  CHECK(back.copy_bytes == c.copy_bytes);
  CHECK(back.fma_ms == c.fma_ms);
  REQUIRE(usable_calibration(o));
  CHECK(usable_calibration(o)->copy_ms == c.copy_ms);

  SECTION("a peak the roofline cannot use is no calibration") {
    c.fp32_gflops = 0;
    CHECK_FALSE(usable_calibration(calibration_json(c)));
  }
  SECTION("a non-finite measurement is written as null and read as none") {
    c.dram_gbps = std::numeric_limits<double>::quiet_NaN();
    json::object bad = calibration_json(c);
    CHECK(bad.at("dram_gbps").is_null());
    CHECK(json::serialize(bad).find("NaN") == std::string::npos);
    CHECK_THROWS_AS(calibration_from_json(bad), decode::malformed);
    CHECK_FALSE(usable_calibration(bad));
  }
  SECTION("a missing peak or another JSON value is none") {
    o.erase("fp32_gflops");
    CHECK_FALSE(usable_calibration(o));
    CHECK_FALSE(usable_calibration(json::value("3000")));
  }
}
