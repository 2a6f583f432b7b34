// `kernelskill eval`: one candidate, start to finish, as the campaign's pipeline does it for
// every node: compile -> verify -> time -> judge against the roofline. The steps run in this
// order on purpose:
//
//   - The device is asked first (unless --arch is given) because its architecture is part of
//     nvcc's command line; with --arch, compiling comes first, so a machine without a GPU
//     still tells whether the candidate compiles.
//   - Reference and candidate compile together (the compile pool runs them in parallel).
//   - The reference is checked against itself before the candidate is judged: a reference
//     that is nondeterministic or leaves outputs unwritten is a broken task (exit 2), not a
//     wrong candidate.
//   - The candidate's trials run one job each, so that progress can be reported per trial
//     and a failing trial is named with the seed that reproduces it (trial i uses seed + i,
//     exactly as one job of several trials would).
//   - Calibration comes before timing so that the roofline floor is known; it is cached per
//     device, so only the first eval on a device pays for it.

#include "cli/eval_command.hpp"

#include "base/text.hpp"
#include "cli/arch_check.hpp"
#include "cli/calibration_cache.hpp"
#include "cli/command_line.hpp"
#include "cli/config_loading.hpp"
#include "cli/environment.hpp"
#include "cli/eval_report.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "cli/result_json.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_client.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

// Returns `path` relative to the working directory when it lies below it: what nvcc's
// diagnostics name, so that an editor opens it from here.
std::string shown(const fs::path& path) {
  std::error_code ec;
  fs::path base = fs::current_path(ec);
  if (!ec) {
    fs::path relative = path.lexically_relative(base);
    if (!relative.empty() && *relative.begin() != "..")
      return relative.string();
  }
  return path.string();
}

std::string without_trailing_newlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  return text;
}

// Checks whether a failure of `kind` says something about the machine or the worker rather
// than about the kernel that was running: such a failure keeps its own exit code even when
// the reference was running.
bool is_environment_failure(gpu::failure_kind kind) {
  using gpu::failure_kind;
  return kind == failure_kind::no_device || kind == failure_kind::protocol_error ||
         kind == failure_kind::cuda_error || kind == failure_kind::out_of_memory;
}

/// Runs the steps of one evaluation and fills its report.
class evaluation {
public:
  explicit evaluation(const eval_options& opt)
    : opt_(opt), cache_dir_(cache_dir_or_default(opt.cache_dir)), client_(worker_for(opt)) {
    report_.manifest = opt.task;
    report_.candidate = opt.candidate;
    report_.arch = opt.arch;
    report_.trials = opt.trials;
    report_.seed = opt.seed;
  }

  // -- the steps, in order --------------------------------------------------------------------

  command_result run() {
    // The inputs first: a typo in a path should not cost a worker start or a compile.
    if (auto ok = read_inputs(); !ok)
      return ok;
    // A sandbox that cannot be made is said before anything runs without it.
    if (opt_.sandbox)
      if (auto sandbox = gpu::probe_sandbox(worker_for(opt_).boundary); !sandbox)
        return stop(stop_reason::environment, sandbox.error().message());
    if (!opt_.arch.empty())
      if (auto ok = check_arch(opt_.arch); !ok)
        return ok;
    // Without --arch, the device says which architecture to compile for.
    if (opt_.arch.empty())
      if (auto ok = open_device(); !ok)
        return ok;
    if (auto ok = compile(); !ok)
      return ok;
    if (!report_.device)
      if (auto ok = open_device(); !ok)
        return ok;
    // A broken reference would make every candidate look wrong: check it first.
    if (auto ok = check_reference(); !ok)
      return ok;
    if (auto ok = verify_candidate(); !ok)
      return ok;
    if (opt_.no_time)
      return {};
    // The peaks give the roofline floor each time is compared with.
    calibrate();
    return time_both();
  }

  /// Asks the worker to exit.
  void finish() {
    auto start = clock_type::now();
    client_.shutdown();
    report_.phases.shutdown = ms_since(start);
  }

  eval_report& report() noexcept { return report_; }

private:
  static gpu::worker_options worker_for(const eval_options& opt) {
    gpu::worker_options w =
        standalone_worker(opt.worker, opt.device, opt.sandbox, opt.cache_dir, opt.job_timeout_s);
    if (opt.allow_vendor_libraries)
      w.vendor_libraries = gpu::vendor_policy::allow;
    return w;
  }

  // Reads --baselines and checks the task's entry against the task's shapes; a missing file
  // is a usage error, a broken one a task error (as a broken manifest is).
  command_result read_baselines() {
    if (opt_.baselines.empty())
      return {};
    auto read = report::read_torch_baselines(opt_.baselines);
    if (!read)
      return stop(read.error().code() == engine::errc::not_found ? stop_reason::usage
                                                                 : stop_reason::task,
                  "cannot use --baselines:\n" + read.error().message());
    for (const std::string& warning : report::check_shapes(*read, {*report_.task}))
      warn(warning);
    report_.baselines = std::move(*read);
    return {};
  }

