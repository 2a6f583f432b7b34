#include "cli/eval_report.hpp"

#include "cli/environment.hpp"
#include "cli/result_json.hpp"
#include "gpu/device_json.hpp"
#include "gpu/vendor_libraries.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ks::cli {

namespace json = boost::json;

namespace {

const char* cold_or_cached(const gpu::compile_result& r) {
  return r.cached ? "cached" : "cold";
}

std::string timing_line(const gpu::timing_result& t) {
  return format_ms(t.median_ms) + " median (p10 " + format_ms(t.p10_ms) + ", p90 " +
         format_ms(t.p90_ms) + ", " + std::to_string(t.trials) + " trials)";
}

std::string percent(double fraction) {
  return format_number(100 * fraction, 3) + "%";
}

const engine::tensor_spec* find_tensor(const engine::task& t, const std::string& name) {
  for (const auto* list : {&t.outputs, &t.inputs})
    for (const auto& spec : *list)
      if (spec.name == name)
        return &spec;
  return nullptr;
}

// Returns "[i, j, k]": the coordinates of flat index `index` in row-major `shape`.
std::string coordinates(int64_t index, const std::vector<int64_t>& shape) {
  if (shape.empty() || index < 0)
    return {};
  std::vector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t extent = shape[d] > 0 ? shape[d] : 1;
    at[d] = index % extent;
    index /= extent;
  }
  std::string text = "[";
  for (size_t d = 0; d < at.size(); ++d)
    text += (d ? ", " : "") + std::to_string(at[d]);
  return text + "]";
}

const char* bound_of(const eval_report& r) {
  if (!r.task || !r.peaks)
    return "";
  double memory_ms = r.task->cost.bytes / (r.peaks->peaks.dram_gbps * 1e6);
  double compute_ms = r.task->cost.flops / (r.peaks->peaks.fp32_gflops * 1e6);
  return memory_ms >= compute_ms ? "memory-bound" : "compute-bound";
}

// Returns the candidate against the task's torch baselines; nullopt without --baselines.
std::optional<report::torch_comparison> torch_of(const eval_report& r) {
  if (!r.baselines || !r.task)
    return std::nullopt;
  return report::compare_with_torch(&*r.baselines, r.task->name,
                                    r.candidate_time ? r.candidate_time->median_ms : 0);
}

std::string device_note_of(const eval_report& r) {
  if (!r.baselines || !r.device)
    return {};
  return report::device_mismatch(*r.baselines, {r.device->name});
}

std::string ratio(double value) {
  if (value <= 0)
    return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", value);
  return text;
}

std::string ms_or_dash(double ms) {
  return ms > 0 ? format_ms(ms) : std::string("-");
}

} // namespace

std::optional<double> roofline_floor(const eval_report& r) {
  if (!r.task || !r.peaks)
    return std::nullopt;
  double floor =
      engine::roofline_floor_ms(r.task->cost, r.peaks->peaks.dram_gbps, r.peaks->peaks.fp32_gflops);
  if (!(floor > 0))
    return std::nullopt;
  return floor;
}

std::vector<std::string> candidate_vendor_libraries(const eval_report& r) {
  std::vector<std::string> out;
  for (const auto* list : {r.verify ? &r.verify->vendor_libraries : nullptr,
                           r.candidate_time ? &r.candidate_time->vendor_libraries : nullptr})
    if (list != nullptr)
      for (const std::string& library : *list)
        if (std::find(out.begin(), out.end(), library) == out.end())
          out.push_back(library);
  return out;
}

