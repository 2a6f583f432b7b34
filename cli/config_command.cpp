#include "cli/config_command.hpp"

#include "cli/environment.hpp"
#include "config/campaign_config.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

namespace ks::cli {

CLI::App* add_config_command(CLI::App& app, config_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "config",
      "Prints the commented default campaign config (--defaults), or validates a config file "
      "(--check FILE): every unknown key, wrong type and out-of-range value is printed as "
      "FILE:LINE:COL: message, in file order; a valid file prints \"ok\".");
  CLI::Option* defaults =
      cmd->add_flag("--defaults", opt.defaults,
                    "Print the default config, every option with its description, accepted "
                    "values and default (a valid config file: redirect it to start one)");
  CLI::Option* check =
      cmd->add_option("--check", opt.check, "Validate this config file")->type_name("FILE");
  defaults->excludes(check);
  cmd->footer(exit_code_help());
  return cmd;
}

command_result run_config(const config_options& opt) {
  if (opt.defaults) {
    std::cout << config::default_config_text() << std::flush;
    return {};
  }
  if (opt.check.empty())
    return stop(stop_reason::usage, "config: give --defaults or --check FILE (see --help)");
  auto loaded = config::load_campaign_config(opt.check);
  if (!loaded && loaded.error().code() == config::errc::invalid_input) {
    // One FILE:LINE:COL line per problem, on stdout as "ok" would be, unprefixed so that
    // editors and grep find the positions.
    const std::string& problems = loaded.error().message();
    std::cout << problems << (problems.ends_with('\n') ? "" : "\n") << std::flush;
    auto lines =
        std::count(problems.begin(), problems.end(), '\n') + (problems.ends_with('\n') ? 0 : 1);
    return stop(stop_reason::task, opt.check.string() + ": invalid config (" +
                                       std::to_string(lines) +
                                       (lines == 1 ? " problem)" : " problems)"));
  }
  if (!loaded)
    return stop(stop_reason::task, loaded.error().message());
  std::cout << "ok\n" << std::flush;
  return {};
}

} // namespace ks::cli
