// `kernelskill run`: loads the config (every problem reported at once, exit 2), hands the
// campaign to actors::run_campaign, and prints its summary. Ctrl-C and SIGTERM only set the
// stop flag (main installs the handler): the campaign lets the work in flight finish, saves
// its state and returns, and this command then exits 130; running it again resumes.

#include "cli/run_command.hpp"

#include "actors/run_campaign.hpp"
#include "cli/environment.hpp"
#include "config/campaign_config.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

namespace ks::cli {

namespace {

// Maps a campaign's failure to the command's, as `devices` and `eval` do: a GPU's worker that
// failed gets its failure kind's code (no_device on a machine without a GPU, crash for a worker
// that cannot start), a missing tool the environment's, config and task problems exit 2.
command_error error_of(const actors::campaign_error& e) {
  if (e.gpu_failure)
    return {stop_reason::failure, *e.gpu_failure, e.message()};
  if (e.environment)
    return {stop_reason::environment, std::nullopt, e.message()};
  switch (e.code()) {
  case engine::errc::invalid_input:
  case engine::errc::not_found:
    return {stop_reason::task, std::nullopt, e.message()};
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

void print_summary(std::ostream& out, const actors::campaign_summary& s,
                   const config::campaign_config& config, bool dry_run) {
  if (dry_run) {
    out << "dry run: planned, coded and compiled one round of " << s.tasks.size()
        << (s.tasks.size() == 1 ? " task" : " tasks") << " in " << format_duration(s.wall_s)
        << "; nothing was measured\n";
    return;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %12s %12s %8s %9s %6s  %s\n", "task", "reference", "best",
                "speedup", "roofline", "nodes", "stop");
  out << line;
  for (const actors::task_summary& t : s.tasks) {
    char speedup[32];
    char roofline[32];
    std::snprintf(speedup, sizeof speedup, "%.2fx", t.speedup);
    std::snprintf(roofline, sizeof roofline, "%.1f%%", t.fraction_of_roofline * 100);
    std::snprintf(
        line, sizeof line, "%-20s %12s %12s %8s %9s %6lld  %s\n", t.name.c_str(),
        or_dash(t.reference_ms, format_ms(t.reference_ms)).c_str(),
        or_dash(t.best_ms, format_ms(t.best_ms)).c_str(), or_dash(t.speedup, speedup).c_str(),
        or_dash(t.fraction_of_roofline, roofline).c_str(), static_cast<long long>(t.nodes),
        t.stop_reason.empty() ? "-" : t.stop_reason.c_str());
    out << line;
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
  out << "wall time: " << format_duration(s.wall_s) << (s.resumed ? " (resumed)" : "") << "\n";
  out << "outputs: " << (config.output_dir() / "results.json").string() << ", report.md, best/\n";
}

} // namespace

CLI::App* add_run_command(CLI::App& app, run_command_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Runs the campaign a config file describes (see `kernelskill config --defaults`): for "
      "every task, a tree search over candidate kernels, each compiled, verified and timed on "
      "the configured GPUs, with live progress on stderr. Writes results.json, report.md and "
      "best/<task>.cu into the config's campaign.output folder, and keeps every step in its "
      "store (<output>/state), so running the same command again resumes a campaign that was "
      "killed or interrupted. Ctrl-C (or SIGTERM) stops cleanly: the work in flight finishes, "
      "the state is saved, exit 130; a second Ctrl-C exits at once (finished nodes are kept). "
      "Prints a summary table on stdout at the end.");
  cmd->add_option("config", opt.config, "Campaign config (TOML)")
      ->required()
      ->type_name("CONFIG.toml");
  cmd->add_flag("--dry-run", opt.dry_run,
                "Plan, code and compile one round of every task and print what would be "
                "measured; needs no GPU (only nvcc) and exits 0");
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
  cmd->add_option("--progress", opt.progress_s,
                  "Seconds between live progress reports on stderr; 0 turns them off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber)
      ->type_name("SECONDS");
  cmd->footer(exit_code_help());
  return cmd;
}

command_result run_run(const run_command_options& opt, std::atomic<bool>& stop_flag) {
  auto loaded = config::load_campaign_config(opt.config);
  if (!loaded)
    return stop(stop_reason::task, loaded.error().message());

  actors::run_options options;
  options.dry_run = opt.dry_run;
  options.arch = !opt.arch.empty() ? opt.arch : opt.dry_run ? std::string("sm_90a") : std::string();
  options.worker_executable = opt.worker;
  options.include_dir = include_dir_for_compiler();
  options.cache_dir = opt.cache_dir;
  options.progress_interval_s = opt.progress_s;
  options.stop_requested = &stop_flag;

  auto summary = actors::run_campaign(*loaded, options);
  if (!summary)
    return tl::unexpected(error_of(summary.error()));
  print_summary(std::cout, *summary, *loaded, opt.dry_run);
  std::cout.flush();
  if (summary->interrupted || stop_flag.load())
    return stop(stop_reason::interrupted, "interrupted: the state is saved in " +
                                              loaded->output_dir().string() +
                                              "; run the same command again to resume");
  // A task that failed (its reference does not compile, crashes or disagrees with itself) is
  // a task error, as --help says, once every other task has run and the outputs are written.
  std::string failed;
  int64_t failures = 0;
  for (const actors::task_summary& t : summary->tasks)
    if (t.failed && !opt.dry_run) {
      ++failures;
      failed += "\n  " + t.name + (t.stop_text.empty() ? std::string() : ": " + t.stop_text);
    }
  if (failures > 0)
    return stop(stop_reason::task, std::to_string(failures) + (failures == 1 ? " task" : " tasks") +
                                       " failed (the other tasks' results are in " +
                                       loaded->output_dir().string() + "):" + failed);
  return {};
}

} // namespace ks::cli
