#pragma once

// The compile service: nvcc turns one candidate source into a shared object exporting
// ks_forward, for the GPU's own architecture, through a content-addressed cache.

#include "engine/error.hpp"
#include "gpu/child_process.hpp"
#include "gpu/host_fault.hpp"
#include "gpu/worker_sandbox.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks::gpu {

/// Resource usage of one kernel, from `-Xptxas -v`.
struct kernel_resources {
  std::string name; ///< demangled where possible
  std::string mangled;
  int32_t registers = 0;
  int64_t shared_bytes = 0; ///< static shared memory
  int64_t stack_bytes = 0;
  int64_t spill_stores = 0; ///< bytes
  int64_t spill_loads = 0;  ///< bytes
};

/// Parses ptxas' verbose report (the text nvcc writes to stderr) into one entry per kernel.
std::vector<kernel_resources> parse_ptxas_report(const std::string& text);

/// What to compile.
struct compile_request {
  std::string source;                   ///< CUDA C++ text of the candidate
  std::string label;                    ///< for messages: the file name or node id
  std::vector<std::string> extra_flags; ///< appended to the standard ones
  std::string source_name;              ///< the file the source came from, named in the
                                        ///< diagnostics instead of the cache's kernel.cu;
                                        ///< empty: kernel.cu. Not part of the cache key.
};

/// The outcome of one compilation; ok == false means a compile_error (or timeout), or with
/// host_fault a fault of the machine (gpu/host_fault.hpp), which says nothing of the source.
struct compile_result {
  bool ok = false;
  bool cached = false; ///< served from the cache without running nvcc
  bool timed_out = false;
  /// The host failed the compile: the cache or nvcc's temporary folder cannot take its files
  /// (a full, unwritable or failing disk, with evidence: host_fault.hpp), or nvcc cannot be
  /// started. Never cached; diagnostics say what failed.
  bool host_fault = false;
  std::string key;                     ///< hex content key
  std::filesystem::path shared_object; ///< valid when ok
  std::string diagnostics;             ///< nvcc's stdout+stderr, verbatim
  std::vector<kernel_resources> kernels;
  double wall_ms = 0; ///< time spent here, cache hits included
};

/// How the compile service runs nvcc.
struct compiler_options {
  std::filesystem::path nvcc;        ///< empty: $KS_NVCC, /usr/local/cuda/bin/nvcc, PATH
  std::string arch = "sm_90a";       ///< the GPU's own: "sm_90a" on Hopper
  std::filesystem::path cache_dir;   ///< empty: $XDG_CACHE_HOME/kernelskill or ~/.cache/...
  std::filesystem::path include_dir; ///< where kernelskill/abi.h lives; empty:
                                     ///< $KS_INCLUDE_DIR, else <exe>/../include
  std::chrono::milliseconds timeout{120000};
  int32_t jobs = 0; ///< parallel nvcc processes; 0 = the CPU cores
  /// A compile whose nvcc says a write failed is the host's fault (compile_result::host_fault)
  /// when the cache or the temporary folder has less free space than this, in bytes.
  int64_t min_free_bytes = default_min_free_bytes;
  /// With sandbox_mode::bubblewrap (bench.sandbox), nvcc runs inside bubblewrap and sees only
  /// the system's tools and headers, the toolkit, include_dir and its build folder
  /// (compile_sandbox.hpp), with the worker's scrubbed environment (worker_environment.hpp,
  /// secret_env withheld); its results are cached apart from unsandboxed ones. Off: nvcc runs
  /// as our child, with our environment.
  worker_boundary boundary;
};

/// Returns nvcc's `diagnostics` of the cache's copy (kernel.cu) with `source_name` in its
/// place, and nvcc's positions "kernel.cu(12): " written "source_name:12: ", the form editors
/// and terminals jump to.
std::string name_source_in_diagnostics(const std::string& diagnostics,
                                       const std::string& source_name);

/// Maps a compute capability to nvcc's architecture name ("sm_90a" for 9.0).
std::string arch_for(int32_t cc_major, int32_t cc_minor);

/// Returns the extra nvcc flags `source` asks for in `// ks-flags: ...` lines among its first
/// 20 lines. Only -l<library>, -maxrregcount=<N>, --use_fast_math, -Xptxas=<ptxas options>
/// and -D<NAME>[=<value>] are allowed; any other flag gives errc::invalid_input with a message
/// that names the flag and the whitelist.
[[nodiscard]] engine::expected<std::vector<std::string>> parse_ks_flags(const std::string& source);

/// Returns the flags every compile gives nvcc for `arch` ("sm_90a"), after nvcc itself and
/// before `-I` of the ABI header's folder, a request's extra flags and its ks-flags: a shared
/// object with its own shared CUDA runtime, C++17, -O3, line info, the architecture's machine
/// code only, and ptxas' resource report. `kernelskill export` builds a package's kernels with
/// the same flags, so that the package loads the binary the campaign measured.
std::vector<std::string> standard_nvcc_flags(const std::string& arch);

/// Runs nvcc with a cache; thread-safe.
class compiler {
public:
  /// Finds nvcc and reads its version (part of every cache key); fails if nvcc is missing,
  /// when options.boundary asks for a sandbox that bubblewrap cannot make (probe_sandbox's
  /// error), or when nvcc does not run in that sandbox (errc::subprocess, saying why).
  [[nodiscard]] static engine::expected<compiler> create(compiler_options options);

  /// Checks what create() needs of the machine, without running or writing anything: the
  /// spelling of options.arch, nvcc and kernelskill/abi.h where create() looks for them.
  /// Fails with create()'s error.
  [[nodiscard]] static engine::expected<void> check_tools(const compiler_options& options);

  /// Compiles one source, or returns the cached shared object.
  compile_result compile(const compile_request& request) const;

  /// Compiles several sources with up to options().jobs nvcc processes at once; the results
  /// are in the order of `requests`.
  std::vector<compile_result> compile_all(const std::vector<compile_request>& requests) const;

  /// Returns the content key of `request`: hashes a type tag before each of the source,
  /// the flags, the nvcc version and the ABI header's content.
  std::string key_of(const compile_request& request) const;

  /// Returns the input of key_of(request), one field a line (tag, length, first bytes), to
  /// find out why two requests expected to share a key do not. result.json keeps it too.
  std::string key_dump(const compile_request& request) const;

  /// Returns the nvcc command line (without the output and input paths) for `request`.
  std::vector<std::string> command_for(const compile_request& request) const;

  /// Returns the options with every default resolved (nvcc, cache_dir, include_dir, jobs).
  const compiler_options& options() const noexcept { return options_; }

  /// Returns the output of `nvcc --version`.
  const std::string& nvcc_version() const noexcept { return nvcc_version_; }

private:
  // Runs `nvcc --version` in the sandbox, so that a host where bubblewrap works but nvcc
  // cannot start inside it fails create() with why, instead of every compile.
  engine::expected<void> check_sandboxed_nvcc() const;

  // Runs nvcc's `command` in `build`, inside the sandbox when there is one.
  engine::expected<run_result> run_in_build(const std::vector<std::string>& command,
                                            const std::filesystem::path& build) const;

  compiler_options options_;
  std::string nvcc_version_;
  std::string abi_header_; // content of <include_dir>/kernelskill/abi.h, part of every key
  std::optional<sandbox_support> sandbox_; // set: nvcc runs inside bubblewrap
};

} // namespace ks::gpu
