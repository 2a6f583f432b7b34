// The analyst from hardware counters. The timing rules (analyst.cpp) can say how far a kernel
// is from the roofline and on which side; the counters say why. The rules run in this order,
// and the first that holds names the class:
//
//   1. launch-bound: the call launches many kernels (>= 16) that are short on average
//      (<= 10 us): launch overhead and the gaps between kernels dominate, whatever each
//      kernel does. Needs only the activity records, so it holds without counters too.
//   2. at the roofline: the timed median reaches 90% of the roofline floor, or DRAM (SM)
//      throughput reaches 80% of its peak while the kernel moves (computes) at most 1.15
//      times the task's minimum bytes (flops). Nothing is left to gain in this kernel.
//   3. the busiest unit, when one reaches 60% of its peak: DRAM (memory-bound: moving bytes,
//      the waste says whether they are needed), the L1/L2 caches (cache-bound: the data is
//      re-read through the caches; they win over a busy DRAM only by 25 points, since DRAM
//      traffic passes through L2 too) or the SM (compute-bound); the larger of the memory
//      side and the SM wins.
//   4. occupancy-bound: no unit is busy, fewer than 30% of the SM's warps are active, and the
//      launch itself allows at most 50% (registers, shared memory or the block size; or the
//      grid has fewer blocks than there are SMs): too few warps to hide latency.
//   5. latency-bound: no unit is busy although enough warps could be resident: warps wait
//      (the main stall reason is the evidence: memory dependencies, barriers, ...).
//
// The waste is reported whatever the class: DRAM bytes read and written against the task's
// minimum (cost.bytes: inputs once, outputs once) and executed fp32 flops against cost.flops;
// 4x the bytes on a copy says uncoalesced access or re-reads that miss the caches. Every
// verdict carries its evidence as (metric, value, relation, threshold), the metric named as
// CUPTI names it, so a user can check it with Nsight Compute. A metric the chip lacks is
// simply absent: a rule that needs it does not hold, and the next one is tried.

#include "engine/profile_analyst.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ks::engine {

namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

std::string pct(double value) {
  return format("%.0f%%", value);
}

std::string times(double ratio) {
  return format(ratio >= 10 ? "%.0fx" : "%.2gx", ratio);
}

std::string name_of(std::string_view m) {
  return std::string(m);
}

/// Returns what warps stalled for `reason` wait on, in a few words.
const char* stall_meaning(const std::string& reason) {
  if (reason == "long_scoreboard")
    return "a global or local memory access";
  if (reason == "short_scoreboard")
    return "shared memory or a special function";
  if (reason == "barrier")
    return "a barrier (__syncthreads)";
  if (reason == "membar")
    return "a memory fence";
  if (reason == "mio_throttle")
    return "a full shared-memory and special-function queue";
  if (reason == "lg_throttle")
    return "a full global-memory queue (many small accesses)";
  if (reason == "math_pipe_throttle")
    return "a busy math pipe";
  if (reason == "wait")
    return "a fixed-latency dependency";
  if (reason == "not_selected")
    return "nothing: another warp issued (parallelism to spare)";
  if (reason == "no_instruction")
    return "instruction fetch";
  if (reason == "drain")
    return "stores draining at exit";
  if (reason == "tex_throttle")
    return "a full texture queue";
  if (reason == "imc_miss")
    return "the constant cache";
  if (reason == "branch_resolving")
    return "a branch target";
  return "something else";
}

