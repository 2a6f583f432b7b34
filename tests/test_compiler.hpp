#pragma once

// The compilers of the tests that build spreads of rendered sources: nvcc for the skill
// templates, family references and hostile candidates, and the host C++ compiler for the CUDA
// emulators' candidates (tests/skills/*_cuda_emulator.hpp). Both cache their outputs by content
// in test::cache_dir(), which every test of every build and clone on the machine shares, so a
// source compiles once until it, its flags, a header it reaches or the compiler change; both
// run one compiler per core.

#include "engine/error.hpp"
#include "gpu/compiler.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace ks::test {

/// Returns nvcc for `arch` with the shared cache (cache_dir() / "nvcc") and the source tree's
/// kernelskill/abi.h, or why there is none (no nvcc: the caller skips with KS_SKIP).
[[nodiscard]] engine::expected<gpu::compiler> shared_compiler(const std::string& arch = "sm_90a");

/// A shared object built by the host compiler, or why not.
struct host_build {
  std::filesystem::path shared_object; ///< empty when the compile failed
  std::string log;                     ///< the compiler's output (a failure's reason)
};

/// Builds each of `sources` with the host compiler ($KS_HOST_CXX, else c++) and `flags` into a
/// shared object, up to one compiler per core at once. Each is cached by content in
/// cache_dir() / "emulator": the key hashes the compiler's version, the flags and the source as
/// its preprocessor expands it with them (every header it reaches), with the source and build
/// trees' paths left out, so that clones share entries. Returns one build per source, in order.
std::vector<host_build> host_compile_all(const std::vector<std::string>& sources,
                                         const std::vector<std::string>& flags);

} // namespace ks::test
