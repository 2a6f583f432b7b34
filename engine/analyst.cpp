// The analyst's bottleneck rules. A task states its useful work (flops) and the fewest bytes
// it must move; divided by a kernel's median time they give the throughput it achieved, and
// divided by the device's measured peaks, the fraction of each peak it reached. The larger of
// the two fractions names the side of the roofline the kernel sits on (memory- or
// compute-bound) and equals the roofline floor over the median: how close the kernel is to
// the limit. The one exception is a short kernel that reaches neither peak: under 20 us and
// under 10% of both, the launch and too little parallel work dominate, so it is
// latency-bound, and making it move bytes faster would not help.
//
// The rules are deliberately few and pure (numbers in, a verdict and one or two sentences
// out): the planner orders its ideas by the verdict, and an LLM backend reads the sentences.
// A kernel far below the roofline but not short is still called memory- or compute-bound by
// its larger fraction, with a note that something else holds it back; register spills, when
// ptxas reported any, are named because they move through local memory.

#include "engine/analyst.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace ks::engine {

namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

/// Returns `fraction` as a percentage: "70%", "0.4%", "0.012%".
std::string percent(double fraction) {
  double value = fraction * 100;
  return value >= 1 ? format("%.0f%%", value) : format("%.2g%%", value);
}

/// Returns a rate in the unit its peak (or, unknown, itself) calls for: "2.1 TB/s of 3.0
/// measured" for a peak of 3000 GB/s, "850 GB/s of 900 measured" below 1000.
std::string rate_against_peak(double achieved, double peak, const char* small_unit,
                              const char* big_unit) {
  double scale_reference = peak > 0 ? peak : achieved;
  bool big = scale_reference >= 1000;
  double divisor = big ? 1000 : 1;
  const char* pattern = big ? "%.1f" : (scale_reference >= 100 ? "%.0f" : "%.1f");
  std::string text = format(pattern, achieved / divisor) + " " + (big ? big_unit : small_unit);
  if (peak > 0)
    text += " of " + format(pattern, peak / divisor) + " measured";
  return text;
}

/// Returns a peak alone: "3.0 TB/s", "900 GB/s".
std::string peak_text(double peak, const char* small_unit, const char* big_unit) {
  if (peak >= 1000)
    return format("%.1f", peak / 1000) + " " + big_unit;
  return format(peak >= 100 ? "%.0f" : "%.1f", peak) + " " + small_unit;
}

std::string duration(double ms) {
  return ms < 1 ? format("%.1f us", ms * 1000) : format("%.2f ms", ms);
}

} // namespace

const char* to_string(bound_kind k) noexcept {
  switch (k) {
  case bound_kind::memory:
    return "memory";
  case bound_kind::compute:
    return "compute";
  case bound_kind::latency:
    return "latency";
  case bound_kind::cache:
    return "cache";
  case bound_kind::occupancy:
    return "occupancy";
  case bound_kind::launch:
    return "launch";
  case bound_kind::at_roofline:
    return "at_roofline";
  }
  return "unknown";
}

std::optional<bound_kind> parse_bound_kind(std::string_view name) noexcept {
  for (bound_kind k : all_bound_kinds)
    if (name == to_string(k))
      return k;
  return std::nullopt;
}

expected<bottleneck> diagnose_bottleneck(const task_cost& cost, double median_ms,
                                         const device_peaks& peaks,
                                         const std::optional<kernel_usage>& usage) {
  if (!std::isfinite(median_ms) || median_ms <= 0)
    return fail(errc::invalid_input,
                "the analyst needs a median time > 0 ms, got " + format("%g", median_ms));
  bool know_memory = peaks.gbps > 0;
  bool know_compute = peaks.gflops > 0;
  if (!know_memory && !know_compute)
    return fail(errc::invalid_input,
                "the analyst needs the device's measured peaks (GB/s, GFLOP/s): calibrate it");

  bottleneck result;
  double seconds = median_ms / 1000;
  result.achieved_gbps = cost.bytes / seconds / 1e9;
  result.achieved_gflops = cost.flops / seconds / 1e9;
  double memory_fraction = know_memory ? result.achieved_gbps / peaks.gbps : 0;
  double compute_fraction = know_compute ? result.achieved_gflops / peaks.gflops : 0;
  result.fraction_of_roofline = roofline_floor_ms(cost, peaks.gbps, peaks.gflops) / median_ms;

  double best_fraction = std::max(memory_fraction, compute_fraction);
  std::string memory_part = rate_against_peak(result.achieved_gbps, peaks.gbps, "GB/s", "TB/s");
  std::string compute_part =
      rate_against_peak(result.achieved_gflops, peaks.gflops, "GFLOP/s", "TFLOP/s");
  std::string text;
  if (best_fraction < latency_max_fraction && median_ms < latency_max_ms) {
    result.bound = bound_kind::latency;
    text = "latency-bound: " + duration(median_ms);
    if (know_memory)
      text += ", at " + percent(memory_fraction) + " of the memory roofline";
    if (know_compute)
      text +=
          std::string(know_memory ? " and " : ", at ") + percent(compute_fraction) + " of compute";
    text += "; launch overhead and too little parallel work dominate.";
  } else if (memory_fraction >= compute_fraction) {
    result.bound = bound_kind::memory;
    text = "memory-bound: " + memory_part + " (" + percent(memory_fraction) + ")";
    if (know_compute)
      text += "; compute at " + percent(compute_fraction) + " of " +
              peak_text(peaks.gflops, "GFLOP/s", "TFLOP/s");
    text += ".";
  } else {
    result.bound = bound_kind::compute;
    text = "compute-bound: " + compute_part + " (" + percent(compute_fraction) + ")";
    if (know_memory)
      text += "; memory at " + percent(memory_fraction) + " of " +
              peak_text(peaks.gbps, "GB/s", "TB/s");
    text += ".";
  }

  std::string second;
  if (result.bound != bound_kind::latency && best_fraction < latency_max_fraction)
    second = "Far below the roofline: something else holds it back (serial work per thread, "
             "uncoalesced access or low occupancy)";
  if (usage && usage->spill_stores + usage->spill_loads > 0) {
    std::string spills = "it spills to local memory (" + std::to_string(usage->spill_stores) +
                         " bytes stored, " + std::to_string(usage->spill_loads) +
                         " loaded per thread, " + std::to_string(usage->registers) + " registers)";
    if (second.empty())
      spills[0] = 'I';
    second += (second.empty() ? "" : "; ") + spills;
  }
  if (!second.empty())
    text += " " + second + ".";
  result.text = std::move(text);
  return result;
}

} // namespace ks::engine