/// Fills what the profile says into `h`: activity facts always, counters when read.
void summarize(const profile& p, const task_cost& cost, hardware_summary& h) {
  h.counters = p.counters;
  h.launches = p.launches;
  if (p.launches > 0 && p.kernel_ms > 0)
    h.mean_kernel_us = p.kernel_ms * 1000 / static_cast<double>(p.launches);
  if (!p.kernels.empty()) {
    const kernel_profile& hot = p.kernels.front();
    h.kernel = hot.name;
    if (p.kernel_ms > 0)
      h.kernel_share = hot.duration_ms / p.kernel_ms;
    occupancy_limit o = theoretical_occupancy(hot, p.device);
    if (!o.limiter.empty()) {
      h.theoretical_occupancy_pct = o.theoretical_pct;
      h.occupancy_limiter = o.limiter;
      int64_t blocks = int64_t{hot.grid[0]} * hot.grid[1] * hot.grid[2];
      // A grid smaller than the device leaves SMs idle whatever fits on each.
      if (p.device.sms > 0 && blocks > 0 && blocks < p.device.sms) {
        h.occupancy_limiter = "grid";
        h.theoretical_occupancy_pct =
            std::min(h.theoretical_occupancy_pct,
                     o.theoretical_pct * static_cast<double>(blocks) / p.device.sms);
      }
    }
  }
  if (!p.counters)
    return;
  using namespace metric;
  if (p.has(dram_read_bytes) && p.has(dram_write_bytes)) {
    h.dram_bytes = p.value(dram_read_bytes) + p.value(dram_write_bytes);
    if (cost.bytes > 0)
      h.bytes_waste = h.dram_bytes / cost.bytes;
  }
  if (p.has(ffma)) {
    h.executed_flops =
        2 * p.value(ffma) + std::max(0.0, p.value(fadd, 0)) + std::max(0.0, p.value(fmul, 0));
    if (cost.flops > 0)
      h.flops_waste = h.executed_flops / cost.flops;
  }
  h.dram_throughput_pct = p.value(dram_throughput);
  h.l2_throughput_pct = p.value(l2_throughput);
  h.l1_throughput_pct = p.value(l1_throughput);
  h.sm_throughput_pct = p.value(sm_throughput);
  h.l2_hit_pct = p.value(l2_hit_rate);
  h.l1_hit_pct = p.value(l1_hit_rate);
  h.occupancy_pct = p.value(achieved_occupancy);
  for (std::string_view reason : stall_reasons()) {
    // "Not selected" and "selected" are warps that could issue: not a stall to fix.
    if (reason == "not_selected")
      continue;
    double share = p.value(stall_metric(reason));
    if (share > h.top_stall_pct) {
      h.top_stall_pct = share;
      h.top_stall = std::string(reason);
    }
  }
  if (p.has(local_load_bytes) || p.has(local_store_bytes))
    h.local_bytes =
        std::max(0.0, p.value(local_load_bytes, 0)) + std::max(0.0, p.value(local_store_bytes, 0));
}

/// A verdict of one rule: its class, evidence and sentence.
struct verdict {
  bound_kind bound = bound_kind::latency;
  std::vector<metric_evidence> evidence;
  std::string text;
};

/// Returns the waste clause: ", moving 4.6x the bytes the task needs" (or "" when unknown).
std::string bytes_clause(const hardware_summary& h) {
  if (h.bytes_waste < 0)
    return "";
  return ", moving " + times(h.bytes_waste) + " the bytes the task needs";
}

std::string flops_clause(const hardware_summary& h) {
  if (h.flops_waste < 0)
    return "";
  return "; it executes " + times(h.flops_waste) + " the flops the task needs";
}

std::optional<verdict> launch_rule(const profile& p, const hardware_summary& h,
                                   const profile_thresholds& th) {
  if (p.launches < th.launch_min_launches || h.mean_kernel_us < 0 ||
      h.mean_kernel_us > th.launch_max_mean_us)
    return std::nullopt;
  verdict v;
  v.bound = bound_kind::launch;
  v.evidence.push_back({"kernel_launches", static_cast<double>(p.launches),
                        ">=", static_cast<double>(th.launch_min_launches)});
  v.evidence.push_back({"mean_kernel_us", h.mean_kernel_us, "<=", th.launch_max_mean_us});
  v.text = "launch-bound: " + std::to_string(p.launches) + " kernel launches per call, " +
           format("%.1f", h.mean_kernel_us) + " us each on average";
  if (p.span_ms > 0 && p.kernel_ms > 0)
    v.text += "; the GPU is busy for " + pct(100 * std::min(1.0, p.kernel_ms / p.span_ms)) +
              " of the call's span";
  v.text += ". Fuse the kernels, or give each more work.";
  return v;
}

