// `kernelskill profile`: one candidate, compiled and profiled, and the analyst's diagnosis of
// it, as the campaign profiles a node it is about to expand. The steps:
//
//   - The device first (unless --arch is given): its architecture is part of nvcc's command
//     line. The candidate alone is compiled: a profile runs the candidate's calls only, and a
//     candidate that computes wrong results still has a bottleneck (`eval` is for
//     correctness).
//   - The device's peaks (calibrated once per device and cached, as eval does) give the
//     roofline the diagnosis measures against.
//   - One profile job: a call under CUPTI's activity API, then replayed under its range
//     profiler (gpu/worker/profiler.cpp). Counters the GPU refuses are said, not a failure:
//     the diagnosis then rests on the timing and the activity records.
//   - The analyst's rules (engine/profile_analyst.cpp) turn the profile into a class with
//     its evidence and waste.
//
// --json prints one object that is also the format of the analyst's recorded fixtures
// (tests/engine/profiles/): cost, peaks, median_ms, profile, diagnosis.

#include "cli/profile_command.hpp"

#include "base/text.hpp"
#include "cli/calibration_cache.hpp"
#include "cli/command_line.hpp"
#include "cli/config_loading.hpp"
#include "cli/environment.hpp"
#include "cli/eval_report.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "cli/result_json.hpp"
#include "engine/profile_analyst.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "gpu/profile_report.hpp"
#include "gpu/worker_client.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace ks::cli {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

std::string without_trailing_newlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  return text;
}

/// What one `kernelskill profile` found, for its text and JSON forms.
struct profile_report {
  std::optional<engine::task> task;
  std::optional<gpu::device_info> device;
  std::string arch;
  std::optional<gpu::calibration> peaks;
  std::optional<engine::profile> profile;
  engine::diagnosis diagnosis;
  std::optional<gpu::failure> failure;
  double compile_ms = 0, calibrate_ms = 0, profile_ms = 0;
};

/// Runs the steps of one profile and fills its report.
class profiling {
public:
  explicit profiling(const profile_command_options& opt)
    : opt_(opt), cache_dir_(cache_dir_or_default(opt.cache_dir)), client_(worker_for(opt)) {
    report_.arch = opt.arch;
  }

  command_result run() {
    if (auto ok = read_inputs(); !ok)
      return ok;
    if (opt_.sandbox)
      if (auto sandbox = gpu::probe_sandbox(worker_for(opt_).boundary); !sandbox)
        return stop(stop_reason::environment, sandbox.error().message());
    // With --arch the candidate compiles before a GPU is needed, so that its compile errors
    // are found on a machine without one.
    const bool arch_given = !report_.arch.empty();
    if (arch_given)
      if (auto ok = compile(); !ok)
        return ok;
    if (auto ok = open_device(); !ok)
      return ok;
    if (!arch_given)
      if (auto ok = compile(); !ok)
        return ok;
    calibrate();
    if (auto ok = profile(); !ok)
      return ok;
    engine::device_peaks peaks;
    if (report_.peaks)
      peaks = {report_.peaks->dram_gbps, report_.peaks->fp32_gflops};
    report_.diagnosis = engine::diagnose_profile(*report_.profile, report_.task->cost, peaks, 0);
    return {};
  }

  void finish() { client_.shutdown(); }

  profile_report& report() noexcept { return report_; }

private:
  static gpu::worker_options worker_for(const profile_command_options& opt) {
    gpu::worker_options w =
        standalone_worker(opt.worker, opt.device, opt.sandbox, opt.cache_dir, opt.job_timeout_s);
    if (opt.allow_vendor_libraries)
      w.vendor_libraries = gpu::vendor_policy::allow;
    return w;
  }

  tl::unexpected<command_error> stop_on(const gpu::failure& f, std::string message) {
    report_.failure = f;
    return stop(f.kind, std::move(message));
  }

