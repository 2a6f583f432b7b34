#include "cli/result_json.hpp"

#include "cli/exit_codes.hpp"
#include "gpu/device_json.hpp"
#include "json/encode.hpp"

#include <charconv>
#include <cmath>

namespace ks::cli {

namespace json = boost::json;

namespace {

// JSON has no NaN or infinity: a non-finite number becomes null.
json::value number(double x) {
  if (!std::isfinite(x))
    return nullptr;
  return x;
}

void pretty_into(std::string& out, const json::value& v, int indent) {
  auto pad = [&](int n) { out.append(static_cast<size_t>(n) * 2, ' '); };
  if (v.is_object()) {
    const json::object& o = v.get_object();
    if (o.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    size_t i = 0;
    for (const auto& [key, value] : o) {
      pad(indent + 1);
      out += encode::serialize(json::string(key)) + ": ";
      pretty_into(out, value, indent + 1);
      out += ++i < o.size() ? ",\n" : "\n";
    }
    pad(indent);
    out += "}";
  } else if (v.is_array()) {
    const json::array& a = v.get_array();
    if (a.empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (size_t i = 0; i < a.size(); ++i) {
      pad(indent + 1);
      pretty_into(out, a[i], indent + 1);
      out += i + 1 < a.size() ? ",\n" : "\n";
    }
    pad(indent);
    out += "]";
  } else if (v.is_double() && std::isfinite(v.get_double())) {
    // Shortest round-trip form: 3000 and 0.7, not Boost's 3E3 and 7E-1.
    char text[64];
    auto [end, ec] = std::to_chars(text, text + sizeof text, v.get_double());
    std::string number(text, ec == std::errc() ? end : text);
    if (number.find_first_of(".eE") == std::string::npos)
      number += ".0"; // stays a floating-point number for readers that care
    out += number;
  } else {
    out += encode::serialize(v);
  }
}

json::array paths_json(const std::vector<std::string>& paths) {
  json::array out;
  for (const std::string& p : paths)
    out.emplace_back(p);
  return out;
}

} // namespace

json::object to_json(const gpu::device_info& d) {
  return gpu::device_info_json(d);
}

json::object to_json(const gpu::verify_result& v) {
  json::object o{{"passed", v.passed},
                 {"trials", v.trials},
                 {"max_abs_err", number(v.max_abs_err)},
                 {"max_rel_err", number(v.max_rel_err)},
                 {"norm_rel_err", number(v.norm_rel_err)}};
  if (!v.passed) {
    o["bad_output"] = v.bad_output;
    o["bad_trial"] = v.bad_trial;
    o["first_bad_index"] = v.first_bad_index;
    o["bad_count"] = v.bad_count;
    o["nan_count"] = v.nan_count;
    o["expected"] = number(v.expected);
    o["actual"] = number(v.actual);
    o["input_changed"] = v.input_changed;
  }
  if (!v.vendor_libraries.empty())
    o["vendor_libraries"] = paths_json(v.vendor_libraries);
  return o;
}

json::object to_json(const gpu::timing_result& t) {
  json::object o{{"median_ms", number(t.median_ms)},
                 {"p10_ms", number(t.p10_ms)},
                 {"p90_ms", number(t.p90_ms)},
                 {"min_ms", number(t.min_ms)},
                 {"mean_ms", number(t.mean_ms)},
                 {"trials", t.trials},
                 {"host_ms_per_call", number(t.host_ms_per_call)},
                 {"device_tail_ms", number(t.device_tail_ms)},
                 {"escaped", t.escaped},
                 {"batch", t.batch},
                 {"input_sets", t.input_sets},
                 {"checked_calls", t.checked_calls},
                 {"audit", t.audit},
                 {"audit_note", t.audit_note},
                 {"l2_resets", t.l2_resets}};
  if (!t.vendor_libraries.empty())
    o["vendor_libraries"] = paths_json(t.vendor_libraries);
  return o;
}

json::object to_json(const gpu::failure& f) {
  json::object o{{"kind", gpu::to_string(f.kind)},
                 {"exit_code", gpu::exit_code_for(f.kind)},
                 {"message", f.message}};
  if (f.return_code)
    o["return_code"] = *f.return_code;
  if (!f.cuda_error.empty())
    o["cuda_error"] = f.cuda_error;
  if (f.verify)
    o["verify"] = to_json(*f.verify);
  return o;
}

json::object failure_json(int32_t exit_code, const std::string& message) {
  std::string_view kind = "error";
  for (const exit_code_info& info : exit_codes())
    if (info.code == exit_code)
      kind = info.name;
  return {
      {"ok", false},
      {"failure", json::object{{"kind", kind}, {"exit_code", exit_code}, {"message", message}}}};
}

json::object to_json(const gpu::compile_result& r) {
  json::object o{{"ok", r.ok},
                 {"cached", r.cached},
                 {"timed_out", r.timed_out},
                 {"wall_ms", number(r.wall_ms)},
                 {"key", r.key},
                 {"shared_object", r.shared_object.string()}};
  if (!r.ok)
    o["diagnostics"] = r.diagnostics;
  json::array kernels;
  for (const auto& k : r.kernels)
    kernels.push_back(json::object{{"name", k.name},
                                   {"registers", k.registers},
                                   {"shared_bytes", k.shared_bytes},
                                   {"stack_bytes", k.stack_bytes},
                                   {"spill_stores", k.spill_stores},
                                   {"spill_loads", k.spill_loads}});
  o["kernels"] = std::move(kernels);
  return o;
}

std::string pretty(const json::value& v) {
  std::string out;
  pretty_into(out, v, 0);
  out += '\n';
  return out;
}

} // namespace ks::cli
