#include "engine/diagnosis.hpp"

namespace ks::engine {

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
