// The analyst from counters, on recorded counter sets: tests/engine/profiles/*.json, one or
// more per bottleneck class. Each fixture holds a profile (the profile job's result, as
// `kernelskill profile --json` writes it), the task's cost, the device's peaks, the timed
// median and the class it must be diagnosed as. The ones there now are synthetic (plausible
// H100 values, labeled so in the file); recordings of tests/gpu/profile/ replace them.

#include "engine/profile_analyst.hpp"
#include "gpu/worker_protocol.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "test_context.hpp"

using namespace ks;
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

struct fixture {
  std::string name;
  std::string expected;
  engine::task_cost cost;
  engine::device_peaks peaks;
  double median_ms = 0;
  engine::profile profile;
  bool synthetic = false;
};

fs::path fixture_dir() {
  return test::source_dir() / "tests" / "engine" / "profiles";
}

fixture load_file(const fs::path& path) {
  fixture f;
  f.name = path.stem().string();
  json::value v = json::parse(test::read_file(path));
  const json::object& o = v.as_object();
  f.expected = std::string(o.at("expected").as_string());
  f.synthetic = o.contains("synthetic");
  const json::object& cost = o.at("cost").as_object();
  f.cost.flops = cost.at("flops").to_number<double>();
  f.cost.bytes = cost.at("bytes").to_number<double>();
  const json::object& peaks = o.at("peaks").as_object();
  f.peaks.gbps = peaks.at("gbps").to_number<double>();
  f.peaks.gflops = peaks.at("gflops").to_number<double>();
  f.median_ms = o.contains("median_ms") ? o.at("median_ms").to_number<double>() : 0;
  auto profile = gpu::decode_profile(json::serialize(o.at("profile")));
  REQUIRE(profile);
  f.profile = std::move(*profile);
  return f;
}

fixture load(const std::string& name) {
  return load_file(fixture_dir() / (name + ".json"));
}

engine::diagnosis diagnose(const fixture& f) {
  return engine::diagnose_profile(f.profile, f.cost, f.peaks, f.median_ms);
}

