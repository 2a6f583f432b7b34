#include "gpu/profile_report.hpp"

#include "json/encode.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <cstdio>

namespace json = boost::json;

namespace ks::gpu {

namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

// Returns `value` as a short number: 0.98, 91.6, 2.1e+09.
std::string number(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e9)
    return format("%.0f", value);
  return format("%.3g", value);
}

std::string cell(double value, const char* pattern) {
  return value < 0 ? "-" : format(pattern, value);
}

std::string pad(std::string text, size_t width, bool right = false) {
  if (text.size() >= width)
    return text;
  std::string fill(width - text.size(), ' ');
  return right ? fill + text : text + fill;
}

std::string shorten(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

std::string triple(const std::array<int32_t, 3>& v) {
  return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
}

double metric_of(const engine::kernel_profile& k, std::string_view name) {
  auto it = k.metrics.find(std::string(name));
  return it == k.metrics.end() ? -1 : it->second;
}

void put_known(json::object& o, const char* key, double value) {
  if (value >= 0 && std::isfinite(value))
    o[key] = value;
}

} // namespace

std::string encode_diagnosis(const engine::diagnosis& d) {
  json::array evidence;
  for (const engine::metric_evidence& e : d.evidence)
    evidence.push_back(json::object{
        {"metric", e.metric},
        {"value", std::isfinite(e.value) ? json::value(e.value) : json::value(nullptr)},
        {"relation", e.relation},
        {"threshold", e.threshold}});
  const engine::hardware_summary& h = d.hardware;
  json::object hardware{{"counters", h.counters}};
  if (!h.kernel.empty())
    hardware["kernel"] = h.kernel;
  put_known(hardware, "kernel_share", h.kernel_share);
  if (h.launches > 0)
    hardware["launches"] = h.launches;
  put_known(hardware, "mean_kernel_us", h.mean_kernel_us);
  put_known(hardware, "dram_bytes", h.dram_bytes);
  put_known(hardware, "bytes_waste", h.bytes_waste);
  put_known(hardware, "executed_flops", h.executed_flops);
  put_known(hardware, "flops_waste", h.flops_waste);
  put_known(hardware, "dram_throughput_pct", h.dram_throughput_pct);
  put_known(hardware, "l2_throughput_pct", h.l2_throughput_pct);
  put_known(hardware, "l1_throughput_pct", h.l1_throughput_pct);
  put_known(hardware, "sm_throughput_pct", h.sm_throughput_pct);
  put_known(hardware, "l2_hit_pct", h.l2_hit_pct);
  put_known(hardware, "l1_hit_pct", h.l1_hit_pct);
  put_known(hardware, "occupancy_pct", h.occupancy_pct);
  put_known(hardware, "theoretical_occupancy_pct", h.theoretical_occupancy_pct);
  if (!h.occupancy_limiter.empty())
    hardware["occupancy_limiter"] = h.occupancy_limiter;
  if (!h.top_stall.empty()) {
    hardware["top_stall"] = h.top_stall;
    put_known(hardware, "top_stall_pct", h.top_stall_pct);
  }
  put_known(hardware, "local_bytes", h.local_bytes);
  json::object o{
      {"diagnosed", d.diagnosed},
      {"bound", d.diagnosed ? json::value(engine::to_string(d.bound)) : json::value(nullptr)},
      {"fraction_of_roofline", d.fraction_of_roofline},
      {"achieved_gbps", d.achieved_gbps},
      {"achieved_gflops", d.achieved_gflops},
      {"registers", d.registers},
      {"spill_bytes", d.spill_bytes},
      {"evidence", std::move(evidence)},
      {"text", d.text},
      {"hardware", std::move(hardware)}};
  return encode::serialize(o);
}

std::string kernel_table(const engine::profile& p) {
  using namespace engine::metric;
  std::string out;
  out += pad("kernel", 44) + pad("launches", 9, true) + pad("ms", 10, true) +
         pad("share", 7, true) + "  " + pad("grid", 13) + pad("block", 11) + pad("regs", 5, true) +
         pad("smem B", 8, true) + pad("DRAM%", 7, true) + pad("L2%", 6, true) +
         pad("SM%", 6, true) + pad("occ%", 6, true) + "\n";
  for (const engine::kernel_profile& k : p.kernels) {
    double share = p.kernel_ms > 0 ? 100 * k.duration_ms / p.kernel_ms : -1;
    out += pad(shorten(k.name, 43), 44) + pad(std::to_string(k.launches), 9, true) +
           pad(format("%.3f", k.duration_ms), 10, true) + pad(cell(share, "%.0f%%"), 7, true) +
           "  " + pad(triple(k.grid), 13) + pad(triple(k.block), 11) +
           pad(std::to_string(k.registers), 5, true) +
           pad(std::to_string(k.static_shared_bytes + k.dynamic_shared_bytes), 8, true) +
           pad(cell(metric_of(k, dram_throughput), "%.1f"), 7, true) +
           pad(cell(metric_of(k, l2_throughput), "%.1f"), 6, true) +
           pad(cell(metric_of(k, sm_throughput), "%.1f"), 6, true) +
           pad(cell(metric_of(k, achieved_occupancy), "%.1f"), 6, true) + "\n";
  }
  out += std::to_string(p.launches) + " kernel launches, " + format("%.3f", p.kernel_ms) +
         " ms of kernels in a span of " + format("%.3f", p.span_ms) + " ms";
  if (p.copies > 0)
    out += ", " + std::to_string(p.copies) + " copies and memsets";
  out += "\n";
  if (p.counters) {
    out += "counters: " + std::to_string(p.passes) + " passes, " +
           (p.range == engine::range_whole_call ? "one range around the whole call"
                                                : "one range per kernel launch") +
           ", " + p.replay + " replay";
    if (p.has(dram_read_bytes) && p.has(dram_write_bytes))
      out += "; DRAM " + number(p.value(dram_read_bytes)) + " B read, " +
             number(p.value(dram_write_bytes)) + " B written";
    out += "\n";
  } else {
    out += "counters: unavailable (" + p.counters_unavailable + ")\n";
  }
  for (const std::string& note : p.notes)
    out += "note: " + note + "\n";
  return out;
}

std::string describe_diagnosis(const engine::diagnosis& d) {
  if (!d.diagnosed)
    return "diagnosis: none (no peaks and no counters to judge by)\n";
  std::string out = std::string("diagnosis: ") + engine::to_string(d.bound) + " (" +
                    (d.hardware.counters       ? "hardware counters"
                     : d.hardware.launches > 0 ? "timing and activity records"
                                               : "timing") +
                    ")\n  " + d.text + "\n";
  if (!d.evidence.empty()) {
    out += "  evidence:\n";
    for (const engine::metric_evidence& e : d.evidence)
      out += "    " + e.metric + " = " + number(e.value) + " " + e.relation + " " +
             number(e.threshold) + "\n";
  }
  return out;
}

} // namespace ks::gpu
