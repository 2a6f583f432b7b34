#include "cli/version.hpp"

#include "cli/environment.hpp"
#include "cli/version_info.hpp" // generated: KS_COMMIT
#include "gpu/compiler.hpp"

#include <filesystem>

namespace ks::cli {

namespace {

// Returns the line of `nvcc --version` that names the release ("Cuda compilation tools,
// release 13.0, V13.0.88"), or the whole text when there is no such line.
std::string release_line(const std::string& text) {
  size_t at = text.find("release ");
  if (at == std::string::npos)
    return text;
  size_t start = text.rfind('\n', at);
  size_t end = text.find('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

} // namespace

std::string version_line() {
  return std::string("kernelskill ") + KS_VERSION + " (commit " + KS_COMMIT + ")";
}

std::string version_text() {
  std::string text = version_line() + "\n";
  text += std::string("built with CUDA ") + KS_CUDA_VERSION + "\n";
  // The compiler's own lookup: what `run` and `eval` would use on this machine.
  gpu::compiler_options options;
  options.include_dir = include_dir_for_compiler();
  // A folder that is never created: create() only looks into it for stale builds.
  options.cache_dir = std::filesystem::temp_directory_path() / "kernelskill-version-probe";
  auto compiler = gpu::compiler::create(options);
  if (compiler)
    text += "nvcc: " + compiler->options().nvcc.string() + " (" +
            release_line(compiler->nvcc_version()) + ")\n";
  else
    text += "nvcc: not usable here: " + compiler.error().message() + "\n";
  text += "architecture: the GPU's own by default (asked from the bench worker); sm_90a for "
          "`run --dry-run`; `--arch SM` chooses another\n";
  return text;
}

} // namespace ks::cli