  command_result read_inputs() {
    auto candidate = base::read_text(opt_.candidate);
    if (!candidate) {
      std::error_code ec;
      return stop(stop_reason::usage,
                  "cannot read the candidate '" + opt_.candidate.string() + "': " +
                      (fs::exists(opt_.candidate, ec) ? "not a readable file" : "no such file"));
    }
    candidate_source_ = std::move(*candidate);
    auto task = engine::load_task_manifest(opt_.task);
    if (!task) {
      bool missing =
          task.error().code() == engine::errc::not_found || task.error().code() == engine::errc::io;
      std::string hint = missing ? std::string() : other_kind_hint(opt_.task, "task");
      return stop(missing ? stop_reason::usage : stop_reason::task,
                  "cannot load the task manifest '" + opt_.task.string() + "':\n" +
                      task.error().message() + (hint.empty() ? "" : "\n  (" + hint + ")"));
    }
    report_.task = std::move(*task);
    return {};
  }

  command_result open_device() {
    progress("starting the bench worker for device " + std::to_string(opt_.device) + "...");
    auto info = client_.info();
    if (!info) {
      const gpu::failure& f = info.error();
      std::string message = "cannot use device " + std::to_string(opt_.device) + ": " +
                            explain_failure(f, report_.task, opt_.seed);
      if (f.kind == gpu::failure_kind::no_device)
        message += report_.compile_ms > 0
                       ? "\n  the candidate compiled for " + report_.arch +
                             ", but profiling it needs a GPU"
                       : std::string("\n  a profile runs the candidate on a GPU; without one, "
                                     "`kernelskill profile --arch SM` checks that it compiles");
      return stop_on(f, std::move(message));
    }
    report_.device = *info;
    if (report_.arch.empty())
      report_.arch =
          info->arch.empty() ? gpu::arch_for(info->cc_major, info->cc_minor) : info->arch;
    return {};
  }

  command_result compile() {
    auto start = clock_type::now();
    gpu::compiler_options copt;
    copt.arch = report_.arch;
    copt.cache_dir = cache_dir_;
    copt.include_dir = include_dir_for_compiler();
    copt.boundary = worker_for(opt_).boundary; // --sandbox: nvcc in the worker's sandbox too
    auto compiler = gpu::compiler::create(copt);
    if (!compiler)
      return stop(compiler.error().code() == engine::errc::invalid_input ? stop_reason::usage
                                                                         : stop_reason::environment,
                  "cannot compile: " + compiler.error().message());
    progress("compiling the candidate for " + report_.arch + "...");
    std::vector<gpu::compile_request> requests(1);
    requests[0].source = candidate_source_;
    requests[0].label = opt_.candidate.filename().string();
    requests[0].source_name = opt_.candidate.string();
    auto results = compiler->compile_all(requests);
    report_.compile_ms = ms_since(start);
    if (results[0].host_fault) {
      gpu::failure f;
      f.kind = gpu::failure_kind::host_fault;
      f.message = "the host cannot compile: " + without_trailing_newlines(results[0].diagnostics);
      return stop_on(f, "host_fault: " + f.message);
    }
    if (!results[0].ok) {
      gpu::failure f;
      f.kind = results[0].timed_out ? gpu::failure_kind::timeout : gpu::failure_kind::compile_error;
      f.message =
          results[0].timed_out ? "nvcc ran past its time limit" : "nvcc rejected the source";
      return stop_on(f, std::string(gpu::to_string(f.kind)) + ": the candidate '" +
                            opt_.candidate.string() + "' does not compile for " + report_.arch +
                            "; nvcc says:\n" + without_trailing_newlines(results[0].diagnostics));
    }
    shared_object_ = results[0].shared_object.string();
    return {};
  }

  void calibrate() {
    auto start = clock_type::now();
    auto peaks = calibrate_cached(client_, *report_.device, cache_dir_, recalibrate::no);
    report_.calibrate_ms = ms_since(start);
    if (!peaks) {
      warn(std::string("calibration failed: ") + gpu::to_string(peaks.error().kind) + ": " +
           peaks.error().message + "; the diagnosis has no roofline");
      return;
    }
    report_.peaks = peaks->peaks;
  }

