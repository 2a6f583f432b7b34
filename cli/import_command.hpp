#pragma once

#include "cli/command_result.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill import`.
struct import_options {
  std::vector<std::string> paths;  ///< problem files, folders of them, or FILE.py:NAME
  std::filesystem::path out;       ///< where the manifests and campaign.toml are written
  std::vector<std::string> inputs; ///< --input: example inputs of FILE.py:NAME, in order
  std::string init;                ///< --init: the constructor's arguments (a Python literal)
  std::string python;              ///< --python; empty: $KS_PYTHON, else python3
  bool verify = false;             ///< check each reference against its module on the GPU
  bool eval_mode = false;          ///< --eval: the modules in eval mode, as inference runs them
  std::string arch = "sm_90a";     ///< what references are compiled for (--verify)
  std::filesystem::path cache_dir; ///< empty: the default compile cache
  std::string devices = "0";       ///< the GPUs --verify runs on: "0", "0,1,2,3"
};

/// Adds `import` to `app`, options stored in `opt`.
CLI::App* add_import_command(CLI::App& app, import_options& opt);

/// Imports every problem of `opt.paths` into opt.out: one manifest each (written by
/// tools/ks_import.py, then loaded by the engine's own manifest loader), and campaign.toml
/// over those that load (and, with opt.verify, agree with their module on the GPU). Prints one
/// line per problem. Fails with stop_reason::task (2) when some problem was not imported,
/// environment (3) when Python, torch or nvcc is missing.
[[nodiscard]] command_result run_import(const import_options& opt);

/// Returns the folder of the Python tools: $KS_TOOLS_DIR, else share/kernelskill/tools beside
/// the program, else the source tree's tools/ this binary was built from.
std::filesystem::path default_tools_dir();

/// Returns the Python interpreter to run the tools with: `given`, else $KS_PYTHON, else
/// "python3" (searched in PATH).
std::string python_or_default(const std::string& given);

} // namespace ks::cli
