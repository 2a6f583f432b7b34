// `kernelskill run`: loads the config (a missing file exits 1, every problem of an invalid one
// at once, exit 2), checks --arch, hands the campaign to actors::run_campaign, and prints its
// summary. Ctrl-C and SIGTERM only set the stop flag (main installs the handler): the campaign
// says what it keeps and stops at the next step, and this command then exits 130; running it
// again resumes. A dry run exits 0 only when every task would run (2 when one would not), so
// that it can gate a CI job.

#include "cli/run_command.hpp"

#include "actors/run_campaign.hpp"
#include "cli/arch_check.hpp"
#include "cli/calibration_cache.hpp"
#include "cli/command_line.hpp"
#include "cli/config_loading.hpp"
#include "cli/environment.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "config/campaign_config.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <vector>

namespace ks::cli {

namespace {

// Maps a campaign's failure to the command's, as `devices` and `eval` do: a GPU's worker that
// failed gets its failure kind's code (no_device on a machine without a GPU, crash for a worker
// that cannot start), a missing tool the environment's, config and task problems exit 2.
command_error error_of(const campaign::campaign_error& e) {
  if (e.gpu_failure)
    return {stop_reason::failure, *e.gpu_failure, e.message()};
  if (e.environment)
    return {stop_reason::environment, std::nullopt, e.message()};
  switch (e.code()) {
  case engine::errc::invalid_input:
  case engine::errc::not_found:
    return {stop_reason::task, std::nullopt, e.message()};
  case engine::errc::damaged:
    return {stop_reason::damaged, std::nullopt, e.message()};
  default:
    return {stop_reason::environment, std::nullopt, e.message()};
  }
}

std::string format_duration(double seconds) {
  char text[64];
  if (seconds < 60)
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  else if (seconds < 3600)
    std::snprintf(text, sizeof text, "%dm %02ds", static_cast<int>(seconds) / 60,
                  static_cast<int>(seconds) % 60);
  else
    std::snprintf(text, sizeof text, "%dh %02dm", static_cast<int>(seconds) / 3600,
                  (static_cast<int>(seconds) % 3600) / 60);
  return text;
}

std::string or_dash(double value, const std::string& text) {
  return value > 0 ? text : std::string("-");
}

// Returns `path` relative to the working directory when it lies below it.
std::string shown(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path base = std::filesystem::current_path(ec);
  if (!ec) {
    std::filesystem::path relative = path.lexically_relative(base);
    if (!relative.empty() && *relative.begin() != "..")
      return relative.string();
  }
  return path.string();
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// Prints what the model cost, when the agents thought with one (llm_usage.json has it all).
void print_model_use(std::ostream& out, const campaign::campaign_summary& s,
                     const std::filesystem::path& folder) {
  if (!s.model_used)
    return;
  char cost[32];
  std::snprintf(cost, sizeof cost, "%.4g", s.model_cost);
  out << "model: " << s.model_requests << " requests (" << s.model_retries << " retries), "
      << s.model_input_tokens << " + " << s.model_output_tokens << " tokens, cost " << cost
      << "; transcripts: " << shown(folder / "transcripts") << "/\n";
  if (!s.model_budget_spent.empty())
    out << "model budget: " << s.model_budget_spent << "\n";
}

void print_dry_run_summary(std::ostream& out, const campaign::campaign_summary& s,
                           const std::string& arch) {
  int64_t failed = 0;
  int64_t not_reached = 0; // interrupted before its round ended: neither would nor would not
  for (const campaign::task_summary& t : s.tasks) {
    failed += t.failed ? 1 : 0;
    not_reached += !t.failed && t.stop_reason == "interrupted" ? 1 : 0;
  }
  const int64_t all = static_cast<int64_t>(s.tasks.size());
  const int64_t would_run = all - failed - not_reached;
  out << "dry run for " << arch << ": ";
  if (s.interrupted && not_reached > 0)
    out << "interrupted: " << (all - not_reached) << " of " << all
        << (all == 1 ? " task" : " tasks") << " checked (" << would_run << " would run, " << failed
        << " would not), " << not_reached << " not reached";
  else
    out << would_run << " of " << all << (all == 1 ? " task" : " tasks") << " would run"
        << (s.interrupted ? " (interrupted after the last)" : "");
  out << "; nothing was measured, no state was saved (" << format_duration(s.wall_s) << ")\n";
  for (const campaign::task_summary& t : s.tasks) {
    if (t.failed)
      out << "  " << t.name << " would not: " << first_line(t.stop_text) << "\n";
    if (t.warnings > 0)
      out << "  " << t.name << ": " << t.warnings << (t.warnings == 1 ? " warning" : " warnings")
          << " about its manifest (above)\n";
  }
  out << "candidates: " << shown(s.dry_run_dir)
      << "/<task>/; every line above: " << shown(s.dry_run_dir / "summary.txt") << "\n";
  print_model_use(out, s, s.dry_run_dir);
}

std::string ratio_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", value);
  return or_dash(value, text);
}

// Prints the final table: per task the reference and best times and the speedup; with torch
// baselines the best time against torch eager and torch.compile too; then the geomeans and
// what each ratio is measured against.
void print_summary(std::ostream& out, const campaign::campaign_summary& s,
                   const config::campaign_config& config) {
  const report::torch_baselines* baselines = s.baselines ? &*s.baselines : nullptr;
  auto torch_columns = [&](const std::string& eager, const std::string& compiled) {
    char text[64];
    std::snprintf(text, sizeof text, " %9s %10s", eager.c_str(), compiled.c_str());
    return baselines != nullptr ? std::string(text) : std::string();
  };
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %12s %12s %8s%s %9s %6s  %s\n", "task", "reference",
                "best", "speedup", torch_columns("vs eager", "vs compile").c_str(), "roofline",
                "nodes", "stop");
  out << line;
  std::vector<double> speedups;
  std::vector<double> vs_eager;
  std::vector<double> vs_compile;
  std::string notes;
  std::string trailing; // tasks slower than torch beyond the noise
  for (const campaign::task_summary& t : s.tasks) {
    char roofline[32];
    std::snprintf(roofline, sizeof roofline, "%.1f%%", t.fraction_of_roofline * 100);
    engine::timing spread{t.best_ms, t.best_p10_ms, t.best_ms, t.best_p10_ms > 0 ? 1 : 0, {}};
    report::torch_comparison tc = report::compare_with_torch(baselines, t.name, t.best_ms, &spread);
    if (tc.trails_compile_beyond_noise || tc.trails_eager_beyond_noise)
      trailing +=
          (trailing.empty() ? "" : ", ") + t.name + " (" +
          (tc.trails_compile_beyond_noise ? "torch.compile" : "eager") + " " +
          ratio_text(tc.trails_compile_beyond_noise ? tc.speedup_vs_compile : tc.speedup_vs_eager) +
          ")";
    speedups.push_back(t.speedup);
    vs_eager.push_back(tc.speedup_vs_eager);
    vs_compile.push_back(tc.speedup_vs_compile);
    if (!tc.note.empty())
      notes += "  " + t.name + ": " + tc.note + "\n";
    std::snprintf(
        line, sizeof line, "%-20s %12s %12s %8s%s %9s %6lld  %s\n", t.name.c_str(),
        or_dash(t.reference_ms, format_ms(t.reference_ms)).c_str(),
        or_dash(t.best_ms, format_ms(t.best_ms)).c_str(), ratio_text(t.speedup).c_str(),
        torch_columns(ratio_text(tc.speedup_vs_eager), ratio_text(tc.speedup_vs_compile)).c_str(),
        or_dash(t.fraction_of_roofline, roofline).c_str(), static_cast<long long>(t.nodes),
        t.stop_reason.empty() ? "-" : t.stop_reason.c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "%-20s %12s %12s %8s%s\n", "geomean", "", "",
                ratio_text(report::geometric_mean(speedups)).c_str(),
                torch_columns(ratio_text(report::geometric_mean(vs_eager)),
                              ratio_text(report::geometric_mean(vs_compile)))
                    .c_str());
  out << line;
  out << "speedup: the best candidate's median time against the task's reference kernel, "
         "timed on the same GPU\n";
  if (baselines != nullptr) {
    out << "vs eager, vs compile: torch "
        << (baselines->torch_version.empty() ? "?" : baselines->torch_version)
        << "'s eager and torch.compile (mode " << baselines->compile_mode
        << ") medians over the best candidate's, from " << shown(baselines->source)
        << ", measured on " << baselines->device << "\n";
    if (std::string note = report::device_mismatch(*baselines, s.gpu_names); !note.empty())
      out << "warning: " << note << "\n";
    if (!notes.empty())
      out << "no torch ratio:\n" << notes;
    out << "slower than torch beyond the noise (the best's p10 above torch's p90): "
        << (trailing.empty() ? "none" : trailing) << "\n";
  }
  out << "candidates: " << s.candidates_verified << " verified, " << s.candidates_timed
      << " timed\n";
  if (!s.gpu_busy_share.empty()) {
    out << "GPU busy share:";
    for (size_t i = 0; i < s.gpu_busy_share.size(); ++i) {
      std::snprintf(line, sizeof line, " %sgpu%zu %.0f%%", i == 0 ? "" : ", ", i,
                    s.gpu_busy_share[i] * 100);
      out << line;
    }
    out << "\n";
  }
  print_model_use(out, s, config.output_dir());
  for (const std::string& w : s.gpu_warnings)
    out << "warning: " << w << "\n";
  if (s.results_unreliable)
    out << "RESULTS UNRELIABLE: a GPU stayed unstable past bench.stability_limit_s (see the "
           "warnings above and gpu_stability.json)\n";
  out << "wall time: " << format_duration(s.wall_s) << (s.resumed ? " (resumed)" : "") << "\n";
  out << "outputs: " << shown(config.output_dir() / "results.json")
      << ", report.md, report.html, best/\n";
}

} // namespace

CLI::App* add_run_command(CLI::App& app, run_command_options& opt) {
  const size_t width = help_width();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Runs or resumes a campaign. The campaign is what a config file describes (start one "
      "from `kernelskill config --defaults`): for every task, a tree search over candidate "
      "kernels, each compiled, verified and timed on the configured GPUs. Progress goes to stderr "
      "(on a terminal a "
      "display updated in place; otherwise a line when it changes), each task's result as it "
      "ends, and a summary table to stdout at the end. Writes results.json, report.md, "
      "report.html (the campaign as pictures, one self-contained file), the bench trace and "
      "best/<task>.cu into the config's campaign.output folder and keeps every step in its "
      "store (<output>/state), so the same command resumes a campaign that was killed or "
      "interrupted.\n"
      "Ctrl-C (or SIGTERM) stops at the next step: the jobs in flight finish and are saved, "
      "exit 130; a second Ctrl-C quits at once (finished steps are kept).\n"
      "--dry-run needs no GPU, only nvcc: per task it compiles the reference, plans and codes "
      "one round and compiles it, printing each step as it happens and writing the candidates "
      "to <output>/dry-run/<task>/. It saves no state, and exits 0 only if every task would "
      "run (2 if a reference does not compile or the planner or coder fails), so it can gate "
      "CI.\n"
      "One run at a time per output folder: a second `run` on a folder in use is refused (exit "
      "3), naming the process that holds it (<output>/.kernelskill.lock; the lock goes when "
      "that process ends, however it ends). A folder that holds something other than a "
      "kernelskill output is refused (exit 2) unless --overwrite is given.\n"
      "Before a campaign starts or resumes, its store is checked whole: a damaged store (its data "
      "file cut short, records that do not match their checksum) is refused (exit 5), naming the "
      "damaged records, and so is a folder that holds a campaign's results without the store "
      "they came from (exit 2): a new campaign would write over them. --overwrite starts over "
      "in both cases, keeping a damaged store as <output>/state.damaged/.");
  cmd->add_option("CONFIG.toml", opt.config, "Campaign config (TOML)")->required()->type_name("");
  cmd->add_flag("--dry-run", opt.dry_run,
                "Compile the references, plan, code and compile one round of every task; "
                "needs no GPU (only nvcc)");
  cmd->add_option("--arch", opt.arch,
                  "nvcc architecture, e.g. sm_90a (default: the GPU's own; with --dry-run, "
                  "sm_90a)")
      ->type_name("SM");
  cmd->add_option("--worker", opt.worker,
                  "Bench worker executable (default: ks-bench-worker beside kernelskill, "
                  "else $KS_WORKER, else PATH)")
      ->type_name("PATH");
  cmd->add_option("--cache-dir", opt.cache_dir,
                  "Compile cache folder (default: <output>/cache, inside campaign.output)")
      ->type_name("DIR");
  cmd->add_option("--baselines", opt.baselines,
                  "Torch baselines file from tools/torch_baselines.py: each task's best time "
                  "is also compared with torch eager and torch.compile (default: the config's "
                  "report.torch_baselines)")
      ->type_name("FILE");
  cmd->add_flag("--overwrite", opt.overwrite,
                "Use campaign.output even when it holds files that are not a kernelskill output "
                "(its results.json, report.md, best/, state/ and cache/ are written; nothing "
                "else in it is touched), or a campaign's results without their store, or a "
                "damaged store (moved to state.damaged/): a new campaign starts there");
  cmd->add_option("--progress", opt.progress_s,
                  "Seconds between progress lines when stderr is not a terminal, 0 to 3600 (on "
                  "a terminal the display updates every second); 0 turns progress off, results "
                  "still print as they come")
      ->capture_default_str()
      ->check(within(0, 3600, "seconds"))
      ->type_name("SECONDS");
  cmd->footer(exit_code_help(command_codes::run(), width));
  return cmd;
}

command_result run_run(const run_command_options& opt, std::atomic<bool>& stop_flag) {
  auto loaded = load_config_for_command(opt.config);
  if (!loaded) {
    std::string hint = other_kind_hint(opt.config, "config");
    if (!hint.empty())
      loaded.error().message += "\n  (" + hint + ")";
    return tl::unexpected(loaded.error());
  }
  if (!opt.arch.empty())
    if (auto ok = check_arch(opt.arch); !ok)
      return ok;
  // A file named on the command line that is not there is a usage error; one the config
  // names is the config's problem (exit 2), found by run_campaign.
  if (std::error_code ec; !opt.baselines.empty() && !std::filesystem::exists(opt.baselines, ec))
    return stop(stop_reason::usage, "--baselines " + opt.baselines.string() +
                                        ": no such file (write one with "
                                        "tools/torch_baselines.py on the GPU host)");

  campaign::run_options options;
  options.dry_run = opt.dry_run;
  options.arch = !opt.arch.empty() ? opt.arch : opt.dry_run ? std::string("sm_90a") : std::string();
  options.worker_executable = opt.worker;
  options.include_dir = include_dir_for_compiler();
  options.cache_dir = opt.cache_dir;
  options.baselines =
      opt.baselines.empty() ? opt.baselines : std::filesystem::absolute(opt.baselines);
  options.progress_interval_s = opt.progress_s;
  options.stop_requested = &stop_flag;
  options.foreign =
      opt.overwrite ? report::foreign_output::overwrite : report::foreign_output::refuse;
  if (opt.dry_run)
    options.gpu_memory = memory_target(cache_dir_or_default(opt.cache_dir), std::nullopt);

  auto summary = actors::run_campaign(*loaded, options);
  if (!summary)
    return tl::unexpected(error_of(summary.error()));
  // A stop during the start (workers, nvcc) leaves no task begun: nothing to sum up.
  bool started = !summary->tasks.empty();
  if (opt.dry_run && started)
    print_dry_run_summary(std::cout, *summary, options.arch);
  else if (started)
    print_summary(std::cout, *summary, *loaded);
  std::cout.flush();
  if (summary->interrupted || stop_flag.load()) {
    if (opt.dry_run && !started)
      return stop(stop_reason::interrupted,
                  "interrupted before the dry run started: it wrote nothing and saves no state");
    if (opt.dry_run)
      return stop(stop_reason::interrupted,
                  "interrupted: a dry run saves no state; the candidates written so far are in " +
                      shown(summary->dry_run_dir));
    if (!started)
      return stop(stop_reason::interrupted,
                  "interrupted before the campaign started: no task ran; the same command "
                  "starts it");
    return stop(stop_reason::interrupted, "interrupted: every finished step is saved in " +
                                              shown(loaded->output_dir() / "state") +
                                              "; run the same command again to resume");
  }
  // A fault of the host that persisted stopped the campaign: no candidate was charged with it.
  if (!summary->host_fault.empty())
    return tl::unexpected(command_error{
        stop_reason::failure, gpu::failure_kind::host_fault,
        "stopped by a fault of the host, not of a candidate: " + summary->host_fault +
            "\nevery finished step is saved in " + shown(loaded->output_dir() / "state") +
            "; run the same command again once the host is healthy: the steps the fault "
            "stopped run again"});
  // Outputs that could not be written are no result, whatever the table above says.
  if (!summary->outputs_error.empty())
    return stop(stop_reason::environment,
                "the campaign's outputs could not be written (" + summary->outputs_error +
                    "); every step is kept in " + shown(loaded->output_dir() / "state") +
                    ": `kernelskill status " + shown(loaded->output_dir()) +
                    " --export DIR` writes them from it, and the same `run` resumes");
  // A model that answered nothing did none of the work the table credits to it. (A dry run
  // says so per task below: a task whose planner failed would not run.)
  if (!opt.dry_run && summary->model_used && summary->model_failed_now > 0 &&
      summary->model_answered_now == 0)
    return stop(stop_reason::environment, "every model request of this run failed (" +
                                              std::to_string(summary->model_failed_now) +
                                              "); the last: " + summary->model_last_error);
  // A task that failed (its reference does not compile, crashes or disagrees with itself; in
  // a dry run, one that would not run) is a task error, as --help says, once every other task
  // has run and the outputs are written.
  std::string failed;
  int64_t failures = 0;
  for (const campaign::task_summary& t : summary->tasks)
    if (t.failed) {
      ++failures;
      // A dry run printed the whole story above (nvcc's diagnostics included): one line here.
      std::string why = opt.dry_run ? first_line(t.stop_text) : t.stop_text;
      failed += "\n  " + t.name + (why.empty() ? std::string() : ": " + why);
    }
  if (failures > 0 && opt.dry_run)
    return stop(stop_reason::task, std::to_string(failures) + (failures == 1 ? " task" : " tasks") +
                                       " would not run:" + failed);
  if (failures > 0)
    return stop(stop_reason::task, std::to_string(failures) + (failures == 1 ? " task" : " tasks") +
                                       " failed (the other tasks' results are in " +
                                       shown(loaded->output_dir()) + "):" + failed);
  return {};
}

} // namespace ks::cli
