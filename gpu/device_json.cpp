#include "gpu/device_json.hpp"

#include "json/decode.hpp"

#include <charconv>
#include <cmath>

namespace json = boost::json;

namespace ks::gpu {

json::object device_info_json(const device_info& d) {
  return {{"index", d.index},
          {"device_count", d.device_count},
          {"name", d.name},
          {"uuid", d.uuid},
          {"arch", d.arch},
          {"cc", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"sms", d.sms},
          {"memory_bytes", d.memory_bytes},
          {"l2_bytes", d.l2_bytes},
          {"smem_per_block_optin", d.smem_per_block_optin},
          {"sm_clock_khz", d.sm_clock_khz},
          {"mem_clock_khz", d.mem_clock_khz},
          {"mem_bus_bits", d.mem_bus_bits},
          {"driver_version", d.driver_version},
          {"runtime_version", d.runtime_version}};
}

namespace {

// Reads "M.m" into `major` and `minor`; false when `text` is not that.
bool parse_cc(std::string_view text, int32_t& major, int32_t& minor) {
  size_t dot = text.find('.');
  if (dot == std::string_view::npos)
    return false;
  auto [a, ea] = std::from_chars(text.data(), text.data() + dot, major);
  auto [b, eb] = std::from_chars(text.data() + dot + 1, text.data() + text.size(), minor);
  return ea == std::errc{} && eb == std::errc{} && a == text.data() + dot &&
         b == text.data() + text.size();
}

} // namespace

device_info device_info_from_json(const json::object& o) {
  device_info d;
  d.index = decode::number<int32_t>(o, "index");
  d.device_count = decode::number<int32_t>(o, "device_count");
  d.name = decode::string_field(o, "name");
  d.uuid = decode::string_field(o, "uuid");
  d.arch = decode::string_field(o, "arch");
  const char* cc_key = o.contains("cc") ? "cc" : "compute_capability";
  if (o.contains(cc_key)) {
    if (!parse_cc(decode::string_field(o, cc_key), d.cc_major, d.cc_minor))
      throw decode::malformed(std::string("field '") + cc_key + "' must be \"MAJOR.MINOR\"");
  } else {
    d.cc_major = decode::number<int32_t>(o, "cc_major");
    d.cc_minor = decode::number<int32_t>(o, "cc_minor");
  }
  d.sms = decode::number<int32_t>(o, "sms");
  d.memory_bytes = decode::number<int64_t>(o, "memory_bytes");
  d.l2_bytes = decode::number<int64_t>(o, "l2_bytes");
  d.smem_per_block_optin = decode::number_or<int64_t>(o, "smem_per_block_optin", 0);
  d.sm_clock_khz = decode::number_or<int32_t>(o, "sm_clock_khz", 0);
  d.mem_clock_khz = decode::number_or<int32_t>(o, "mem_clock_khz", 0);
  d.mem_bus_bits = decode::number_or<int32_t>(o, "mem_bus_bits", 0);
  d.driver_version = decode::number_or<int32_t>(o, "driver_version", 0);
  d.runtime_version = decode::number_or<int32_t>(o, "runtime_version", 0);
  return d;
}

json::object calibration_json(const calibration& c) {
  auto real = [](double x) -> json::value {
    if (!std::isfinite(x))
      return nullptr;
    return x;
  };
  return {{"dram_gbps", real(c.dram_gbps)},
          {"fp32_gflops", real(c.fp32_gflops)},
          {"copy_bytes", c.copy_bytes},
          {"copy_ms", real(c.copy_ms)},
          {"fma_ms", real(c.fma_ms)}};
}

calibration calibration_from_json(const json::object& o) {
  calibration c;
  c.dram_gbps = decode::number<double>(o, "dram_gbps");
  c.fp32_gflops = decode::number<double>(o, "fp32_gflops");
  c.copy_bytes = decode::number_or<int64_t>(o, "copy_bytes", 0);
  c.copy_ms = decode::number_or<double>(o, "copy_ms", 0);
  c.fma_ms = decode::number_or<double>(o, "fma_ms", 0);
  return c;
}

std::optional<calibration> usable_calibration(const json::value& v) {
  if (!v.is_object())
    return std::nullopt;
  try {
    calibration c = calibration_from_json(v.get_object());
    if (c.dram_gbps > 0 && c.fp32_gflops > 0)
      return c;
  } catch (const decode::malformed&) {
  }
  return std::nullopt;
}

} // namespace ks::gpu
