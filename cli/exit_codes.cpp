#include "cli/exit_codes.hpp"

#include "cli/help_format.hpp"
#include "gpu/failure.hpp"

#include <algorithm>
#include <cstdio>

namespace ks::cli {

namespace {

// Why each typed failure happens, in a few words, by the kind's number (gpu/failure.hpp).
std::string_view failure_meaning(gpu::failure_kind kind) {
  using gpu::failure_kind;
  switch (kind) {
  case failure_kind::compile_error:
    return "nvcc rejected the candidate (its diagnostics name your file and line)";
  case failure_kind::load_error:
    return "the shared object does not load or lacks ks_forward";
  case failure_kind::launch_error:
    return "ks_forward returned non-zero or a launch failed (the return code is printed)";
  case failure_kind::illegal_address:
    return "the kernel touched an illegal address";
  case failure_kind::timeout:
    return "a job (or nvcc) ran past its deadline; the worker was killed";
  case failure_kind::wrong_result:
    return "the candidate's outputs differ from the reference (the worst element is printed)";
  case failure_kind::crash:
    return "the bench worker died or cannot be started";
  case failure_kind::escaped_stream:
    return "work ran outside the stream ks_forward was given";
  case failure_kind::no_device:
    return "no CUDA device or driver on this machine (without a GPU: run --dry-run, or eval "
           "--arch SM to compile only)";
  case failure_kind::protocol_error:
    return "the bench worker sent something malformed";
  case failure_kind::out_of_memory:
    return "the task's tensors do not fit on the device";
  case failure_kind::cuda_error:
    return "another CUDA runtime error";
  case failure_kind::vendor_library:
    return "the candidate needs or loads a vendor library (cuBLAS, cuDNN, ...; the libraries "
           "are named): only its own kernels count (--allow-vendor-libraries, or "
           "bench.allow_vendor_libraries, measures it and labels it)";
  case failure_kind::host_fault:
    return "the machine failed, not the candidate (a full or unwritable disk under nvcc or the "
           "compile cache, a bench worker killed from outside twice over, a GPU lost): `run` "
           "retries the step and stops once the fault persists, every finished step saved; run "
           "the same command again once the host is healthy";
  }
  return "";
}

std::vector<exit_code_info> make_table() {
  std::vector<exit_code_info> table = {
      {0, "success", "the command did what it was asked (a dry run: every task would run)"},
      {1, "usage error",
       "an unknown command or option, a bad value (--arch, --progress, ...), or a file or "
       "folder named on the command line that does not exist"},
      {2, "task error",
       "a task manifest or campaign config is invalid (each problem as FILE:LINE:COL) or names "
       "no task; a task cannot run (its reference does not compile or fails against itself, "
       "the planner or coder fails on it); an output folder holds no campaign, or holds "
       "something other than a kernelskill output, or a campaign's results without their store "
       "(run without --overwrite)"},
      {3, "environment error",
       "nvcc or kernelskill/abi.h is missing, a folder cannot be written or is in use by "
       "another run, or an internal error; run: the campaign's outputs (results.json, "
       "report.md) could not be written, or none of this run's model requests succeeded"},
      {5, "damaged store",
       "a campaign's store or the skill memory is damaged: its data file is shorter than its "
       "header says, or records do not match their checksum; the message names them and says "
       "what still holds the campaign (run --overwrite starts a damaged campaign over)"},
  };
  for (gpu::failure_kind kind : gpu::all_failure_kinds())
    table.push_back({gpu::exit_code_for(kind), gpu::to_string(kind), failure_meaning(kind)});
  table.push_back({130, "interrupted",
                   "stopped by Ctrl-C or SIGTERM; a campaign's finished steps are saved and the "
                   "same command resumes it"});
  return table;
}

} // namespace

const std::vector<exit_code_info>& exit_codes() {
  static const std::vector<exit_code_info> table = make_table();
  return table;
}

std::string exit_code_help(const std::vector<int32_t>& codes, size_t width) {
  std::string text = "Exit codes:\n";
  for (const exit_code_info& info : exit_codes()) {
    if (std::find(codes.begin(), codes.end(), info.code) == codes.end())
      continue;
    char head[32];
    std::snprintf(head, sizeof head, "  %-4d ", info.code);
    // The code in a column of its own, the meaning wrapped beside it.
    std::string meaning = wrap(std::string(info.name) + ": " + std::string(info.meaning),
                               width > 27 ? width - 7 : 20);
    std::string indented;
    for (char c : meaning)
      indented += c == '\n' ? std::string("\n       ") : std::string(1, c);
    text += std::string(head) + indented + "\n";
  }
  return text;
}

std::string exit_code_help_all(size_t width) {
  std::vector<int32_t> all;
  for (const exit_code_info& info : exit_codes())
    all.push_back(info.code);
  return exit_code_help(all, width);
}

namespace command_codes {

std::vector<int32_t> run() {
  return {0, 1, 2, 3, 5, 15, 17, 19, 20, 22, 24, 130};
}

std::vector<int32_t> eval() {
  std::vector<int32_t> codes = {0, 1, 2, 3};
  for (gpu::failure_kind kind : gpu::all_failure_kinds())
    codes.push_back(gpu::exit_code_for(kind));
  return codes;
}

std::vector<int32_t> profile() {
  // As eval's: a profile compiles and runs the candidate, and any of that can fail.
  return eval();
}

std::vector<int32_t> devices() {
  return {0, 1, 13, 14, 15, 17, 19, 20, 21, 22};
}

std::vector<int32_t> output_folder() {
  return {0, 1, 2, 3, 5};
}

std::vector<int32_t> files_only() {
  return {0, 1, 2};
}

std::vector<int32_t> task_check() {
  return {0, 1, 2, 3};
}

std::vector<int32_t> task_new() {
  return {0, 1, 3};
}

std::vector<int32_t> help() {
  return {0, 1};
}

} // namespace command_codes

} // namespace ks::cli
