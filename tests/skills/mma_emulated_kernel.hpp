#pragma once

// Running a rendered tensor-core template on the CPU emulator of matmul_cuda_emulator.hpp (the
// matmul and conv skill tests): the host compiler's flags and a pool of compiles, the loaded
// candidate with the emulator's controls, and host memory that faults past its end.

#include "kernelskill/abi.h"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace ks::test {

/// Host memory that ends at a page that may not be touched: a read or write past the end
/// faults. The start is 16-byte aligned (as cudaMalloc's are), so up to 12 bytes of slack
/// sit before the guard; they hold a canary that check_canary() reads back.
class guarded_buffer {
public:
  explicit guarded_buffer(size_t floats) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = floats * sizeof(float);
    const size_t padded = (bytes_ + 15) / 16 * 16;
    const size_t data_pages = (padded + page - 1) / page;
    mapped_ = (data_pages + 1) * page;
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base_ = static_cast<unsigned char*>(p);
    REQUIRE(mprotect(base_ + data_pages * page, page, PROT_NONE) == 0);
    data_ = base_ + data_pages * page - padded;
    std::memset(data_ + bytes_, 0x5a, padded - bytes_);
    slack_ = padded - bytes_;
  }
  ~guarded_buffer() { munmap(base_, mapped_); }
  guarded_buffer(const guarded_buffer&) = delete;
  guarded_buffer& operator=(const guarded_buffer&) = delete;

  float* data() noexcept { return reinterpret_cast<float*>(data_); }

  /// Checks that nothing wrote the slack between the end and the guard page.
  bool canary_intact() const {
    for (size_t i = 0; i < slack_; ++i)
      if (data_[bytes_ + i] != 0x5a)
        return false;
    return true;
  }

private:
  unsigned char* base_ = nullptr;
  unsigned char* data_ = nullptr;
  size_t mapped_ = 0;
  size_t bytes_ = 0;
  size_t slack_ = 0;
};

/// A rendered template compiled for the emulator and loaded.
class emulated_candidate {
public:
  using forward_fn = int (*)(const ks_tensor*, int32_t, ks_tensor*, int32_t, void*);
  using configure_fn = void (*)(int, int, uint64_t);
  using error_fn = const char* (*)();
  using block_counts_fn = void (*)(int64_t*, int64_t*);

  explicit emulated_candidate(const std::filesystem::path& shared_object) {
    handle_ = dlopen(shared_object.c_str(), RTLD_NOW | RTLD_LOCAL);
    INFO(dlerror());
    REQUIRE(handle_ != nullptr);
    forward = reinterpret_cast<forward_fn>(dlsym(handle_, "ks_forward"));
    configure = reinterpret_cast<configure_fn>(dlsym(handle_, "ks_emulator_configure"));
    error = reinterpret_cast<error_fn>(dlsym(handle_, "ks_emulator_error"));
    block_counts = reinterpret_cast<block_counts_fn>(dlsym(handle_, "ks_emulator_block_counts"));
    REQUIRE(forward != nullptr);
    REQUIRE(configure != nullptr);
    REQUIRE(error != nullptr);
    REQUIRE(block_counts != nullptr);
  }
  ~emulated_candidate() { dlclose(handle_); }
  emulated_candidate(const emulated_candidate&) = delete;
  emulated_candidate& operator=(const emulated_candidate&) = delete;

  forward_fn forward = nullptr;
  configure_fn configure = nullptr;
  error_fn error = nullptr;
  block_counts_fn block_counts = nullptr;

  /// Returns how many blocks of the last run issued tensor-core products.
  int64_t tensor_core_blocks() const {
    int64_t run = 0, busy = 0;
    block_counts(&run, &busy);
    return busy;
  }

private:
  void* handle_ = nullptr;
};

/// The host compiler's flags for a candidate of the emulator.
inline std::vector<std::string> emulator_flags() {
  return {"-std=c++17",
          "-O1",
          "-fPIC",
          "-shared",
          "-fvisibility=hidden",
          "-fno-gnu-unique",
          "-DKS_EMULATE",
          "-Wall",
          "-Wextra",
          "-Werror",
          "-Wno-unknown-pragmas",
          "-I" + (source_dir() / "tests" / "skills").string(),
          "-I" + (source_dir() / "gpu" / "include").string()};
}

/// Compiles each of `sources` for the emulator, one host compiler per core, cached by content
/// (tests/test_compiler.hpp); returns their shared objects, or fails the test with the
/// compiler's messages.
inline std::vector<std::filesystem::path>
compile_for_emulator(const std::vector<std::string>& sources,
                     const std::vector<std::string>& names) {
  std::vector<host_build> builds = host_compile_all(sources, emulator_flags());
  std::vector<std::filesystem::path> objects;
  for (size_t i = 0; i < builds.size(); ++i) {
    INFO(names[i] << ":\n" << builds[i].log);
    REQUIRE_FALSE(builds[i].shared_object.empty());
    objects.push_back(builds[i].shared_object);
  }
  return objects;
}

} // namespace ks::test
