// kernelskill's command line. Each subcommand parses into its options struct and returns a
// command_result; only this file turns a result into an exit code (cli/exit_codes.hpp holds
// the one table every command obeys).
//
// A command line is checked before CLI11 parses it (cli/command_line.hpp), so that a typo of
// a command or an option is a usage error (1) with a suggestion, even when --help follows it.
//
// Ctrl-C and SIGTERM during `run`: the first only sets the stop flag, which the campaign
// polls every 100 ms; the campaign then says what it keeps and stops at the next step. The
// second leaves at once with 130. The handler does nothing but async-signal-safe things (an
// atomic store, write, _exit). Bench workers and nvcc run in their own process groups, so a
// terminal's Ctrl-C reaches only us.

#include "cli/command_line.hpp"
#include "cli/command_result.hpp"
#include "cli/config_command.hpp"
#include "cli/devices_command.hpp"
#include "cli/eval_command.hpp"
#include "cli/exit_codes.hpp"
#include "cli/export_command.hpp"
#include "cli/help_format.hpp"
#include "cli/import_command.hpp"
#include "cli/profile_command.hpp"
#include "cli/result_json.hpp"
#include "cli/run_command.hpp"
#include "cli/skills_command.hpp"
#include "cli/status_command.hpp"
#include "cli/task_command.hpp"
#include "cli/task_show_command.hpp"
#include "cli/version.hpp"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>

