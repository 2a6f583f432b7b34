#pragma once

// Where the CLI finds what it needs on this machine (the cache, the ABI header, the bench
// worker), and how it reports progress.

#include "gpu/worker_client.hpp"

#include <cstdint>
#include <filesystem>
#include <string>

namespace ks::cli {

/// Returns `given` if not empty, else $XDG_CACHE_HOME/kernelskill, else
/// ~/.cache/kernelskill: the same folder gpu::compiler uses by default.
std::filesystem::path cache_dir_or_default(const std::filesystem::path& given);

/// Returns the folder that holds kernelskill/abi.h for the compiler: empty (so that the
/// compiler looks at $KS_INCLUDE_DIR and <exe dir>/../include itself) when one of those has
/// it, else the source tree's gpu/include this binary was built from.
std::filesystem::path include_dir_for_compiler();

/// Returns `given` if not empty, else gpu::default_worker_executable().
std::filesystem::path worker_or_default(const std::filesystem::path& given);

/// Returns the options of the bench worker of a command run on its own (eval, profile): no
/// config, so the environment is scrubbed all the same and the sandbox is a flag; it may read
/// `cache_dir`; `job_timeout_s` > 0 is the watchdog of every job it runs.
gpu::worker_options standalone_worker(const std::filesystem::path& worker, int32_t device,
                                      bool sandbox, const std::filesystem::path& cache_dir,
                                      double job_timeout_s);

/// Writes one progress line ("compiling...") to stderr, prefixed "kernelskill: ".
void progress(const std::string& line);

/// Writes a warning line to stderr, prefixed "kernelskill: warning: ".
void warn(const std::string& line);

/// Formats `ms` milliseconds with decimals by magnitude ("2480 ms", "1.234 ms", "0.0451 ms").
std::string format_ms(double ms);

/// Formats `value` with `digits` significant digits, switching to an exponent for tiny or
/// huge values ("1.2e-07").
std::string format_number(double value, int digits = 3);

/// Formats a byte count in binary units ("79.6 GiB", "50 MiB").
std::string format_bytes(double bytes);

} // namespace ks::cli