  // Adds the starts of workers since the last call to the phases.
  void note_worker() {
    if (client_.starts() > report_.phases.worker_starts) {
      report_.phases.worker_start += client_.last_start_ms();
      report_.phases.worker_starts = client_.starts();
    }
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
      // A manifest named on the command line that is not there is a usage error, as a
      // missing candidate is; one that is there but wrong is a task error.
      bool missing =
          task.error().code() == engine::errc::not_found || task.error().code() == engine::errc::io;
      std::string hint = missing ? std::string() : other_kind_hint(opt_.task, "task");
      return stop(missing ? stop_reason::usage : stop_reason::task,
                  "cannot load the task manifest '" + opt_.task.string() + "':\n" +
                      task.error().message() + (hint.empty() ? "" : "\n  (" + hint + ")"));
    }
    report_.task = std::move(*task);
    if (auto ok = read_baselines(); !ok)
      return ok;
    auto reference = engine::read_reference(*report_.task);
    if (!reference)
      return stop(stop_reason::task, "cannot read the task's reference '" +
                                         engine::reference_name(*report_.task) + "'");
    reference_source_ = std::move(*reference);
    return {};
  }

  command_result open_device() {
    progress("starting the bench worker for device " + std::to_string(opt_.device) + "...");
    auto start = clock_type::now();
    double started_before = report_.phases.worker_start;
    auto info = client_.info();
    note_worker();
    // The info job's own time is the worker's CUDA initialization; its start is counted apart.
    report_.phases.device +=
        std::max(0.0, ms_since(start) - (report_.phases.worker_start - started_before));
    if (!info) {
      const gpu::failure& f = info.error();
      if (f.kind != gpu::failure_kind::no_device)
        return stop_on(f, "cannot use device " + std::to_string(opt_.device) + ": " +
                              explain_failure(f, report_.task, opt_.seed));
      std::string message =
          f.message.rfind("no CUDA device", 0) == 0 ? f.message : "no CUDA device: " + f.message;
      if (opt_.arch.empty())
        message += "\n  without a GPU nothing can be verified or timed; to check that the "
                   "candidate compiles, pass --arch (e.g. --arch sm_90a)";
      else
        message +=
            "\n  the candidate compiled for " + opt_.arch + ", but verifying and timing need a GPU";
      return stop_on(f, std::move(message));
    }
    report_.device = *info;
    if (opt_.arch.empty()) {
      report_.arch =
          info->arch.empty() ? gpu::arch_for(info->cc_major, info->cc_minor) : info->arch;
    } else if (!info->arch.empty() && info->arch != opt_.arch) {
      warn("--arch " + opt_.arch + " is not device " + std::to_string(opt_.device) +
           "'s own architecture (" + info->arch + "); the kernels may fail to load");
    }
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
    progress("compiling the reference and the candidate for " + report_.arch + "...");
    std::vector<gpu::compile_request> requests(2);
    requests[0].source = reference_source_;
    // A rendered reference is named after its task: nvcc's lines are the rendered text's.
    bool rendered = !report_.task->reference_source.empty();
    requests[0].label = rendered ? report_.task->name + " reference"
                                 : report_.task->reference_path.filename().string();
    requests[0].source_name =
        rendered ? report_.task->name + "_reference.cu" : shown(report_.task->reference_path);
    requests[1].source = candidate_source_;
    requests[1].label = opt_.candidate.filename().string();
    requests[1].source_name = opt_.candidate.string();
    auto results = compiler->compile_all(requests);
    report_.phases.compile = ms_since(start);
    report_.reference_compile = results[0];
    report_.candidate_compile = results[1];
    // A disk that cannot take nvcc's files says nothing of either source.
    for (const gpu::compile_result& r : results)
      if (r.host_fault) {
        gpu::failure f;
        f.kind = gpu::failure_kind::host_fault;
        f.message = "the host cannot compile: " + without_trailing_newlines(r.diagnostics);
        return stop_on(f, "host_fault: " + f.message);
      }
    if (!results[0].ok)
      return stop(stop_reason::task,
                  "the task's reference '" + engine::reference_name(*report_.task) +
                      "' does not compile for " + report_.arch +
                      (results[0].timed_out ? " (nvcc timed out)" : "") + "; nvcc says:\n" +
                      without_trailing_newlines(results[0].diagnostics));
    if (!results[1].ok) {
      gpu::failure f;
      f.kind = results[1].timed_out ? gpu::failure_kind::timeout : gpu::failure_kind::compile_error;
      f.message =
          results[1].timed_out ? "nvcc ran past its time limit" : "nvcc rejected the source";
      return stop_on(f, std::string(gpu::to_string(f.kind)) + ": the candidate '" +
                            opt_.candidate.string() + "' does not compile for " + report_.arch +
                            (results[1].timed_out ? " (nvcc timed out)" : "") + "; nvcc says:\n" +
                            without_trailing_newlines(results[1].diagnostics));
    }
    return {};
  }

  command_result check_reference() {
    auto start = clock_type::now();
    progress("verifying the reference against itself...");
    gpu::verify_options vopt;
    vopt.trials = 1;
    vopt.seed = opt_.seed;
    const std::string reference = report_.reference_compile->shared_object.string();
    auto checked = client_.verify(*report_.task, reference, reference, vopt);
    note_worker();
    report_.phases.verify += ms_since(start);
    if (!checked) {
      const gpu::failure& f = checked.error();
      if (is_environment_failure(f.kind))
        return stop_on(f, explain_failure(f, report_.task, opt_.seed));
      report_.failure = f;
      return stop(stop_reason::task,
                  "the task's reference fails against itself, so the task is broken (is it "
                  "nondeterministic, or does it leave outputs unwritten?):\n" +
                      explain_failure(f, report_.task, opt_.seed));
    }
    report_.reference_check = *checked;
    return {};
  }

  command_result verify_candidate() {
    auto start = clock_type::now();
    const std::string reference = report_.reference_compile->shared_object.string();
    const std::string candidate = report_.candidate_compile->shared_object.string();
    gpu::verify_result total;
    total.passed = true;
    for (int32_t trial = 0; trial < opt_.trials; ++trial) {
      progress("verifying the candidate (trial " + std::to_string(trial + 1) + "/" +
               std::to_string(opt_.trials) + ")...");
      gpu::verify_options vopt;
      vopt.trials = 1;
      vopt.seed = opt_.seed + static_cast<uint64_t>(trial);
      auto one = client_.verify(*report_.task, reference, candidate, vopt);
      note_worker();
      if (!one || !one->passed) {
        report_.phases.verify += ms_since(start);
        gpu::failure f;
        if (one) {
          f.kind = gpu::failure_kind::wrong_result;
          f.message = "the outputs differ from the reference";
          f.verify = *one;
        } else {
          f = one.error();
        }
        if (f.verify) {
          f.verify->bad_trial = trial;
          f.verify->trials = trial + 1;
        }
        return stop_on(f, explain_failure(f, report_.task, opt_.seed));
      }
      total.trials += one->trials;
      total.max_abs_err = std::max(total.max_abs_err, one->max_abs_err);
      total.max_rel_err = std::max(total.max_rel_err, one->max_rel_err);
      total.norm_rel_err = std::max(total.norm_rel_err, one->norm_rel_err);
      for (const std::string& library : one->vendor_libraries)
        if (std::find(total.vendor_libraries.begin(), total.vendor_libraries.end(), library) ==
            total.vendor_libraries.end())
          total.vendor_libraries.push_back(library);
    }
    report_.phases.verify += ms_since(start);
    report_.verify = total;
    return {};
  }

  void calibrate() {
    auto start = clock_type::now();
    auto peaks = calibrate_cached(client_, *report_.device, cache_dir_, recalibrate::no);
    note_worker();
    report_.phases.calibrate = ms_since(start);
    if (!peaks) {
      report_.calibration_error = std::string("calibration failed: ") +
                                  gpu::to_string(peaks.error().kind) + ": " + peaks.error().message;
      warn(report_.calibration_error + "; the report has no roofline");
      return;
    }
    report_.peaks = *peaks;
  }

  command_result time_both() {
    auto start = clock_type::now();
    gpu::timing_options topt;
    progress("timing the reference...");
    const std::string reference_so = report_.reference_compile->shared_object.string();
    auto reference = client_.time(*report_.task, reference_so, reference_so, topt);
    note_worker();
    if (!reference) {
      report_.phases.time = ms_since(start);
      const gpu::failure& f = reference.error();
      if (is_environment_failure(f.kind))
        return stop_on(f, explain_failure(f, report_.task, opt_.seed));
      report_.failure = f;
      return stop(stop_reason::task, "the task's reference cannot be timed:\n" +
                                         explain_failure(f, report_.task, opt_.seed));
    }
    report_.reference_time = *reference;
    progress("timing the candidate...");
    auto candidate = client_.time(*report_.task, report_.candidate_compile->shared_object.string(),
                                  reference_so, topt);
    note_worker();
    report_.phases.time = ms_since(start);
    if (!candidate)
      return stop_on(candidate.error(),
                     explain_failure(candidate.error(), report_.task, opt_.seed));
    report_.candidate_time = *candidate;
    return {};
  }

  const eval_options& opt_;
  fs::path cache_dir_;
  gpu::worker_client client_;
  eval_report report_;
  std::string candidate_source_;
  std::string reference_source_;
};

} // namespace

