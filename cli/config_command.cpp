// `kernelskill config`: the commented defaults, or a check of a config file that goes as far as
// `run` would before it needs a GPU: the file's keys and values, then campaign.tasks resolved
// and every manifest it matches loaded, then actors::preflight (the checks `run` itself makes
// through the same function). "ok" means `run` gets as far as the GPUs.

#include "cli/config_command.hpp"

#include "campaign/campaign_tasks.hpp"
#include "campaign/preflight.hpp"
#include "cli/config_loading.hpp"
#include "cli/environment.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "config/campaign_config.hpp"
#include "report/torch_baselines.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

int64_t count_lines(const std::string& text) {
  return std::count(text.begin(), text.end(), '\n') + (text.ends_with('\n') ? 0 : 1);
}

// Prints the problems, one FILE:LINE:COL line each, on stdout as "ok" would be, unprefixed so
// that editors and grep find the positions; returns the task error that main reports.
tl::unexpected<command_error> invalid(const fs::path& file, const std::string& problems,
                                      const std::string& what, const std::string& hint = {}) {
  std::cout << problems << (problems.ends_with('\n') ? "" : "\n") << hint << std::flush;
  int64_t lines = count_lines(problems);
  return stop(stop_reason::task, file.string() + ": " + what + " (" + std::to_string(lines) +
                                     (lines == 1 ? " problem)" : " problems)"));
}

std::string relative_to_cwd(const fs::path& path) {
  std::error_code ec;
  fs::path relative = fs::relative(path, fs::current_path(ec), ec);
  return ec || relative.empty() ? path.string() : relative.string();
}

} // namespace

CLI::App* add_config_command(CLI::App& app, config_options& opt) {
  const size_t width = help_width();
  CLI::App* cmd = app.add_subcommand(
      "config",
      "Prints the default config, or checks one. --defaults prints the commented default "
      "campaign config; --check FILE checks a config file as far as `run` goes before it needs a "
      "GPU: every unknown key, wrong type "
      "and out-of-range value, then campaign.tasks resolved against the file's folder and "
      "every manifest it matches loaded, then every other check `run` makes before it needs a "
      "GPU: the search limits and policy, the output folder (in use by another run, holding "
      "something else, not writable), the skills, the skill memory's folder, the model's "
      "prompts, API key variable and replay folder, the sandbox, nvcc, kernelskill/abi.h and "
      "the bench worker. Every problem is printed at "
      "once, a manifest's as FILE:LINE:COL: message, and counted. A config that does not set "
      "campaign.tasks is refused: a campaign names its tasks. A valid file prints \"ok\" and "
      "the tasks it would run: `run` gets as far as the GPUs.");
  CLI::Option* defaults =
      cmd->add_flag("--defaults", opt.defaults,
                    "Print the default config, every option with its description, accepted "
                    "values and default (a valid config file: redirect it to start one)");
  CLI::Option* check =
      cmd->add_option("--check", opt.check, "Check this config file and the tasks it names")
          ->type_name("FILE");
  cmd->add_flag("--overwrite", opt.overwrite,
                "Check as `run --overwrite` would: an output folder that holds something else "
                "is no problem");
  defaults->excludes(check);
  cmd->footer(exit_code_help(command_codes::files_only(), width));
  return cmd;
}

command_result run_config(const config_options& opt) {
  if (opt.defaults) {
    std::cout << config::default_config_text() << std::flush;
    return {};
  }
  if (opt.check.empty())
    return stop(stop_reason::usage, "config: give --defaults or --check FILE");
  auto loaded = load_config_for_command(opt.check);
  if (!loaded) {
    if (loaded.error().reason == stop_reason::task) {
      std::string hint = other_kind_hint(opt.check, "config");
      return invalid(opt.check, loaded.error().message, "invalid config",
                     hint.empty() ? std::string() : "  (" + hint + ")\n");
    }
    return tl::unexpected(loaded.error());
  }
  // Every problem at once: the tasks, the baselines, then what `run` checks before it needs a
  // GPU (campaign/preflight.hpp), each counted once.
  std::string problems;
  int64_t count = 0;
  std::string hint;
  auto tasks = campaign::load_campaign_tasks(*loaded);
  if (!tasks) {
    if (tasks.error().code() == engine::errc::not_found)
      hint = "  (campaign.tasks: globs and folders are relative to the config's folder, " +
             relative_to_cwd(loaded->source.parent_path()) + ")\n";
    problems += tasks.error().message() + "\n";
    count += count_lines(tasks.error().message());
  }
  // The torch baselines, read and checked against the tasks as `run` does before it starts.
  std::optional<report::torch_baselines> baselines;
  std::vector<std::string> baseline_warnings;
  if (fs::path file = loaded->torch_baselines_file(); !file.empty()) {
    auto read = report::read_torch_baselines(file);
    if (!read) {
      problems += "report.torch_baselines: " + read.error().message() + "\n";
      ++count;
    } else {
      if (tasks)
        baseline_warnings = report::check_shapes(*read, *tasks);
      baselines = std::move(*read);
    }
  }
  campaign::run_options as_run;
  as_run.include_dir = include_dir_for_compiler(); // as `run` finds kernelskill/abi.h
  as_run.foreign =
      opt.overwrite ? report::foreign_output::overwrite : report::foreign_output::refuse;
  for (const campaign::campaign_error& e : campaign::preflight(*loaded, as_run)) {
    problems += e.message() + "\n";
    ++count;
  }
  if (count > 0) {
    std::cout << problems << hint << std::flush;
    return stop(stop_reason::task, opt.check.string() + ": `run` would stop (" +
                                       std::to_string(count) +
                                       (count == 1 ? " problem)" : " problems)"));
  }
  std::cout << "ok: " << tasks->size() << (tasks->size() == 1 ? " task" : " tasks")
            << ", results in " << relative_to_cwd(loaded->output_dir()) << "\n";
  for (const engine::task& t : *tasks)
    std::cout << "  " << t.name << "  " << relative_to_cwd(t.manifest_path) << "\n";
  if (baselines) {
    int64_t compared = 0;
    for (const engine::task& t : *tasks)
      compared += report::compare_with_torch(&*baselines, t.name, 1.0).speedup_vs_eager > 0;
    std::cout << "torch baselines: " << relative_to_cwd(baselines->source) << ", measured on "
              << baselines->device << " (torch " << baselines->torch_version << "): " << compared
              << " of " << tasks->size() << " tasks have an eager time\n";
    for (const std::string& w : baseline_warnings)
      std::cout << "  warning: " << w << "\n";
  }
  std::cout << std::flush;
  return {};
}

} // namespace ks::cli