std::optional<verdict> roofline_rule(const diagnosis& timing, const hardware_summary& h,
                                     const profile_thresholds& th) {
  verdict v;
  v.bound = bound_kind::at_roofline;
  if (timing.diagnosed && timing.fraction_of_roofline >= th.at_roofline_fraction) {
    v.evidence.push_back(
        {"fraction_of_roofline", timing.fraction_of_roofline, ">=", th.at_roofline_fraction});
    v.text =
        "at the roofline: " + pct(100 * timing.fraction_of_roofline) + " of the roofline floor";
    if (h.dram_throughput_pct >= 0)
      v.text += ", DRAM at " + pct(h.dram_throughput_pct) + " of its peak" + bytes_clause(h);
    v.text += ". Nothing is left to gain in this kernel.";
    return v;
  }
  if (h.dram_throughput_pct >= th.at_roofline_pct && h.bytes_waste >= 0 &&
      h.bytes_waste <= th.at_roofline_max_waste) {
    v.evidence.push_back(
        {name_of(metric::dram_throughput), h.dram_throughput_pct, ">=", th.at_roofline_pct});
    v.evidence.push_back(
        {"dram_bytes_over_minimum", h.bytes_waste, "<=", th.at_roofline_max_waste});
    v.text = "at the DRAM roofline: DRAM at " + pct(h.dram_throughput_pct) + " of its peak" +
             bytes_clause(h) + ". Nothing is left to gain in this kernel.";
    return v;
  }
  if (h.sm_throughput_pct >= th.at_roofline_pct && h.flops_waste >= 0 &&
      h.flops_waste <= th.at_roofline_max_waste) {
    v.evidence.push_back(
        {name_of(metric::sm_throughput), h.sm_throughput_pct, ">=", th.at_roofline_pct});
    v.evidence.push_back({"flops_over_minimum", h.flops_waste, "<=", th.at_roofline_max_waste});
    v.text = "at the compute roofline: SM at " + pct(h.sm_throughput_pct) + " of its peak" +
             flops_clause(h) + ". Nothing is left to gain in this kernel.";
    return v;
  }
  return std::nullopt;
}

std::optional<verdict> busy_unit_rule(const profile& p, const hardware_summary& h,
                                      const profile_thresholds& th) {
  double dram = h.dram_throughput_pct;
  double cache = std::max(h.l2_throughput_pct, h.l1_throughput_pct);
  double sm = h.sm_throughput_pct;
  bool dram_busy = dram >= th.busy_pct;
  bool cache_busy = cache >= th.busy_pct && (!dram_busy || cache >= dram + th.cache_over_dram_pct);
  // SM throughput is the busiest of the SM's units, the load/store pipe among them: a kernel
  // that re-reads through L1 and L2 shows a busy SM with idle math pipes (a strided re-read on
  // an H100: SM 89%, FMA pipe 18%, L2 71%). Compute-bound needs the math or the issue slots.
  double math = std::max(
      {p.value(metric::fma_pipe), p.value(metric::tensor_pipe), p.value(metric::tensor_gmma_pipe)});
  double issue = p.value(metric::issue_active);
  bool math_known = math >= 0 || issue >= 0;
  bool sm_busy =
      sm >= th.busy_pct && (!math_known || math >= th.math_busy_pct || issue >= th.issue_busy_pct);
  if (!dram_busy && !cache_busy && !sm_busy)
    return std::nullopt;
  double memory_side = cache_busy ? cache : dram_busy ? dram : -1;
  verdict v;
  if (sm_busy && sm >= memory_side) {
    v.bound = bound_kind::compute;
    v.evidence.push_back({name_of(metric::sm_throughput), sm, ">=", th.busy_pct});
    v.text = "compute-bound: SM at " + pct(sm) + " of its peak";
    if (double fma = p.value(metric::fma_pipe); fma >= 0)
      v.text += " (FMA pipe " + pct(fma) + ")";
    double tensor = std::max(p.value(metric::tensor_pipe), p.value(metric::tensor_gmma_pipe));
    if (tensor >= 0)
      v.text += ", tensor pipes at " + pct(tensor);
    if (h.flops_waste >= th.waste_note) {
      v.evidence.push_back({"flops_over_minimum", h.flops_waste, ">=", th.waste_note});
      v.text += flops_clause(h) + ": drop the redundant arithmetic";
    }
    v.text += ".";
    return v;
  }
  if (cache_busy) {
    bool l2 = h.l2_throughput_pct >= h.l1_throughput_pct;
    v.bound = bound_kind::cache;
    v.evidence.push_back(
        {name_of(l2 ? metric::l2_throughput : metric::l1_throughput), cache, ">=", th.busy_pct});
    if (dram >= 0)
      v.evidence.push_back(
          {name_of(metric::dram_throughput), dram, dram_busy ? ">=" : "<", th.busy_pct});
    v.text = std::string("cache-bound: ") + (l2 ? "L2" : "L1") + " at " + pct(cache) +
             " of its peak while DRAM is at " + (dram >= 0 ? pct(dram) : "an unknown share");
    if (h.l2_hit_pct >= 0 || h.l1_hit_pct >= 0) {
      v.text += " (hit rates:";
      if (h.l1_hit_pct >= 0)
        v.text += " L1 " + pct(h.l1_hit_pct);
      if (h.l2_hit_pct >= 0)
        v.text += std::string(h.l1_hit_pct >= 0 ? "," : "") + " L2 " + pct(h.l2_hit_pct);
      v.text += ")";
    }
    v.text += ": the data is read again and again through the caches; keep it in registers or "
              "shared memory, or coalesce the accesses.";
    return v;
  }
  v.bound = bound_kind::memory;
  v.evidence.push_back({name_of(metric::dram_throughput), dram, ">=", th.busy_pct});
  v.text = "DRAM-bound: DRAM at " + pct(dram) + " of its peak" + bytes_clause(h);
  if (h.bytes_waste >= th.waste_note) {
    v.evidence.push_back({"dram_bytes_over_minimum", h.bytes_waste, ">=", th.waste_note});
    double efficiency = p.value(metric::load_efficiency);
    if (efficiency >= 0)
      v.text += " (global loads use " + pct(efficiency) + " of each sector they fetch)";
    v.text += ": uncoalesced access or re-reads that miss the caches; move each byte once";
  } else {
    v.text += ": fewer bytes (fusion, smaller types) or a higher share of the peak (wider, "
              "coalesced accesses, more in flight)";
  }
  v.text += ".";
  return v;
}

