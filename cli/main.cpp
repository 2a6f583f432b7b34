// kernelskill's command line. Each subcommand parses into its options struct and returns a
// command_result; only this file turns a result into an exit code (see exit_code_help()).
//
// Ctrl-C and SIGTERM during `run`: the first only sets the stop flag the campaign polls (the
// work in flight finishes and the state is saved); the second leaves at once with 130. The
// handler does nothing but async-signal-safe things (an atomic store, write, _exit). Bench
// workers and nvcc run in their own process groups, so a terminal's Ctrl-C reaches only us.

#include "cli/command_result.hpp"
#include "cli/config_command.hpp"
#include "cli/devices_command.hpp"
#include "cli/eval_command.hpp"
#include "cli/run_command.hpp"
#include "cli/skills_command.hpp"
#include "cli/status_command.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>

#include <unistd.h>

namespace {

std::atomic<bool> stop_requested{false};

void write_stderr(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

extern "C" void on_interrupt(int) {
  if (stop_requested.exchange(true)) {
    write_stderr("\nkernelskill: interrupted again: exiting now; finished nodes are saved, "
                 "the work in flight is lost\n");
    ::_exit(static_cast<int>(ks::cli::stop_reason::interrupted));
  }
  write_stderr("\nkernelskill: stopping: the work in flight finishes and the state is saved "
               "(Ctrl-C again to quit at once)\n");
}

void install_interrupt_handler() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

} // namespace

int main(int argc, char** argv) {
  using namespace ks::cli;
  CLI::App app{"kernelskill: GPU kernel optimization. Runs campaigns that search for the "
               "fastest correct CUDA kernel of each task, and compiles, verifies and times "
               "single kernels against a task's reference on this machine's GPUs.",
               "kernelskill"};
  app.set_version_flag("--version", std::string("kernelskill ") + KS_VERSION);
  app.require_subcommand(1);
  app.footer(exit_code_help());

  run_command_options run;
  CLI::App* run_cmd = add_run_command(app, run);
  output_dir_options status;
  CLI::App* status_cmd = add_status_command(app, status);
  output_dir_options inspect;
  CLI::App* inspect_cmd = add_inspect_command(app, inspect);
  config_options config;
  CLI::App* config_cmd = add_config_command(app, config);
  devices_options devices;
  CLI::App* devices_cmd = add_devices_command(app, devices);
  eval_options eval;
  CLI::App* eval_cmd = add_eval_command(app, eval);
  skills_options skills;
  CLI::App* skills_cmd = add_skills_command(app, skills);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end parsing with code 0; every other parse error is a usage error.
    return app.exit(e) == 0 ? 0 : 1;
  }

  try {
    command_result result;
    if (run_cmd->parsed()) {
      install_interrupt_handler();
      result = run_run(run, stop_requested);
    } else if (status_cmd->parsed()) {
      result = run_status(status);
    } else if (inspect_cmd->parsed()) {
      result = run_inspect(inspect);
    } else if (config_cmd->parsed()) {
      result = run_config(config);
    } else if (devices_cmd->parsed()) {
      result = run_devices(devices);
    } else if (eval_cmd->parsed()) {
      result = run_eval(eval);
    } else if (skills_cmd->parsed()) {
      result = run_skills(skills);
    }
    if (!result) {
      if (!result.error().message.empty())
        std::cerr << "kernelskill: " << result.error().message << std::endl;
      return exit_code_of(result.error());
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kernelskill: internal error: " << e.what() << std::endl;
    return static_cast<int>(stop_reason::environment);
  }
}
