#pragma once

// The one exit-code table of kernelskill. Every command returns a command_result; main turns
// it into one of these codes, and every --help lists the codes its command can return, each
// with the meaning written here (README.md's table is this one). A new code goes here first.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ks::cli {

/// One documented exit code.
struct exit_code_info {
  int32_t code = 0;
  std::string_view name;    ///< "usage error", or a failure kind's name ("wrong_result")
  std::string_view meaning; ///< what happened and, where it helps, what to do
};

/// Returns every exit code kernelskill uses, in increasing order.
const std::vector<exit_code_info>& exit_codes();

/// Returns the "Exit codes:" section of a command's --help listing `codes` (each must be in
/// exit_codes()), wrapped at `width` columns.
std::string exit_code_help(const std::vector<int32_t>& codes, size_t width = 80);

/// Returns the "Exit codes:" section with every code of exit_codes().
std::string exit_code_help_all(size_t width = 80);

/// The codes each command can return, as its --help lists them.
namespace command_codes {
/// Returns the codes of `run` (a dry run returns only 0, 1, 2, 3 and 130).
std::vector<int32_t> run();
/// Returns the codes of `eval`: every typed failure can come from the candidate, the
/// reference or the worker.
std::vector<int32_t> eval();
/// Returns the codes of `profile`: the candidate's compile and run, and the worker's failures.
std::vector<int32_t> profile();
/// Returns the codes of `devices`: the worker's failures at start and while it calibrates.
std::vector<int32_t> devices();
/// Returns the codes of `status` and `inspect`.
std::vector<int32_t> output_folder();
/// Returns the codes of `config`.
std::vector<int32_t> files_only();
/// Returns the codes of `task` and `task check` (3: no nvcc to compile the reference).
std::vector<int32_t> task_check();
/// Returns the codes of `task new`.
std::vector<int32_t> task_new();
/// Returns the codes of `help`.
std::vector<int32_t> help();
} // namespace command_codes

} // namespace ks::cli