std::string stall_clause(const hardware_summary& h) {
  if (h.top_stall.empty() || h.top_stall_pct < 0)
    return "";
  return "; " + pct(h.top_stall_pct) + " of active warps wait on " + stall_meaning(h.top_stall) +
         " (" + h.top_stall + ")";
}

void add_stall_evidence(verdict& v, const hardware_summary& h, const profile_thresholds& th) {
  if (!h.top_stall.empty() && h.top_stall_pct >= th.stall_note_pct)
    v.evidence.push_back({stall_metric(h.top_stall), h.top_stall_pct, ">=", th.stall_note_pct});
}

std::string busiest_clause(const hardware_summary& h) {
  std::string text = "no unit is busy (";
  bool first = true;
  auto part = [&](const char* unit, double value) {
    if (value < 0)
      return;
    text += std::string(first ? "" : ", ") + unit + " " + pct(value);
    first = false;
  };
  part("DRAM", h.dram_throughput_pct);
  part("L2", h.l2_throughput_pct);
  part("L1", h.l1_throughput_pct);
  part("SM", h.sm_throughput_pct);
  return first ? "no unit is busy" : text + ")";
}

double busiest_unit(const hardware_summary& h) {
  return std::max(
      {h.dram_throughput_pct, h.l2_throughput_pct, h.l1_throughput_pct, h.sm_throughput_pct});
}

std::optional<verdict> occupancy_rule(const hardware_summary& h, const profile_thresholds& th) {
  if (h.occupancy_pct < 0 || h.occupancy_pct >= th.low_occupancy_pct ||
      h.theoretical_occupancy_pct < 0 || h.theoretical_occupancy_pct > th.low_theoretical_pct)
    return std::nullopt;
  verdict v;
  v.bound = bound_kind::occupancy;
  v.evidence.push_back(
      {name_of(metric::achieved_occupancy), h.occupancy_pct, "<", th.low_occupancy_pct});
  v.evidence.push_back(
      {"theoretical_occupancy_pct", h.theoretical_occupancy_pct, "<=", th.low_theoretical_pct});
  double busiest = busiest_unit(h);
  if (busiest >= 0)
    v.evidence.push_back({"busiest_unit_pct", busiest, "<", th.busy_pct});
  add_stall_evidence(v, h, th);
  v.text = "occupancy-bound: " + pct(h.occupancy_pct) +
           " of the SM's warps are active, and the "
           "launch allows at most " +
           pct(h.theoretical_occupancy_pct) + " (limited by " +
           (h.occupancy_limiter == "block_size"      ? std::string("the block size")
            : h.occupancy_limiter == "shared_memory" ? std::string("shared memory per block")
            : h.occupancy_limiter == "grid"          ? std::string("a grid smaller than the GPU")
                                                     : h.occupancy_limiter) +
           "); " + busiest_clause(h) + stall_clause(h) +
           ": too few warps to hide the latency. Use fewer registers or less shared memory "
           "per block, or more, smaller blocks.";
  return v;
}

