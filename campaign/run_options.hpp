#pragma once

#include "engine/bench_memory.hpp"
#include "report/output_folder.hpp"

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>

namespace ks::campaign {

/// Options that are not part of the campaign config (they come from the command line).
struct run_options {
  bool dry_run = false;                        ///< plan, code, compile one round; no GPU;
                                               ///< writes <output>/dry-run/, no state
  std::string arch;                            ///< nvcc arch when there is no GPU to ask ("sm_90a")
  std::filesystem::path worker_executable;     ///< empty: gpu::default_worker_executable()
  std::filesystem::path nvcc;                  ///< empty: the compiler's own lookup
  std::filesystem::path include_dir;           ///< where kernelskill/abi.h is; empty: default
  std::filesystem::path cache_dir;             ///< compile cache; empty: <output>/cache
  std::filesystem::path baselines;             ///< torch baselines file; empty: the config's
                                               ///< report.torch_baselines
  double progress_interval_s = 5;              ///< live progress on stderr; 0 = none
  std::atomic<bool>* stop_requested = nullptr; ///< set by a SIGINT handler: stop cleanly
  report::foreign_output foreign =
      report::foreign_output::refuse; ///< an output folder holding something else
  /// A dry run: the GPU whose memory each task's tensors must fit (task warnings); unset:
  /// engine::assumed_gpu_memory()
  std::optional<engine::gpu_memory> gpu_memory;
};

} // namespace ks::campaign
