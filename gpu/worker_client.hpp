#pragma once

// The engine's side of one bench worker: starts the worker process, sends it one job at a
// time, enforces a watchdog per job, and turns every way the worker can fail into a typed
// failure. Faults of the host are told from the candidate's where the evidence allows
// (gpu/host_fault.hpp): a worker killed by a signal its code does not raise by itself (SIGKILL
// from another process or the OOM killer, SIGTERM, ...) while it ran a job is run once more on
// a fresh worker, and what that run says is the job's (only a second such death is charged as
// the candidate's crash); a worker that cannot be started for want of resources, and a GPU that
// answered jobs before and is then gone (no_device, or a CUDA error that says the device is
// unavailable), give failure_kind::host_fault. After a failure that leaves the worker unusable (it
// crashed, hung, or hit a sticky CUDA error), or a job after which the worker asks to be replaced
// (a vendor library came into its process through a candidate), the client discards it; the next
// job starts a fresh one.

#include "engine/task.hpp"
#include "gpu/child_process.hpp"
#include "gpu/worker_protocol.hpp"
#include "gpu/worker_sandbox.hpp"

#include <tl/expected.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks::gpu {

/// A job's outcome: the result, or why there is none.
template <class T>
using job_result = tl::expected<T, failure>;

/// How to start and watch a worker.
struct worker_options {
  std::filesystem::path executable; ///< ks-bench-worker
  int32_t device = 0;
  std::chrono::milliseconds start_timeout{20000}; ///< until the hello line
  std::chrono::milliseconds info_timeout{30000};
  std::chrono::milliseconds calibrate_timeout{60000};
  std::chrono::milliseconds verify_timeout{60000};
  std::chrono::milliseconds time_timeout{120000};
  std::chrono::milliseconds profile_timeout{60000};
  std::vector<std::string> extra_args; ///< appended to the worker's command line
  /// Its environment, private folder and sandbox (worker_sandbox.hpp); the environment is
  /// scrubbed whatever this says.
  worker_boundary boundary;
  /// What the worker does with a candidate that needs or loads a vendor library: refuse it
  /// (vendor_library), or measure it and name the libraries in its result.
  vendor_policy vendor_libraries = vendor_policy::refuse;
};

/// Returns the ks-bench-worker next to the running executable, or in PATH.
std::filesystem::path default_worker_executable();

/// Drives one worker process.
class worker_client {
public:
  explicit worker_client(worker_options options);

  /// Asks the worker about its device.
  [[nodiscard]] job_result<device_info> info();

  /// Measures the device's peak bandwidth and FMA rate.
  [[nodiscard]] job_result<calibration> calibrate();

  /// Checks `candidate` against `reference` (both shared objects) on `t`'s shapes.
  [[nodiscard]] job_result<verify_result> verify(const engine::task& t,
                                                 const std::string& reference,
                                                 const std::string& candidate,
                                                 const verify_options& opt);

  /// Times `kernel` on `t`'s shapes; some timed calls are checked against the outputs of
  /// `reference` (both shared objects; the same path when the reference itself is timed).
  [[nodiscard]] job_result<timing_result> time(const engine::task& t, const std::string& kernel,
                                               const std::string& reference,
                                               const timing_options& opt);

  /// Profiles one call of `kernel` (a shared object) on `t`'s shapes, inputs drawn from
  /// `seed` as for timing: every kernel it launches and, where the device lets CUPTI read
  /// them, the hardware metrics (engine/profile.hpp). Counters that cannot be read are no
  /// failure: the profile says why (counters_unavailable) and holds the activity part.
  [[nodiscard]] job_result<engine::profile> profile(const engine::task& t,
                                                    const std::string& kernel,
                                                    const profile_options& opt = {},
                                                    uint64_t seed = verify_options{}.seed);

  /// Times the stability probe (a fixed copy, engine/card_stability.hpp) on the device.
  [[nodiscard]] job_result<probe_result> probe(const probe_options& opt = {});

  /// Asks the worker to exit and waits for it; its private folder is removed.
  void shutdown();

  /// Returns how many worker processes were started so far.
  int32_t starts() const noexcept { return starts_; }

  /// Returns how long the last start took, from spawn to hello, in ms.
  double last_start_ms() const noexcept { return last_start_ms_; }

  /// Returns the running worker's pid (bwrap's, in a sandbox), or -1 when none runs.
  int worker_pid() const noexcept { return process_ ? process_->pid() : -1; }

  /// Returns the running worker's private folder (its working directory and TMPDIR), or an
  /// empty path when none runs.
  std::filesystem::path worker_folder() const {
    return process_ ? process_->folder() : std::filesystem::path{};
  }

  /// Returns how many jobs were retried on a fresh worker after running out of device memory
  /// in one that had served other jobs (memory they left behind is the worker's, not the job's).
  int32_t memory_retries() const noexcept { return memory_retries_; }

  /// Returns how many jobs were run again on a fresh worker after their worker was killed by a
  /// signal from outside (outside_signal in host_fault.hpp), and what the last such death was.
  int32_t kill_retries() const noexcept { return kill_retries_; }
  const std::string& last_kill() const noexcept { return last_kill_; }

  /// Checks whether the last job's failure said that the GPU itself is gone (a host_fault of a
  /// device that answered before, or a device-lost CUDA error).
  bool device_lost() const noexcept { return device_lost_; }

private:
  /// Runs `req`; a job that runs out of device memory in a worker that served tensor jobs
  /// before is run once more on a fresh worker: candidates of earlier jobs may hold memory
  /// (a static workspace, a memory pool) that only the end of their process gives back.
  [[nodiscard]] job_result<response> run(request req, std::chrono::milliseconds timeout);
  [[nodiscard]] job_result<response> run_once(request req, std::chrono::milliseconds timeout);
  /// Turns a failure that says the GPU is gone, or that the worker could not be started for
  /// want of resources, into host_fault.
  failure as_host_fault(failure f);
  [[nodiscard]] tl::expected<void, failure> ensure_started();
  failure discard_worker(failure_kind kind, std::string message);

  worker_options options_;
  std::optional<child_process> process_;
  int64_t next_id_ = 1;
  int32_t starts_ = 0;
  int32_t tensor_jobs_ = 0; ///< verify, time and profile jobs the running worker took
  int32_t memory_retries_ = 0;
  int32_t kill_retries_ = 0;
  std::string last_kill_;
  bool killed_from_outside_ = false; ///< the last run_once's worker died by an outside signal
  bool device_answered_ = false;     ///< a job succeeded on this device: it was there
  bool device_lost_ = false;         ///< the last job said the device is gone
  double last_start_ms_ = 0;
};

} // namespace ks::gpu
