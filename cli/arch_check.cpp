#include "cli/arch_check.hpp"

#include "cli/environment.hpp"
#include "gpu/child_process.hpp"
#include "gpu/compiler.hpp"

#include <cctype>
#include <sstream>
#include <vector>

namespace ks::cli {

namespace {

// Returns "sm_90" for "sm_90a": the name nvcc lists.
std::string base_of(const std::string& arch) {
  std::string base = arch;
  if (!base.empty() && (base.back() == 'a' || base.back() == 'f'))
    base.pop_back();
  return base;
}

bool well_formed(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0)
    return false;
  std::string base = base_of(arch).substr(3);
  if (base.size() < 2)
    return false;
  for (char c : base)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

// Returns the architectures `nvcc --list-gpu-code` names ("sm_75", ...); empty when nvcc is
// missing or cannot list them (then compiling says what is wrong).
std::vector<std::string> listed_by_nvcc(const std::string& arch) {
  gpu::compiler_options options;
  options.arch = arch;
  options.include_dir = include_dir_for_compiler();
  options.cache_dir = std::filesystem::temp_directory_path() / "kernelskill-arch-probe";
  auto compiler = gpu::compiler::create(options);
  if (!compiler)
    return {};
  auto listed = gpu::run_to_completion({compiler->options().nvcc.string(), "--list-gpu-code"},
                                       std::chrono::seconds(30));
  if (!listed || !listed->status.success())
    return {};
  std::vector<std::string> names;
  std::istringstream words(listed->out);
  std::string word;
  while (words >> word)
    if (word.rfind("sm_", 0) == 0)
      names.push_back(word);
  return names;
}

} // namespace

command_result check_arch(const std::string& arch) {
  if (!well_formed(arch))
    return stop(
        stop_reason::usage,
        "--arch " + arch +
            ": not an nvcc architecture; write sm_<digits> with an "
            "optional 'a' or 'f' suffix: sm_90a (H100, H200), sm_100a (B200), sm_80 (A100)");
  std::vector<std::string> known = listed_by_nvcc(arch);
  if (known.empty())
    return {};
  for (const std::string& name : known)
    if (name == base_of(arch))
      return {};
  std::string list;
  for (const std::string& name : known)
    list += (list.empty() ? "" : ", ") + name;
  return stop(stop_reason::usage, "--arch " + arch + ": this nvcc does not compile for " +
                                      base_of(arch) + "; it knows " + list +
                                      " (with an 'a' or 'f' suffix where the GPU has one)");
}

} // namespace ks::cli
