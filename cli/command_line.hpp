#pragma once

// Checks a command line before CLI11 parses it, so that a typo gets a suggestion rather than
// CLI11's generic message: an unknown command ("kernelskill rn": did you mean 'run'?), an
// unknown option of the command it is given to ("config --default": did you mean
// '--defaults'?), an option given before the command that belongs to one ("kernelskill
// --dry-run run ..."). Also the validators that keep numeric options within sane bounds, with
// messages that name the bounds and the unit.

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ks::cli {

/// Returns why `args` (argv without the program name) cannot be a command line of `app`, with
/// a suggestion where one is close; nullopt when every command and option is known (CLI11
/// then checks values and counts). `--help` after an unknown command is still an error.
std::optional<std::string> check_command_line(const CLI::App& app,
                                              const std::vector<std::string>& args);

/// Returns the command (and subcommand) that `args` names, as "run" or "task check"; empty
/// when none is named. Used to point a usage error at the right --help.
std::string command_path(const CLI::App& app, const std::vector<std::string>& args);

/// Returns the command of `app` named by `path` ("task check"), or nullptr.
const CLI::App* find_command(const CLI::App& app, const std::vector<std::string>& path);

/// Returns the names of the commands below `app`, as "run, status, inspect"; empty if none.
std::string command_names(const CLI::App& app);

/// Returns the words of `text`, split at spaces ("task check" -> {"task", "check"}).
std::vector<std::string> split_words(const std::string& text);

/// Returns a validator that accepts numbers from `low` to `high` inclusive, `unit` naming
/// them in its message ("seconds"): "must be from 0 to 3600 seconds, not -1".
CLI::Validator within(double low, double high, const std::string& unit);

} // namespace ks::cli