verdict latency_rule(const hardware_summary& h, const profile_thresholds& th) {
  verdict v;
  v.bound = bound_kind::latency;
  double busiest = busiest_unit(h);
  if (busiest >= 0)
    v.evidence.push_back({"busiest_unit_pct", busiest, "<", th.busy_pct});
  add_stall_evidence(v, h, th);
  v.text = "latency-bound: " + busiest_clause(h) + stall_clause(h) +
           ". Put more independent work in flight (more loads before their first use, more "
           "warps), or shorten the dependency chains.";
  return v;
}

} // namespace

diagnosis diagnose_profile(const profile& p, const task_cost& cost, const device_peaks& peaks,
                           double median_ms, const std::optional<kernel_usage>& usage,
                           const profile_thresholds& th) {
  // The timing rules first: the fraction of the roofline and the side, where the peaks are
  // known. The profile's own kernel time (L2 flushed before the call, as in timing) stands in
  // for a median the caller does not have.
  double ms = median_ms > 0 ? median_ms : p.kernel_ms;
  diagnosis d;
  if (ms > 0)
    if (auto b = diagnose_bottleneck(cost, ms, peaks, usage); b)
      d = make_diagnosis(*b, usage);
  diagnosis timing = d;
  summarize(p, cost, d.hardware);
  const hardware_summary& h = d.hardware;
  if (!p.kernels.empty()) {
    if (d.registers == 0)
      d.registers = p.kernels.front().registers;
  }

  std::optional<verdict> v = launch_rule(p, h, th);
  if (!v && p.counters) {
    v = roofline_rule(timing, h, th);
    // Too few warps to hide latency explain a unit that is busy but not saturated (a kernel
    // of 255 registers at 12% occupancy on an H100: L1 at 63%, nothing else above 42%).
    if (!v && busiest_unit(h) < th.saturated_pct)
      v = occupancy_rule(h, th);
    if (!v)
      v = busy_unit_rule(p, h, th);
    if (!v)
      v = occupancy_rule(h, th);
    if (!v)
      v = latency_rule(h, th);
  }
  if (!v)
    return d; // the timing rules' diagnosis (or none), with what the activity records said

  std::string roofline = timing.diagnosed ? " Timing: " + timing.text : "";
  d.diagnosed = true;
  d.bound = v->bound;
  d.evidence = std::move(v->evidence);
  // The waste is evidence whatever the class (a planner that sees 4x the bytes looks for the
  // re-reads), once: a rule may have named it already.
  auto has = [&](const char* m) {
    return std::any_of(d.evidence.begin(), d.evidence.end(),
                       [&](const metric_evidence& e) { return e.metric == m; });
  };
  if (h.bytes_waste >= 0 && !has("dram_bytes_over_minimum"))
    d.evidence.push_back({"dram_bytes_over_minimum", h.bytes_waste,
                          h.bytes_waste >= th.waste_note ? ">=" : "<", th.waste_note});
  if (h.flops_waste >= 0 && !has("flops_over_minimum"))
    d.evidence.push_back({"flops_over_minimum", h.flops_waste,
                          h.flops_waste >= th.waste_note ? ">=" : "<", th.waste_note});
  std::string text = std::move(v->text);
  if (p.kernels.size() > 1 && h.kernel_share >= 0)
    text += " The hottest of its " + std::to_string(p.kernels.size()) + " kernels is '" + h.kernel +
            "' (" + pct(100 * h.kernel_share) + " of the kernel time).";
  if (h.local_bytes > 0)
    text += " It moves " + format("%.3g", h.local_bytes) +
            " bytes through local memory per call (spills or a stack array).";
  d.text = text + roofline;
  return d;
}

} // namespace ks::engine