  command_result profile() {
    progress(opt_.counters ? "profiling one call (every kernel, and the hardware counters)..."
                           : "profiling one call (every kernel)...");
    auto start = clock_type::now();
    gpu::profile_options popt;
    popt.counters = opt_.counters;
    popt.max_ranges = opt_.max_ranges;
    auto profiled = client_.profile(*report_.task, shared_object_, popt, opt_.seed);
    report_.profile_ms = ms_since(start);
    if (!profiled)
      return stop_on(profiled.error(), explain_failure(profiled.error(), report_.task, opt_.seed));
    if (opt_.counters && !profiled->counters)
      warn("hardware counters cannot be read here (" + profiled->counters_unavailable +
           "); the diagnosis rests on the timing and the activity records");
    report_.profile = std::move(*profiled);
    return {};
  }

  const profile_command_options& opt_;
  fs::path cache_dir_;
  gpu::worker_client client_;
  profile_report report_;
  std::string candidate_source_;
  std::string shared_object_;
};

void print_text(std::ostream& out, const profile_command_options& opt, const profile_report& r) {
  if (!r.profile)
    return;
  out << "profile of " << opt.candidate.string() << " (task " << r.task->name << ") on "
      << (r.device ? r.device->name : std::string("?")) << ", " << r.arch << "\n\n";
  out << gpu::kernel_table(*r.profile) << "\n";
  out << gpu::describe_diagnosis(r.diagnosis);
  if (r.diagnosis.hardware.bytes_waste >= 0)
    out << "waste: " << format_number(r.diagnosis.hardware.dram_bytes) << " bytes moved for the "
        << format_number(r.task->cost.bytes) << " the task needs ("
        << format_number(r.diagnosis.hardware.bytes_waste) << "x)\n";
  if (r.diagnosis.hardware.flops_waste >= 0)
    out << "flops: " << format_number(r.diagnosis.hardware.executed_flops)
        << " fp32 flops executed for the " << format_number(r.task->cost.flops)
        << " the task needs (" << format_number(r.diagnosis.hardware.flops_waste) << "x)\n";
  out << "\nprofiled in " << format_ms(r.profile->profile_ms) << " on the worker ("
      << format_ms(r.profile_ms) << " with the job's round trip)\n";
}

json::object report_json(const profile_command_options& opt, const profile_report& r,
                         const command_result& result) {
  json::object o{{"ok", result.has_value()},
                 {"exit_code", result ? 0 : exit_code_of(result.error())},
                 {"manifest", opt.task.string()},
                 {"candidate", opt.candidate.string()},
                 {"arch", r.arch}};
  if (r.task) {
    o["task"] = r.task->name;
    o["cost"] = json::object{{"flops", r.task->cost.flops}, {"bytes", r.task->cost.bytes}};
  }
  if (r.device)
    o["device"] = to_json(*r.device);
  if (r.peaks)
    o["peaks"] = json::object{{"gbps", r.peaks->dram_gbps}, {"gflops", r.peaks->fp32_gflops}};
  // The profile's own kernel time stands in for a timed median (0: none given).
  o["median_ms"] = 0;
  if (r.profile) {
    o["profile"] = json::parse(gpu::encode_profile(*r.profile));
    o["diagnosis"] = json::parse(gpu::encode_diagnosis(r.diagnosis));
  }
  o["phases_ms"] = json::object{
      {"compile", r.compile_ms}, {"calibrate", r.calibrate_ms}, {"profile", r.profile_ms}};
  if (r.failure)
    o["failure"] = to_json(*r.failure);
  if (!result)
    o["error"] = result.error().message;
  return o;
}

} // namespace

