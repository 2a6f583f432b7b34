// kernelskill's command line. Each subcommand parses into its options struct and returns a
// command_result; only this file turns a result into an exit code (see exit_code_help()).

#include "cli/command_result.hpp"
#include "cli/devices_command.hpp"
#include "cli/eval_command.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  using namespace ks::cli;
  CLI::App app{"kernelskill: GPU kernel optimization. Compiles, verifies and times CUDA "
               "kernels against a task's reference on this machine's GPUs.",
               "kernelskill"};
  app.set_version_flag("--version", std::string("kernelskill ") + KS_VERSION);
  app.require_subcommand(1);
  app.footer(exit_code_help());

  devices_options devices;
  CLI::App* devices_cmd = add_devices_command(app, devices);
  eval_options eval;
  CLI::App* eval_cmd = add_eval_command(app, eval);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end parsing with code 0; every other parse error is a usage error.
    return app.exit(e) == 0 ? 0 : 1;
  }

  try {
    command_result result;
    if (devices_cmd->parsed())
      result = run_devices(devices);
    else if (eval_cmd->parsed())
      result = run_eval(eval);
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
