#include "report/records_json.hpp"

#include "gpu/device_json.hpp"
#include "json/encode.hpp"

#include <boost/json.hpp>
#include <unistd.h>

namespace ks::report {

namespace json = boost::json;

namespace {

// The store's record: the one spelling (gpu/device_json.hpp) with its version.
json::object calibration_object(const gpu::calibration& c) {
  json::object o{{"v", 1}};
  for (const auto& field : gpu::calibration_json(c))
    o.emplace(field.key(), field.value());
  return o;
}

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0)
    return {};
  return buffer;
}

} // namespace

std::string verify_json(const gpu::verify_result& v) {
  json::object o{{"passed", v.passed},
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
                 {"input_changed", v.input_changed}};
  // What the candidate's time stands on besides its own kernels (bench.allow_vendor_libraries).
  if (!v.vendor_libraries.empty()) {
    json::array libraries;
    for (const std::string& library : v.vendor_libraries)
      libraries.emplace_back(library);
    o["vendor_libraries"] = std::move(libraries);
  }
  return encode::serialize(o);
}

std::string calibration_json(const gpu::calibration& c) {
  return encode::serialize(calibration_object(c));
}

std::optional<gpu::calibration> parse_calibration(std::string_view text) {
  json::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec)
    return std::nullopt;
  return gpu::usable_calibration(v);
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
  return encode::serialize(json::object{{"v", 1},
                                        {"host", host_name()},
                                        {"arch", arch},
                                        {"nvcc", nvcc_line},
                                        {"dry_run", dry_run},
                                        {"gpus", std::move(list)}});
}

} // namespace ks::report