const engine::metric_evidence* evidence(const engine::diagnosis& d, const std::string& metric) {
  auto it = std::find_if(d.evidence.begin(), d.evidence.end(),
                         [&](const engine::metric_evidence& e) { return e.metric == metric; });
  return it == d.evidence.end() ? nullptr : &*it;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("every recorded counter set is diagnosed as the class it was recorded for",
          "[engine][analyst][profile]") {
  std::set<std::string> classes;
  int64_t files = 0;
  for (const auto& entry : fs::directory_iterator(fixture_dir())) {
    if (entry.path().extension() != ".json")
      continue;
    fixture f = load_file(entry.path());
    engine::diagnosis d = diagnose(f);
    INFO(f.name << ": " << d.text);
    REQUIRE(d.diagnosed);
    CHECK(engine::to_string(d.bound) == f.expected);
    CHECK_FALSE(d.evidence.empty());
    classes.insert(f.expected);
    ++files;
  }
  // One fixture or more for every class the counters can tell.
  for (const char* c :
       {"memory", "cache", "compute", "latency", "occupancy", "launch", "at_roofline"})
    CHECK(classes.count(c) == 1);
  CHECK(files >= 7);
}

TEST_CASE("an uncoalesced copy is DRAM-bound and its waste says 4.5 times the bytes",
          "[engine][analyst][profile]") {
  engine::diagnosis d = diagnose(load("dram_uncoalesced"));
  CHECK(d.bound == engine::bound_kind::memory);
  const auto* dram = evidence(d, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  REQUIRE(dram != nullptr);
  CHECK(dram->relation == ">=");
  CHECK(dram->threshold == 60);
  const auto* waste = evidence(d, "dram_bytes_over_minimum");
  REQUIRE(waste != nullptr);
  CHECK(waste->value == Approx(4.51).epsilon(0.01));
  CHECK(waste->relation == ">=");
  CHECK(d.hardware.bytes_waste == Approx(4.51).epsilon(0.01));
  CHECK(contains(d.text, "4.5x the bytes"));
  CHECK(contains(d.text, "12% of each sector"));
  CHECK(d.fraction_of_roofline == Approx(0.167).epsilon(0.02));
}

TEST_CASE("re-reads served by L2 are cache-bound while DRAM idles", "[engine][analyst][profile]") {
  engine::diagnosis d = diagnose(load("cache_strided_reread"));
  CHECK(d.bound == engine::bound_kind::cache);
  const auto* l2 = evidence(d, "lts__throughput.avg.pct_of_peak_sustained_elapsed");
  REQUIRE(l2 != nullptr);
  CHECK(l2->value == Approx(79.5));
  const auto* dram = evidence(d, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  REQUIRE(dram != nullptr);
  CHECK(dram->relation == "<");
  CHECK(d.hardware.bytes_waste == Approx(1.0).epsilon(0.02));
  CHECK(contains(d.text, "L2 96%"));
}

TEST_CASE("a register-heavy kernel is occupancy-bound and names registers as the limiter",
          "[engine][analyst][profile]") {
  engine::diagnosis d = diagnose(load("occupancy_registers"));
  CHECK(d.bound == engine::bound_kind::occupancy);
  CHECK(d.hardware.occupancy_limiter == "registers");
  CHECK(d.hardware.theoretical_occupancy_pct == Approx(12.5));
  CHECK(d.hardware.top_stall == "long_scoreboard");
  CHECK(d.registers == 255);
  const auto* achieved = evidence(d, "sm__warps_active.avg.pct_of_peak_sustained_active");
  REQUIRE(achieved != nullptr);
  CHECK(achieved->relation == "<");
  CHECK(evidence(d, "theoretical_occupancy_pct") != nullptr);
  CHECK(contains(d.text, "limited by registers"));
  CHECK(std::get<std::string>(d.facts().at("diagnosis.occupancy_limiter")) == "registers");
}

TEST_CASE("thousands of tiny launches are launch-bound", "[engine][analyst][profile]") {
  engine::diagnosis d = diagnose(load("launch_tiny_kernels"));
  CHECK(d.bound == engine::bound_kind::launch);
  const auto* launches = evidence(d, "kernel_launches");
  REQUIRE(launches != nullptr);
  CHECK(launches->value == 4096);
  const auto* mean = evidence(d, "mean_kernel_us");
  REQUIRE(mean != nullptr);
  CHECK(mean->value == Approx(1.9).epsilon(0.01));
  CHECK(contains(d.text, "the GPU is busy for 45% of the call's span"));
}

TEST_CASE("an FMA loop is compute-bound, and twice the task's flops is named as waste",
          "[engine][analyst][profile]") {
  engine::diagnosis d = diagnose(load("compute_fma"));
  CHECK(d.bound == engine::bound_kind::compute);
  CHECK(evidence(d, "sm__throughput.avg.pct_of_peak_sustained_elapsed") != nullptr);
  const auto* flops = evidence(d, "flops_over_minimum");
  REQUIRE(flops != nullptr);
  CHECK(flops->value == Approx(2.0).epsilon(0.001));
  CHECK(contains(d.text, "FMA pipe 92%"));
  CHECK(contains(d.text, "2x the flops"));
}

TEST_CASE("a plain vectorized copy is at the roofline and moves the bytes it must",
          "[engine][analyst][profile]") {
  fixture f = load("roofline_copy");
  engine::diagnosis d = diagnose(f);
  CHECK(d.bound == engine::bound_kind::at_roofline);
  CHECK(d.fraction_of_roofline >= 0.9);
  // The check on a GPU: DRAM bytes within 2% of what a copy must move.
  CHECK(d.hardware.dram_bytes == Approx(f.cost.bytes).epsilon(0.02));
}

TEST_CASE("the counters decide over the timing where the timing alone would say DRAM",
          "[engine][analyst][profile]") {
  // Without its median the roofline copy would still be at the roofline by its counters.
  fixture f = load("roofline_copy");
  f.median_ms = 0;
  f.peaks = {};
  engine::diagnosis d = diagnose(f);
  CHECK(d.bound == engine::bound_kind::at_roofline);
  CHECK(evidence(d, "dram_bytes_over_minimum") != nullptr);
}

TEST_CASE("warps waiting at barriers with nothing busy are latency-bound",
          "[engine][analyst][profile]") {
  engine::diagnosis d = diagnose(load("latency_barriers"));
  CHECK(d.bound == engine::bound_kind::latency);
  CHECK(d.hardware.top_stall == "barrier");
  const auto* stall = evidence(d, "smsp__warp_issue_stalled_barrier_per_warp_active.pct");
  REQUIRE(stall != nullptr);
  CHECK(stall->value == Approx(46));
  CHECK(contains(d.text, "a barrier (__syncthreads)"));
}

TEST_CASE("without counters the timing rules decide and the activity records still count",
          "[engine][analyst][profile]") {
  fixture f = load("memory_without_counters");
  engine::diagnosis d = diagnose(f);
  CHECK(d.bound == engine::bound_kind::memory);
  CHECK_FALSE(d.hardware.counters);
  CHECK(d.hardware.launches == 1);
  CHECK(d.hardware.dram_throughput_pct < 0);
  CHECK(d.facts().count("diagnosis.dram_throughput") == 0);
  CHECK(std::get<int64_t>(d.facts().at("diagnosis.counters")) == 0);

  engine::diagnosis launch = diagnose(load("launch_without_counters"));
  CHECK(launch.bound == engine::bound_kind::launch);
  CHECK_FALSE(launch.hardware.counters);
}

TEST_CASE("a profile of nothing, without peaks, is not diagnosed", "[engine][analyst][profile]") {
  engine::profile empty;
  engine::diagnosis d = engine::diagnose_profile(empty, {1e6, 1e6}, {}, 0);
  CHECK_FALSE(d.diagnosed);
}

TEST_CASE("the fixtures that are not recordings say so", "[engine][analyst][profile]") {
  // A synthetic fixture is labeled in its file: nobody takes it for a measurement.
  for (const auto& entry : fs::directory_iterator(fixture_dir())) {
    if (entry.path().extension() != ".json")
      continue;
    std::string text = test::read_file(entry.path());
    fixture f = load_file(entry.path());
    if (f.synthetic)
      CHECK(contains(text, "Synthetic"));
  }
}
