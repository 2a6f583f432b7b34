#pragma once

#include "cli/command_result.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill export`.
struct export_options {
  std::filesystem::path output;    ///< the campaign's output folder (results.json, best/)
  std::filesystem::path out;       ///< --out: the package folder to write
  std::vector<std::string> tasks;  ///< --task: only these; empty: every task with a winner
  std::string name;                ///< --name: the Python package; empty: from --out's name
  std::filesystem::path manifests; ///< --manifests: where the manifests are now
  std::string python;              ///< --python; empty: $KS_PYTHON, else python3
};

/// Adds `export` to `app`, options stored in `opt`.
CLI::App* add_export_command(CLI::App& app, export_options& opt);

/// Writes a Python package into opt.out from the winners of the campaign in opt.output: their
/// CUDA sources unchanged, a torch.library custom op kernelskill::<task> per task with its
/// binding, fake implementation and checks, the build (setup.py, pyproject.toml, a
/// just-in-time loader) and a README (tools/ks_export.py writes the files from the spec that
/// cli/export_spec.hpp reads). Prints one line per task. Fails with stop_reason::usage for a
/// bad command line, stop_reason::task for what plan_export() refuses or an --out folder that
/// holds files of another origin, stop_reason::environment when Python or the generator is
/// missing or the folder cannot be written.
[[nodiscard]] command_result run_export(const export_options& opt);

} // namespace ks::cli