CLI::App* add_eval_command(CLI::App& app, eval_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Compiles, verifies and times one candidate kernel. It compiles the candidate and its "
      "task's reference with nvcc (diagnostics name your file "
      "and line), checks the reference against itself, verifies the candidate on freshly drawn "
      "inputs (every element of every output, NaN-poisoned outputs, inputs checked unchanged), "
      "times both (L2 flushed before every call; median, p10, p90), and reports the speedup "
      "over the reference, the roofline floor from the device's calibrated peaks and how much "
      "of it each reaches, the compile times and where the time went. Results go to stdout, "
      "progress to stderr.");
  cmd->add_option("TASK.toml", opt.task, "Task manifest (TOML)")->required()->type_name("");
  cmd->add_option("CANDIDATE.cu", opt.candidate, "Candidate CUDA source exporting ks_forward")
      ->required()
      ->type_name("");
  cmd->add_flag("--json", opt.json, "Print one JSON object (also on failure) instead of text");
  cmd->add_option("--arch", opt.arch,
                  "nvcc architecture, e.g. sm_90a (default: the device's own). With --arch "
                  "the candidate is compiled before a GPU is needed, so compile errors are "
                  "found on a machine without one")
      ->type_name("SM");
  cmd->add_option("--trials", opt.trials,
                  "Correctness trials, each on freshly drawn inputs (1 to 100000)")
      ->capture_default_str()
      ->check(within(1, 100000, "trials"))
      ->type_name("N");
  cmd->add_option("--seed", opt.seed, "Seed of the first trial's inputs; trial i uses seed + i")
      ->capture_default_str()
      ->check(within(0, 18446744073709551615.0, ""))
      ->type_name("N");
  cmd->add_flag("--no-time", opt.no_time, "Verify only: skip calibration and timing");
  cmd->add_option("--cache-dir", opt.cache_dir,
                  "Cache folder for compiled kernels and device calibrations (default: "
                  "$XDG_CACHE_HOME/kernelskill or ~/.cache/kernelskill)")
      ->type_name("DIR");
  cmd->add_option("--device", opt.device, "CUDA device index (0 to 1023)")
      ->capture_default_str()
      ->check(within(0, 1023, ""))
      ->type_name("N");
  cmd->add_option("--worker", opt.worker,
                  "Bench worker executable (default: ks-bench-worker beside kernelskill, "
                  "else $KS_WORKER, else PATH)")
      ->type_name("PATH");
  cmd->add_option("--job-timeout", opt.job_timeout_s,
                  "Watchdog of each worker job in seconds, 0.001 to 86400; a job past it is a "
                  "timeout (exit 15) and the worker is killed (default: 30 info, 60 "
                  "calibrate, 60 verify, 120 time)")
      ->check(within(0.001, 86400, "seconds"))
      ->type_name("SECONDS");
  cmd->add_option("--baselines", opt.baselines,
                  "Torch baselines file from tools/torch_baselines.py: the candidate's time is "
                  "also compared with the task's torch eager and torch.compile times")
      ->type_name("FILE");
  cmd->add_flag("--allow-vendor-libraries", opt.allow_vendor_libraries,
                "Measure a candidate that needs or loads a vendor library (cuBLAS, cuDNN, ... : "
                "anything but the C and C++ runtimes, the CUDA runtime and driver) and name the "
                "libraries in the report, instead of failing it with vendor_library (exit 23): "
                "its time is then not its own kernels' alone");
  cmd->add_flag("--sandbox", opt.sandbox,
                "Run the bench worker inside bubblewrap (bwrap): no network, a read-only file "
                "system but for its own temporary folder (exit 3 if bwrap is missing or "
                "cannot run here); nvcc too, seeing only the system's tools and headers, the "
                "CUDA toolkit and the candidate's folder. Without it the worker still gets a "
                "scrubbed environment, "
                "a private folder and resource limits");
  cmd->footer(exit_code_help(command_codes::eval(), help_width()));
  return cmd;
}

command_result run_eval(const eval_options& opt) {
  auto start = clock_type::now();
  evaluation e(opt);
  command_result result = e.run();
  e.finish();
  eval_report& report = e.report();
  report.phases.total = ms_since(start);
  if (!result)
    report.error = result.error();
  if (opt.json)
    std::cout << pretty(to_json(report));
  else if (report.reference_compile)
    print_text(std::cout, report);
  std::cout.flush();
  return result;
}

} // namespace ks::cli
