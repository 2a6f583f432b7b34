// libFuzzer target: a task manifest (engine/task_manifest.cpp over toml++), written to a file
// and loaded as `task check` and `run` load one: parsed, checked, its family's reference
// rendered and its cost and torch expression derived; then the warnings `task check` prints
// (which read the file again and size the task's tensors). Run by run_fuzzer.sh (ctest "fuzz:
// manifest") with KS_FAMILIES_DIR set to the source's families/. Whatever the bytes, a task
// or a list of FILE:LINE:COL errors, never a signal; a task that loads has its tensors.

#include "engine/bench_memory.hpp"
#include "engine/task_manifest.hpp"
#include "engine/task_warnings.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

// One file, rewritten for every input, in the folder the fuzzer runs in (run_fuzzer.sh's
// build/fuzz/manifest/): a relative `reference` resolves beside it and finds nothing, so a
// family's rendered reference is what most inputs reach.
const fs::path& manifest_file() {
  static const fs::path file = [] {
    fs::path dir = fs::current_path() / "input";
    fs::create_directories(dir);
    return dir / "fuzz.toml";
  }();
  return file;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path& file = manifest_file();
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out)
      std::abort(); // the fuzzer's own folder, not the input: stop rather than test nothing
  }
  auto task = ks::engine::load_task_manifest(file);
  if (!task)
    return 0;
  if (task->name.empty() || task->inputs.empty() || task->outputs.empty())
    __builtin_trap();
  auto warnings = ks::engine::task_warnings(*task, ks::engine::assumed_gpu_memory());
  for (const auto& warning : warnings)
    if (warning.message.empty())
      __builtin_trap();
  return 0;
}
