#include "actors/records_json.hpp"

#include "gpu/device_json.hpp"

#include <boost/json.hpp>
#include <unistd.h>

namespace ks::actors {

namespace json = boost::json;

namespace {

double number(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v)
    return 0;
  if (v->is_double())
    return v->get_double();
  if (v->is_int64())
    return static_cast<double>(v->get_int64());
  if (v->is_uint64())
    return static_cast<double>(v->get_uint64());
  return 0;
}

json::object calibration_object(const gpu::calibration& c) {
  return json::object{{"v", 1},
                      {"dram_gbps", c.dram_gbps},
                      {"fp32_gflops", c.fp32_gflops},
                      {"copy_bytes", c.copy_bytes},
                      {"copy_ms", c.copy_ms},
                      {"fma_ms", c.fma_ms}};
}

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0)
    return {};
  return buffer;
}

} // namespace

std::string verify_json(const gpu::verify_result& v) {
  return json::serialize(json::object{{"passed", v.passed},
                                      {"trials", v.trials},
                                      {"max_abs_err", v.max_abs_err},
                                      {"max_rel_err", v.max_rel_err},
                                      {"norm_rel_err", v.norm_rel_err},
                                      {"bad_count", v.bad_count},
                                      {"nan_count", v.nan_count},
                                      {"first_bad_index", v.first_bad_index},
                                      {"bad_output", v.bad_output},
                                      {"bad_trial", v.bad_trial},
                                      {"expected", v.expected},
                                      {"actual", v.actual},
                                      {"input_changed", v.input_changed}});
}

std::string calibration_json(const gpu::calibration& c) {
  return json::serialize(calibration_object(c));
}

std::optional<gpu::calibration> parse_calibration(std::string_view text) {
  json::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object())
    return std::nullopt;
  const json::object& o = v.get_object();
  gpu::calibration c;
  c.dram_gbps = number(o, "dram_gbps");
  c.fp32_gflops = number(o, "fp32_gflops");
  c.copy_bytes = static_cast<int64_t>(number(o, "copy_bytes"));
  c.copy_ms = number(o, "copy_ms");
  c.fma_ms = number(o, "fma_ms");
  if (c.dram_gbps <= 0 && c.fp32_gflops <= 0)
    return std::nullopt;
  return c;
}

std::string environment_json(const std::vector<gpu_description>& gpus, const std::string& arch,
                             const std::string& nvcc_version, bool dry_run) {
  json::array list;
  for (const gpu_description& g : gpus) {
    // The campaign's index and the CUDA device first, then the device as every writer
    // spells it (gpu/device_json.hpp).
    json::object o{{"index", g.index}, {"device", g.device}};
    for (const auto& field : gpu::device_info_json(g.info))
      if (field.key() != "index")
        o.emplace(field.key(), field.value());
    o.emplace("calibration", calibration_object(g.calibration));
    list.push_back(std::move(o));
  }
  std::string nvcc_line;
  for (char c : nvcc_version) {
    if (c == '\n') {
      if (!nvcc_line.empty() && nvcc_line.rfind("Cuda compilation tools", 0) == 0)
        break;
      nvcc_line.clear();
      continue;
    }
    nvcc_line += c;
  }
  return json::serialize(json::object{{"v", 1},
                                      {"host", host_name()},
                                      {"arch", arch},
                                      {"nvcc", nvcc_line},
                                      {"dry_run", dry_run},
                                      {"gpus", std::move(list)}});
}

} // namespace ks::actors