std::string explain_failure(const gpu::failure& f, const std::optional<engine::task>& t,
                            uint64_t seed) {
  std::ostringstream out;
  out << gpu::to_string(f.kind) << ": " << f.message;
  if (!f.cuda_error.empty() && f.message.find(f.cuda_error) == std::string::npos)
    out << " (" << f.cuda_error << ")";
  if (f.kind == gpu::failure_kind::launch_error && f.return_code &&
      f.message.find("returned " + std::to_string(*f.return_code)) == std::string::npos)
    out << "\n  ks_forward returned " << *f.return_code << " (0 means success)";
  if (f.verify) {
    const gpu::verify_result& v = *f.verify;
    const engine::tensor_spec* spec = t ? find_tensor(*t, v.bad_output) : nullptr;
    std::string trial;
    if (v.bad_trial >= 0)
      trial = " (trial " + std::to_string(v.bad_trial + 1) + ", inputs drawn with seed " +
              std::to_string(seed + static_cast<uint64_t>(v.bad_trial)) + ")";
    if (v.input_changed) {
      out << "\n  the candidate changed its input '" << v.bad_output << "'" << trial
          << ": inputs must be left as they were";
      if (v.first_bad_index >= 0)
        out << "\n  first changed element  index " << v.first_bad_index << " "
            << (spec ? coordinates(v.first_bad_index, spec->shape) : "") << ": was "
            << format_number(v.expected, 7) << ", now " << format_number(v.actual, 7);
    } else {
      out << "\n  output                 " << v.bad_output << trial;
      if (v.first_bad_index >= 0)
        out << "\n  first bad element      index " << v.first_bad_index << " "
            << (spec ? coordinates(v.first_bad_index, spec->shape) : "") << ": expected "
            << format_number(v.expected, 7) << ", actual " << format_number(v.actual, 7);
    }
    out << "\n  out of tolerance       " << v.bad_count;
    if (spec)
      out << " of " << spec->numel();
    out << " elements";
    if (v.nan_count > 0)
      out << ", " << v.nan_count << " of them NaN (never written?)";
    out << "\n  errors                 max abs " << format_number(v.max_abs_err) << ", max rel "
        << format_number(v.max_rel_err) << ", norm-relative " << format_number(v.norm_rel_err);
    if (t)
      out << "\n  tolerance              atol " << format_number(t->tol.atol) << ", rtol "
          << format_number(t->tol.rtol) << ", norm_rel " << format_number(t->tol.norm_rel)
          << "  (|out - ref| <= atol + rtol * |ref| per element)";
  }
  return out.str();
}

