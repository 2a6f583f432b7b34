#pragma once

// Faults of the host, told apart from a candidate's where the evidence allows (issue 27): a
// candidate is charged only with what it did; what the machine did is failure_kind::host_fault,
// which the campaign retries after the fault instead of storing as the node's result.
//
//   - A compile: nvcc (or its ptxas, cicc, host compiler) saying that it could not write, in a
//     line of its own (not one of the source's diagnostics, "kernel.cu(12): ...", where a
//     candidate's #error could plant any text), counts only when the disk agrees: a folder
//     the compile writes to (the cache, the temporary folder) has less than the configured free
//     space, or a small probe file cannot be written there. Our own writes into the cache
//     failing, or nvcc failing to start, need no more evidence.
//   - A worker: see worker_client.hpp (a death by a signal a candidate's code does not raise by
//     itself is run once more on a fresh worker; a GPU that answered before and is gone).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::gpu {

/// The free space under which a folder a compile writes to counts as full (compiler_options).
inline constexpr int64_t default_min_free_bytes = int64_t{256} << 20;

/// Returns the first line of compiler output `diagnostics` that says a write failed (ENOSPC,
/// EDQUOT, EROFS, EIO, or a tool's "could not write" words) and is not one of the source's own
/// diagnostics: a line that starts with `source_name` (kernel.cu) is the candidate's to say
/// anything in. nullopt when there is none.
std::optional<std::string> write_failure_line(std::string_view diagnostics,
                                              std::string_view source_name = "kernel.cu");

/// Returns the evidence that one of `folders` cannot take a compile's files: less than
/// `min_free_bytes` free for an unprivileged user (statvfs), or a probe file that cannot be
/// created and written there (the reason named). nullopt when each folder that exists has room
/// and takes the probe.
std::optional<std::string> disk_fault(const std::vector<std::filesystem::path>& folders,
                                      int64_t min_free_bytes);

/// Checks whether a worker's death by `signal` may have come from outside (SIGKILL from another
/// process or the OOM killer, SIGTERM, SIGHUP, SIGINT, ...), not from a fault of the code it ran
/// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, or a resource limit the worker
/// sets on itself: SIGXCPU, SIGXFSZ). 0 (no signal) is false.
bool outside_signal(int signal) noexcept;

/// Checks whether the CUDA runtime error named `cuda_error` ("cudaErrorDevicesUnavailable")
/// says the device or its driver is gone or broken, which no candidate causes.
bool device_lost_error(std::string_view cuda_error) noexcept;

} // namespace ks::gpu
