#pragma once

// Running a rendered CUDA candidate (a skill's kernel or a family's reference) on the CPU
// emulator of memops_cuda_emulator.hpp: the source is rewritten for the host compiler (every
// launch a call of ks_emu::launch, every __shared__ declaration a per-block variable),
// compiled by g++ into a shared object cached by content, loaded, and called through
// ks_forward on host tensors of the task's dtypes. Used by memops_skills_test.cpp and
// tests/engine/family_reference_emulator_test.cpp.

#include "engine/task.hpp"
#include "kernelskill/abi.h"
#include "tests/test_compiler.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ks::test {

/// Returns `cuda` rewritten for the host compiler and memops_cuda_emulator.hpp: every launch
/// `k<<<grid, block, smem, stream>>>(args)` becomes ks_emu::launch of a lambda that calls k with
/// the args; every `__shared__ T name[dims];` a per-block variable; `extern __shared__ T
/// name[];` a pointer to the block's dynamic shared memory.
std::string emulation_source(const std::string& cuda);

/// Compiles each of `cudas` (rewritten by emulation_source) for the emulator into a shared
/// object, one host compiler per core, each cached by content (tests/test_compiler.hpp);
/// returns one build per source, in order: its shared object, or empty and the compiler's
/// output.
std::vector<host_build> emulated_all(const std::vector<std::string>& cudas);

/// Compiles `cuda` for the emulator as emulated_all does; returns its shared object, or empty
/// with the compiler's output in `log`.
std::filesystem::path emulated(const std::string& cuda, std::string& log);

/// Returns the descriptor of a contiguous row-major tensor of `shape` at `data`.
ks_tensor contiguous_tensor(void* data, int32_t dtype, const std::vector<int64_t>& shape);

/// What one emulated run gave: the first output's values as doubles, or an error.
struct emulated_run {
  std::vector<double> output; ///< every output's elements, one output after the other
  std::string error;
};

/// The GPU the emulator plays: what the candidate's queries answer (SMs, blocks an SM holds,
/// which also bound a cooperative launch and the clusters that fit) and how many blocks run
/// at once (in whole clusters; every block of a cooperative launch).
struct emulated_gpu {
  int sm_count = 4;
  int blocks_per_sm = 2;
  int concurrent_blocks = 3;
};

/// Runs the candidate in `so` on `inputs` (one list of values per input of `t`, stored at the
/// input's dtype), `calls` times, each tensor `shift` elements into its allocation (1: not
/// 16-byte aligned), with the emulator's block order drawn from `seed`, on `gpu`. Returns the
/// first output of the last call (poisoned before every call: NaN for floats, 0x5a bytes else),
/// or the error: a non-zero code, an emulator failure, or an input the candidate changed.
emulated_run run_emulated(const std::filesystem::path& so, const engine::task& t,
                          const std::vector<std::vector<double>>& inputs, int shift, int calls,
                          uint64_t seed, const emulated_gpu& gpu = {});

/// Says how `got` misses `want` under the task's tolerance (every element within atol + rtol
/// * |want|, the norm-relative error within norm_rel; NaN matches NaN and an infinity itself);
/// empty when it passes.
std::string mismatch(const engine::task& t, const std::vector<double>& got,
                     const std::vector<double>& want);

} // namespace ks::test
