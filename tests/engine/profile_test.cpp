#include "engine/diagnosis.hpp"
#include "engine/profile.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace ks::engine;

namespace {

/// An H100's SM (cudaDeviceProp of an H100 80GB HBM3).
device_limits h100() {
  device_limits d;
  d.sms = 132;
  return d;
}

kernel_profile launch(int32_t threads, int32_t registers, int64_t shared_bytes = 0) {
  kernel_profile k;
  k.name = "k";
  k.block = {threads, 1, 1};
  k.grid = {1024, 1, 1};
  k.registers = registers;
  k.dynamic_shared_bytes = shared_bytes;
  return k;
}

} // namespace

TEST_CASE("255 registers per thread fit one 256-thread block per SM: 12.5% occupancy, limited "
          "by registers",
          "[engine][profile]") {
  occupancy_limit o = theoretical_occupancy(launch(256, 255), h100());
  CHECK(o.by_registers == 1);
  CHECK(o.blocks_per_sm == 1);
  CHECK(o.theoretical_pct == Approx(12.5));
  CHECK(o.limiter == "registers");
}

TEST_CASE("48 KB of shared memory per 128-thread block limits occupancy to 4 blocks",
          "[engine][profile]") {
  occupancy_limit o = theoretical_occupancy(launch(128, 32, int64_t{48} * 1024), h100());
  CHECK(o.by_shared_memory == 4); // 233472 / (49152 + 1024 reserved)
  CHECK(o.theoretical_pct == Approx(25.0));
  CHECK(o.limiter == "shared_memory");
}

TEST_CASE("a light kernel of full blocks reaches full occupancy and names no limiter",
          "[engine][profile]") {
  occupancy_limit o = theoretical_occupancy(launch(1024, 32), h100());
  CHECK(o.blocks_per_sm == 2);
  CHECK(o.theoretical_pct == Approx(100.0));
  CHECK(o.limiter == "none");
}

TEST_CASE("one-warp blocks hit the per-SM block limit at half occupancy", "[engine][profile]") {
  occupancy_limit o = theoretical_occupancy(launch(32, 16), h100());
  CHECK(o.blocks_per_sm == 32);
  CHECK(o.theoretical_pct == Approx(50.0));
  CHECK(o.limiter == "blocks");
}

TEST_CASE("registers are allocated per warp in units of 256, warps in groups of 4",
          "[engine][profile]") {
  // 40 registers: 1280 per warp -> 51 warps fit -> 48 after the granularity -> 6 blocks of 8.
  occupancy_limit o = theoretical_occupancy(launch(256, 40), h100());
  CHECK(o.by_registers == 6);
  CHECK(o.theoretical_pct == Approx(75.0));
  CHECK(o.limiter == "registers");
}

TEST_CASE("an unknown launch gives no occupancy", "[engine][profile]") {
  occupancy_limit o = theoretical_occupancy(kernel_profile{}, h100());
  CHECK(o.limiter.empty());
  CHECK(o.blocks_per_sm == 0);
}

TEST_CASE("combining launches adds counts and averages rates by duration", "[engine][profile]") {
  std::map<std::string, double> a{{"dram__bytes_read.sum", 100},
                                  {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 90}};
  std::map<std::string, double> b{{"dram__bytes_read.sum", 50},
                                  {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 30},
                                  {"lts__t_sector_hit_rate.pct", 40}};
  auto combined = combine_metrics({a, b}, {3.0, 1.0});
  CHECK(combined["dram__bytes_read.sum"] == Approx(150));
  CHECK(combined["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == Approx(75));
  // Only b has it: its value, not a quarter of it.
  CHECK(combined["lts__t_sector_hit_rate.pct"] == Approx(40));
}

TEST_CASE("rates of launches without durations are plainly averaged", "[engine][profile]") {
  std::map<std::string, double> a{{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 80}};
  std::map<std::string, double> b{{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40}};
  auto combined = combine_metrics({a, b}, {0.0, 0.0});
  CHECK(combined["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == Approx(60));
}

TEST_CASE("the metric list asks for the core metrics first and every stall reason",
          "[engine][profile]") {
  std::vector<std::string> all = profile_metrics();
  std::vector<std::string> core = core_metrics();
  REQUIRE(all.size() > core.size());
  CHECK(std::equal(core.begin(), core.end(), all.begin()));
  CHECK(std::count(all.begin(), all.end(),
                   "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct") == 1);
  CHECK(is_additive("dram__bytes_read.sum"));
  CHECK_FALSE(is_additive("lts__t_sector_hit_rate.pct"));
}

TEST_CASE("a diagnosis from counters gives skills its hardware facts; one from timing leaves "
          "them unknown",
          "[engine][profile]") {
  diagnosis timed;
  timed.diagnosed = true;
  timed.bound = bound_kind::memory;
  timed.fraction_of_roofline = 0.4;
  fact_map facts = timed.facts();
  CHECK(facts.count("diagnosis.dram_throughput") == 0);
  CHECK(facts.count("diagnosis.counters") == 0);

  diagnosis profiled = timed;
  profiled.hardware.counters = true;
  profiled.hardware.launches = 3;
  profiled.hardware.dram_throughput_pct = 74;
  profiled.hardware.bytes_waste = 4.5;
  profiled.hardware.occupancy_limiter = "registers";
  profiled.hardware.top_stall = "long_scoreboard";
  facts = profiled.facts();
  CHECK(std::get<int64_t>(facts.at("diagnosis.counters")) == 1);
  CHECK(std::get<int64_t>(facts.at("diagnosis.launches")) == 3);
  CHECK(std::get<double>(facts.at("diagnosis.dram_throughput")) == Approx(74));
  CHECK(std::get<double>(facts.at("diagnosis.bytes_waste")) == Approx(4.5));
  CHECK(std::get<std::string>(facts.at("diagnosis.occupancy_limiter")) == "registers");
  CHECK(std::get<std::string>(facts.at("diagnosis.stall")) == "long_scoreboard");
  CHECK(facts.count("diagnosis.l2_hit_rate") == 0);
  for (const auto& [name, value] : facts)
    CHECK(std::find(diagnosis_fact_names().begin(), diagnosis_fact_names().end(), name) !=
          diagnosis_fact_names().end());
}

TEST_CASE("a skill precondition on a counter fact holds, fails or passes as unknown",
          "[engine][profile]") {
  auto expr = expression::parse("diagnosis.bytes_waste < 1.5 && diagnosis.occupancy_limiter != "
                                "'registers'");
  REQUIRE(expr);
  diagnosis d;
  d.diagnosed = true;
  CHECK(*expr->holds(d.facts()) == truth::unknown);
  d.hardware.launches = 1;
  d.hardware.bytes_waste = 1.1;
  d.hardware.occupancy_limiter = "block_size";
  CHECK(*expr->holds(d.facts()) == truth::yes);
  d.hardware.occupancy_limiter = "registers";
  CHECK(*expr->holds(d.facts()) == truth::no);
}