namespace {

std::atomic<bool> stop_requested{false};
// What the second Ctrl-C says, chosen before the handler is installed.
const char* quit_message = "";

void write_stderr(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

extern "C" void on_interrupt(int) {
  if (stop_requested.exchange(true)) {
    write_stderr(quit_message);
    ::_exit(static_cast<int>(ks::cli::stop_reason::interrupted));
  }
}

void install_interrupt_handler(bool dry_run) {
  quit_message = dry_run
                     ? "\nkernelskill: interrupted again: quitting now (a dry run keeps nothing "
                       "but the compile cache)\n"
                     : "\nkernelskill: interrupted again: quitting now; every finished step is in "
                       "the store, the work in flight is redone when the same command resumes\n";
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// A script that asked for JSON reads stdout as one object, failure or not: commands that
// write no report of their own on failure answer with failure_json (stderr still says it).
void print_json_failure(int code, const std::string& message) {
  std::cout << ks::cli::pretty(ks::cli::failure_json(code, message)) << std::flush;
}

bool asks_for_json(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--json") != args.end();
}

// Prints a usage error and points at the --help of the command the line names.
int usage_error(const CLI::App& app, const std::vector<std::string>& args,
                const std::string& message) {
  std::string command = ks::cli::command_path(app, args);
  std::string help = "kernelskill " + (command.empty() ? std::string() : command + " ") + "--help";
  std::cerr << "kernelskill: " << message << "\n  see `" << help << "`" << std::endl;
  const int code = static_cast<int>(ks::cli::stop_reason::usage);
  if (asks_for_json(args))
    print_json_failure(code, message);
  return code;
}

// `kernelskill help [COMMAND...]`: the help of the program or of one command.
int print_help(const CLI::App& app, const std::vector<std::string>& path) {
  const CLI::App* command = ks::cli::find_command(app, path);
  if (command == nullptr) {
    std::string words;
    for (const std::string& w : path)
      words += (words.empty() ? "" : " ") + w;
    // The same message (with a suggestion) as the command line itself would give.
    auto why = ks::cli::check_command_line(app, path);
    return usage_error(app, {}, why ? *why : "no command '" + words + "'");
  }
  std::string name = "kernelskill";
  for (const std::string& w : path)
    name += " " + w;
  // The formatter, not App::help(): that one shows the help of the command parsed, `help`.
  std::cout << command->get_formatter()->make_help(command, name, CLI::AppFormatMode::Normal);
  return 0;
}

/// The whole program but its last-resort handler (main's).
int run_main(int argc, char** argv) {
  using namespace ks::cli;
  const size_t width = help_width();
  CLI::App app{"kernelskill searches for the fastest correct CUDA kernel of each task of a "
               "campaign (an operator with fixed shapes and a reference kernel), measuring every "
               "candidate on this machine's GPUs against the task's reference, and compiles, "
               "verifies and times single kernels. Start with `kernelskill run "
               "configs/quickstart.toml`; without a GPU, `kernelskill run configs/quickstart.toml "
               "--dry-run` plans and compiles one round.",
               "kernelskill"};
  app.formatter(std::make_shared<help_formatter>(width));
  app.set_version_flag("--version", std::function<std::string()>(version_text),
                       "Print the version, the commit, the CUDA toolkit and the default "
                       "architecture");
  app.require_subcommand(1);
  run_command_options run;
  CLI::App* run_cmd = add_run_command(app, run);
  output_dir_options status;
  CLI::App* status_cmd = add_status_command(app, status);
  output_dir_options inspect;
  CLI::App* inspect_cmd = add_inspect_command(app, inspect);
  output_dir_options report;
  CLI::App* report_cmd = add_report_command(app, report);
  config_options config;
  CLI::App* config_cmd = add_config_command(app, config);
  devices_options devices;
  CLI::App* devices_cmd = add_devices_command(app, devices);
  eval_options eval;
  CLI::App* eval_cmd = add_eval_command(app, eval);
  profile_command_options profile;
  CLI::App* profile_cmd = add_profile_command(app, profile);
  import_options import_opt;
  CLI::App* import_cmd = add_import_command(app, import_opt);
  export_options export_opt;
  CLI::App* export_cmd = add_export_command(app, export_opt);
  task_options task;
  task_commands task_cmds = add_task_command(app, task);
  task_show_options task_show;
  CLI::App* task_show_cmd = add_task_show_command(*app.get_subcommand("task"), task_show);
  skills_options skills;
  CLI::App* skills_cmd = add_skills_command(app, skills);
  std::vector<std::string> help_path;
  CLI::App* help_cmd =
      app.add_subcommand("help", "Prints the help of kernelskill or of a command. E.g. "
                                 "`kernelskill help run`, `kernelskill help task new`.");
  help_cmd->add_option("COMMAND", help_path, "The command (and its subcommand)")->type_name("");
  help_cmd->footer(exit_code_help(command_codes::help(), width));
  // Set last: a command made after it would inherit the whole table as its own footer.
  app.footer(wrap("Run `kernelskill help COMMAND` (or `kernelskill COMMAND --help`) for a "
                  "command's options and the exit codes it can return.",
                  width) +
             "\n\n" + exit_code_help_all(width));

  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto problem = check_command_line(app, args))
    return usage_error(app, args, *problem);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << std::flush;
    return 0;
  } catch (const CLI::RequiredError& e) {
    // A command that needs a subcommand names them, as the program itself does.
    std::string path = command_path(app, args);
    const CLI::App* command = find_command(app, split_words(path));
    std::string subcommands = command != nullptr ? command_names(*command) : std::string();
    if (!subcommands.empty() && std::string(e.what()).find("subcommand") != std::string::npos)
      return usage_error(app, args,
                         (path.empty() ? "a command" : path + ": a subcommand") +
                             std::string(" is required: ") + subcommands);
    return usage_error(app, args, e.what());
  } catch (const CLI::ParseError& e) {
    return usage_error(app, args, e.what());
  }

  command_result result;
  if (help_cmd->parsed()) {
    return print_help(app, help_path);
  } else if (run_cmd->parsed()) {
    install_interrupt_handler(run.dry_run);
    result = run_run(run, stop_requested);
  } else if (status_cmd->parsed()) {
    result = run_status(status);
  } else if (inspect_cmd->parsed()) {
    result = run_inspect(inspect);
  } else if (report_cmd->parsed()) {
    result = run_report(report);
  } else if (config_cmd->parsed()) {
    result = run_config(config);
  } else if (devices_cmd->parsed()) {
    result = run_devices(devices);
  } else if (eval_cmd->parsed()) {
    result = run_eval(eval);
  } else if (profile_cmd->parsed()) {
    result = run_profile(profile);
  } else if (import_cmd->parsed()) {
    result = run_import(import_opt);
  } else if (export_cmd->parsed()) {
    result = run_export(export_opt);
  } else if (task_cmds.check->parsed()) {
    result = run_task_check(task);
  } else if (task_cmds.create->parsed()) {
    result = run_task_new(task);
  } else if (task_show_cmd->parsed()) {
    result = run_task_show(task_show);
  } else if (skills_cmd->parsed()) {
    result = run_skills(skills);
  }
  if (!result) {
    if (!result.error().message.empty())
      std::cerr << "kernelskill: " << result.error().message << std::endl;
    // eval, profile and devices write their report, failure included, themselves.
    bool asked_json = (status_cmd->parsed() && status.json) ||
                      (inspect_cmd->parsed() && inspect.json) ||
                      (task_show_cmd->parsed() && task_show.json);
    if (asked_json && !result.error().json_written)
      print_json_failure(exit_code_of(result.error()), result.error().message);
    return exit_code_of(result.error());
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // One handler for the whole program, building the command line included (CLI11's
  // construction errors, bad_alloc): no exception leaves main.
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kernelskill: internal error: " << e.what() << std::endl;
    return static_cast<int>(ks::cli::stop_reason::environment);
  }
}