CLI::App* add_profile_command(CLI::App& app, profile_command_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Profiles one candidate kernel on the GPU and says what limits it. It compiles the "
      "candidate, runs one call of its ks_forward (inputs drawn as for timing, L2 flushed "
      "before it) under CUPTI: every kernel the call launches with its launch configuration "
      "and time, and for each the hardware counters (DRAM bytes and throughput, L1/L2 hit "
      "rates and throughput, SM throughput, achieved occupancy, warp stalls, pipes, spills) "
      "where the GPU lets them be read. Then it prints the per-kernel table and the "
      "diagnosis: the bottleneck class (memory, cache, compute, latency, occupancy, launch, "
      "at_roofline) with its evidence (metric, value, threshold) and the waste (bytes moved and "
      "flops executed against the task's minimum). The candidate is not verified: run `eval` "
      "for that. Results go to stdout, progress to stderr.");
  cmd->add_option("TASK.toml", opt.task, "Task manifest (TOML)")->required()->type_name("");
  cmd->add_option("CANDIDATE.cu", opt.candidate, "Candidate CUDA source exporting ks_forward")
      ->required()
      ->type_name("");
  cmd->add_flag("--json", opt.json,
                "Print one JSON object (also on failure) instead of text: the profile, the "
                "diagnosis, the task's cost and the device's peaks");
  cmd->add_option("--arch", opt.arch,
                  "nvcc architecture, e.g. sm_90a (default: the device's own). With --arch the "
                  "candidate is compiled before a GPU is needed, so compile errors are found on "
                  "a machine without one")
      ->type_name("SM");
  cmd->add_flag("--no-counters{false}", opt.counters,
                "Record the kernels only (activity records), no hardware counters");
  cmd->add_option("--max-ranges", opt.max_ranges,
                  "A call launching more kernels than this is profiled as one range around the "
                  "whole call instead of one range per kernel (1 to 4096)")
      ->capture_default_str()
      ->check(within(1, 4096, ""))
      ->type_name("N");
  cmd->add_option("--seed", opt.seed, "Seed of the inputs")
      ->capture_default_str()
      ->check(within(0, 18446744073709551615.0, ""))
      ->type_name("N");
  cmd->add_option("--cache-dir", opt.cache_dir,
                  "Cache folder for compiled kernels and device calibrations (default: "
                  "$XDG_CACHE_HOME/kernelskill or ~/.cache/kernelskill)")
      ->type_name("DIR");
  cmd->add_option("--device", opt.device, "CUDA device index (0 to 1023)")
      ->capture_default_str()
      ->check(within(0, 1023, ""))
      ->type_name("N");
  cmd->add_option("--worker", opt.worker,
                  "Bench worker executable (default: ks-bench-worker beside kernelskill, else "
                  "$KS_WORKER, else PATH)")
      ->type_name("PATH");
  cmd->add_option("--job-timeout", opt.job_timeout_s,
                  "Watchdog of each worker job in seconds, 0.001 to 86400 (default: 30 info, "
                  "60 calibrate, 60 profile)")
      ->check(within(0.001, 86400, "seconds"))
      ->type_name("SECONDS");
  cmd->add_flag("--sandbox", opt.sandbox,
                "Run the bench worker and nvcc inside bubblewrap (bwrap)");
  cmd->add_flag("--allow-vendor-libraries", opt.allow_vendor_libraries,
                "Profile a candidate that needs or loads a vendor library (cuBLAS, cuDNN, ...) "
                "instead of failing it with vendor_library (exit 23); the profile's notes name "
                "the libraries");
  cmd->footer(exit_code_help(command_codes::profile(), help_width()));
  return cmd;
}

command_result run_profile(const profile_command_options& opt) {
  profiling p(opt);
  command_result result = p.run();
  p.finish();
  const profile_report& report = p.report();
  if (opt.json)
    std::cout << pretty(report_json(opt, report, result));
  else if (result)
    print_text(std::cout, opt, report);
  std::cout.flush();
  return result;
}

} // namespace ks::cli