void print_text(std::ostream& out, const eval_report& r) {
  const auto label = [&](const char* name) -> std::ostream& {
    out.width(12);
    out << std::left << name;
    return out;
  };
  if (r.task) {
    label("task") << r.task->name << " (" << r.manifest.string() << ")";
    if (!r.task->about.empty())
      out << ": " << r.task->about;
    out << "\n";
  }
  label("candidate") << r.candidate.string() << "\n";
  if (r.device)
    label("device") << r.device->index << ": " << r.device->name << " (" << r.device->arch << ", "
                    << r.device->sms << " SMs)\n";
  if (r.reference_compile || r.candidate_compile) {
    label("compile") << r.arch << ":";
    if (r.reference_compile)
      out << " reference " << format_ms(r.reference_compile->wall_ms) << " ("
          << (r.reference_compile->ok ? cold_or_cached(*r.reference_compile) : "failed") << ")";
    if (r.candidate_compile)
      out << ", candidate " << format_ms(r.candidate_compile->wall_ms) << " ("
          << (r.candidate_compile->ok ? cold_or_cached(*r.candidate_compile) : "failed") << ")";
    out << "\n";
  }
  if (r.reference_check)
    label("verify") << "reference against itself: passed\n";
  if (r.verify) {
    label(r.reference_check ? "" : "verify")
        << "candidate: passed " << r.verify->trials << " trials (seeds " << r.seed << ".."
        << r.seed + static_cast<uint64_t>(r.verify->trials - 1) << "): max abs err "
        << format_number(r.verify->max_abs_err) << ", max rel err "
        << format_number(r.verify->max_rel_err) << ", norm-rel err "
        << format_number(r.verify->norm_rel_err) << "\n";
  }
  const std::vector<std::string> vendor = candidate_vendor_libraries(r);
  if (!vendor.empty())
    label("vendor") << "the candidate uses " << gpu::describe_vendor_libraries(vendor)
                    << "; measured as --allow-vendor-libraries asks: its time is not its own "
                       "kernels' alone\n";
  if (r.reference_time)
    label("time") << "reference " << timing_line(*r.reference_time) << "\n";
  if (r.candidate_time)
    label(r.reference_time ? "" : "time") << "candidate " << timing_line(*r.candidate_time) << "\n";
  if (r.candidate_time) {
    const gpu::timing_result& t = *r.candidate_time;
    label("integrity") << t.checked_calls << " timed calls checked against the reference, "
                       << t.input_sets << " input sets alternated; "
                       << (t.audit == "cupti"
                               ? "every kernel, copy and memset of " + std::to_string(t.batch) +
                                     " back-to-back calls seen on the stream (CUPTI)"
                               : "host-clock check of " + std::to_string(t.batch) +
                                     " back-to-back calls (no CUPTI: " + t.audit_note + ")")
                       << (t.l2_resets > 0 ? "; its persisting-L2 settings were undone " +
                                                 std::to_string(t.l2_resets) + " times"
                                           : std::string())
                       << "\n";
  }
  if (r.reference_time && r.candidate_time && r.candidate_time->median_ms > 0) {
    double speedup = r.reference_time->median_ms / r.candidate_time->median_ms;
    char text[32];
    std::snprintf(text, sizeof text, "%.2fx", speedup);
    label("speedup") << text << " "
                     << (speedup >= 1.005   ? "(the candidate is faster)"
                         : speedup <= 0.995 ? "(the candidate is slower)"
                                            : "(the same within 0.5%)")
                     << (vendor.empty() ? std::string()
                                        : ", using " + gpu::vendor_library_names(vendor))
                     << "\n";
  }
  if (auto floor = roofline_floor(r)) {
    label("roofline") << "floor " << format_ms(*floor) << ", " << bound_of(r) << " (peaks "
                      << format_number(r.peaks->peaks.dram_gbps, 4) << " GB/s, "
                      << format_number(r.peaks->peaks.fp32_gflops, 4) << " GFLOP/s, "
                      << (r.peaks->cached ? "cached" : "measured now") << ")\n";
    if (r.reference_time)
      label("") << "reference reaches " << percent(*floor / r.reference_time->median_ms)
                << " of it\n";
    if (r.candidate_time)
      label("") << "candidate reaches " << percent(*floor / r.candidate_time->median_ms)
                << " of it\n";
  } else if (!r.calibration_error.empty()) {
    label("roofline") << "unknown: " << r.calibration_error << "\n";
  }
  if (auto tc = torch_of(r)) {
    const report::torch_baselines& b = *r.baselines;
    label("torch") << "eager " << ms_or_dash(tc->eager_ms) << ", torch.compile "
                   << ms_or_dash(tc->compile_ms) << " (torch " << b.torch_version << ", mode "
                   << b.compile_mode << ", measured on " << b.device << "; " << b.source.string()
                   << ")\n";
    if (r.candidate_time)
      label("") << "candidate vs eager " << ratio(tc->speedup_vs_eager) << ", vs compile "
                << ratio(tc->speedup_vs_compile) << "\n";
    if (!tc->note.empty())
      label("") << "no torch time: " << tc->note << "\n";
    if (std::string note = device_note_of(r); !note.empty())
      label("") << "warning: " << note << "\n";
  }
  const eval_phases& p = r.phases;
  double other = p.total - p.worker_start - p.device - p.compile - p.verify - p.calibrate - p.time -
                 p.shutdown;
  label("time spent") << format_ms(p.total) << ": worker start " << format_ms(p.worker_start)
                      << " (" << p.worker_starts << (p.worker_starts == 1 ? " start" : " starts")
                      << "), device setup " << format_ms(p.device) << ", compile "
                      << format_ms(p.compile) << ", verify " << format_ms(p.verify)
                      << ", calibrate " << format_ms(p.calibrate) << ", time " << format_ms(p.time)
                      << ", worker exit " << format_ms(p.shutdown) << ", other "
                      << format_ms(std::max(0.0, other)) << "\n";
}

