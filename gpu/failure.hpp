#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::gpu {

/// Why a candidate did not produce a measurement. The numbers are stable ("storage order"):
/// they are persisted and sent over the worker protocol. Each kind is a campaign statistic.
enum class failure_kind : int32_t {
  compile_error = 1,   ///< nvcc rejected the source; diagnostics are kept verbatim
  load_error = 2,      ///< dlopen failed or no ks_forward symbol
  launch_error = 3,    ///< ks_forward returned non-zero or a launch failed
  illegal_address = 4, ///< the kernel faulted (sticky: the worker restarts)
  timeout = 5,         ///< the job ran past its watchdog (the worker was killed)
  wrong_result = 6,    ///< outputs differ, are unwritten, or inputs were changed
  crash = 7,           ///< the worker process died (a signal or an exit)
  escaped_stream = 8,  ///< work ran outside the worker's stream (host-clock check)
  no_device = 9,       ///< no CUDA device or driver on this machine
  protocol_error = 10, ///< the worker sent something malformed or cut off
  out_of_memory = 11,  ///< the task's tensors do not fit on the device
  cuda_error = 12,     ///< another CUDA runtime error, not caused by a candidate
  vendor_library = 13, ///< the candidate needs or loaded a vendor library (cuBLAS, cuDNN, ...):
                       ///< its time would not be its own (gpu/vendor_libraries.hpp)
  host_fault = 14,     ///< the machine failed, not the candidate: a full or unwritable disk
                       ///< under nvcc or the compile cache, a worker killed from outside
                       ///< (twice in a row is the candidate's crash), a GPU lost mid-campaign
                       ///< (gpu/host_fault.hpp). Never a node's final result: the campaign
                       ///< runs the step again after the fault, and stops when it persists
};

/// Lists every kind, in storage order (a header .cu files include: C++17, no std::span).
const std::vector<failure_kind>& all_failure_kinds();

/// Returns the stable name of `kind` ("wrong_result", ...).
const char* to_string(failure_kind kind) noexcept;

/// Parses a stable name back; nullopt if unknown.
std::optional<failure_kind> parse_failure_kind(std::string_view name) noexcept;

/// Returns the process exit code `kernelskill eval` uses for `kind` (10 + its number).
int exit_code_for(failure_kind kind) noexcept;

/// Checks whether a failure of `kind` leaves the worker unusable (it must be restarted).
bool kills_worker(failure_kind kind) noexcept;

/// Checks whether `kind` is the host's fault rather than the candidate's: the step is run
/// again after it, and it is never stored as a node's result.
bool is_host_fault(failure_kind kind) noexcept;

} // namespace ks::gpu
