#include "engine/diagnosis.hpp"

namespace ks::engine {

namespace {

constexpr std::string_view fact_names[] = {"diagnosis.bound",
                                           "diagnosis.fraction_of_roofline",
                                           "diagnosis.achieved_gbps",
                                           "diagnosis.achieved_gflops",
                                           "diagnosis.registers",
                                           "diagnosis.spills",
                                           "diagnosis.counters",
                                           "diagnosis.launches",
                                           "diagnosis.dram_throughput",
                                           "diagnosis.l2_throughput",
                                           "diagnosis.l1_throughput",
                                           "diagnosis.sm_throughput",
                                           "diagnosis.l2_hit_rate",
                                           "diagnosis.l1_hit_rate",
                                           "diagnosis.occupancy",
                                           "diagnosis.theoretical_occupancy",
                                           "diagnosis.occupancy_limiter",
                                           "diagnosis.bytes_waste",
                                           "diagnosis.flops_waste",
                                           "diagnosis.stall",
                                           "diagnosis.stall_pct"};

void put_known(fact_map& out, const char* name, double value) {
  if (value >= 0)
    out[name] = value;
}

void put_known(fact_map& out, const char* name, const std::string& value) {
  if (!value.empty())
    out[name] = value;
}

} // namespace

std::span<const std::string_view> diagnosis_fact_names() {
  return fact_names;
}

fact_map diagnosis::facts() const {
  fact_map out;
  if (!diagnosed)
    return out;
  out["diagnosis.bound"] = std::string(to_string(bound));
  if (fraction_of_roofline > 0)
    out["diagnosis.fraction_of_roofline"] = fraction_of_roofline;
  if (achieved_gbps > 0)
    out["diagnosis.achieved_gbps"] = achieved_gbps;
  if (achieved_gflops > 0)
    out["diagnosis.achieved_gflops"] = achieved_gflops;
  if (registers > 0)
    out["diagnosis.registers"] = int64_t{registers};
  if (spill_bytes >= 0)
    out["diagnosis.spills"] = spill_bytes;
  // What a profile said; a diagnosis from timing alone leaves these unknown, so a skill that
  // requires one of them still applies to an unprofiled node (an unknown fact passes).
  const hardware_summary& h = hardware;
  if (h.launches > 0) {
    out["diagnosis.counters"] = int64_t{h.counters ? 1 : 0};
    out["diagnosis.launches"] = h.launches;
  }
  put_known(out, "diagnosis.dram_throughput", h.dram_throughput_pct);
  put_known(out, "diagnosis.l2_throughput", h.l2_throughput_pct);
  put_known(out, "diagnosis.l1_throughput", h.l1_throughput_pct);
  put_known(out, "diagnosis.sm_throughput", h.sm_throughput_pct);
  put_known(out, "diagnosis.l2_hit_rate", h.l2_hit_pct);
  put_known(out, "diagnosis.l1_hit_rate", h.l1_hit_pct);
  put_known(out, "diagnosis.occupancy", h.occupancy_pct);
  put_known(out, "diagnosis.theoretical_occupancy", h.theoretical_occupancy_pct);
  put_known(out, "diagnosis.occupancy_limiter", h.occupancy_limiter);
  put_known(out, "diagnosis.bytes_waste", h.bytes_waste);
  put_known(out, "diagnosis.flops_waste", h.flops_waste);
  put_known(out, "diagnosis.stall", h.top_stall);
  put_known(out, "diagnosis.stall_pct", h.top_stall_pct);
  return out;
}

diagnosis make_diagnosis(const bottleneck& verdict, const std::optional<kernel_usage>& usage) {
  diagnosis d;
  d.diagnosed = true;
  d.bound = verdict.bound;
  d.fraction_of_roofline = verdict.fraction_of_roofline;
  d.achieved_gbps = verdict.achieved_gbps;
  d.achieved_gflops = verdict.achieved_gflops;
  d.text = verdict.text;
  if (usage) {
    d.registers = usage->registers;
    d.spill_bytes = usage->spill_stores + usage->spill_loads;
  }
  // The timing-only analyst's one piece of evidence: where the kernel stands on the roofline.
  d.evidence.push_back({"fraction_of_roofline", verdict.fraction_of_roofline,
                        verdict.bound == bound_kind::latency ? "<" : ">=",
                        verdict.bound == bound_kind::latency ? latency_max_fraction : 0.0});
  return d;
}

} // namespace ks::engine