json::object to_json(const eval_report& r) {
  json::object o;
  o["ok"] = !r.error;
  o["exit_code"] = r.error ? exit_code_of(*r.error) : 0;
  if (r.error) {
    // The typed failure's details (verify statistics, return code), but the reason and exit
    // code of how the command stopped: a reference's wrong_result is a task error (2).
    static const char* const reasons[] = {"", "usage_error", "task_error", "environment_error",
                                          "failure"};
    json::object e = r.failure ? cli::to_json(*r.failure) : json::object{};
    if (!r.failure)
      e["kind"] = reasons[static_cast<int>(r.error->reason)];
    e["reason"] = reasons[static_cast<int>(r.error->reason)];
    e["exit_code"] = exit_code_of(*r.error);
    e["message"] = r.error->message;
    if (r.failure && r.failure->kind == gpu::failure_kind::compile_error && r.candidate_compile)
      e["diagnostics"] = r.candidate_compile->diagnostics;
    o["failure"] = std::move(e);
  }
  o["manifest"] = r.manifest.string();
  o["candidate"] = r.candidate.string();
  if (r.task) {
    o["task"] = json::object{
        {"name", r.task->name},
        {"family", r.task->family},
        {"about", r.task->about},
        {"reference", r.task->reference_path.string()},
        {"cost", json::object{{"flops", r.task->cost.flops}, {"bytes", r.task->cost.bytes}}}};
  }
  o["arch"] = r.arch;
  o["trials"] = r.trials;
  o["seed"] = r.seed;
  if (r.device)
    o["device"] = cli::to_json(*r.device);
  json::object compile;
  if (r.reference_compile)
    compile["reference"] = cli::to_json(*r.reference_compile);
  if (r.candidate_compile)
    compile["candidate"] = cli::to_json(*r.candidate_compile);
  o["compile"] = std::move(compile);
  if (r.reference_check)
    o["reference_check"] = cli::to_json(*r.reference_check);
  if (r.verify)
    o["verify"] = cli::to_json(*r.verify);
  json::object timing;
  if (r.reference_time)
    timing["reference"] = cli::to_json(*r.reference_time);
  if (r.candidate_time)
    timing["candidate"] = cli::to_json(*r.candidate_time);
  o["timing"] = std::move(timing);
  if (r.reference_time && r.candidate_time && r.candidate_time->median_ms > 0)
    o["speedup"] = r.reference_time->median_ms / r.candidate_time->median_ms;
  // What the candidate's time stands on besides its own kernels (--allow-vendor-libraries).
  json::array vendor;
  for (const std::string& library : candidate_vendor_libraries(r))
    vendor.emplace_back(library);
  o["vendor_libraries"] = std::move(vendor);
  if (r.peaks) {
    json::object peaks = gpu::calibration_json(r.peaks->peaks);
    peaks["cached"] = r.peaks->cached;
    peaks["file"] = r.peaks->file.string();
    o["calibration"] = std::move(peaks);
  } else if (!r.calibration_error.empty()) {
    o["calibration"] = json::object{{"error", r.calibration_error}};
  }
  if (auto floor = roofline_floor(r)) {
    json::object roof{{"floor_ms", *floor}, {"bound", bound_of(r)}};
    if (r.reference_time)
      roof["reference_fraction"] = *floor / r.reference_time->median_ms;
    if (r.candidate_time)
      roof["candidate_fraction"] = *floor / r.candidate_time->median_ms;
    o["roofline"] = std::move(roof);
  }
  if (auto tc = torch_of(r)) {
    const report::torch_baselines& b = *r.baselines;
    auto positive = [](double v) { return v > 0 ? json::value(v) : json::value(nullptr); };
    std::string device_note = device_note_of(r);
    o["torch"] =
        json::object{{"file", b.source.string()},
                     {"device", b.device},
                     {"torch_version", b.torch_version},
                     {"compile_mode", b.compile_mode},
                     {"device_matches", device_note.empty()},
                     {"torch_eager_ms", positive(tc->eager_ms)},
                     {"torch_compile_ms", positive(tc->compile_ms)},
                     {"speedup_vs_eager", positive(tc->speedup_vs_eager)},
                     {"speedup_vs_compile", positive(tc->speedup_vs_compile)},
                     {"note", tc->note.empty() ? json::value(nullptr) : json::value(tc->note)}};
  }
  const eval_phases& p = r.phases;
  o["phases_ms"] = json::object{{"worker_start", p.worker_start},
                                {"worker_starts", p.worker_starts},
                                {"device", p.device},
                                {"compile", p.compile},
                                {"verify", p.verify},
                                {"calibrate", p.calibrate},
                                {"time", p.time},
                                {"shutdown", p.shutdown},
                                {"total", p.total}};
  return o;
}

} // namespace ks::cli
