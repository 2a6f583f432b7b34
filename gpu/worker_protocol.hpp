#pragma once

// The bench worker protocol: JSON lines on the worker's stdin and stdout (Boost.JSON).
//
// Grammar (one JSON object per line, '\n' terminated, UTF-8):
//
//   hello    := {"v":1, "hello":"ks-bench-worker", "pid":INT, "device":INT}
//               written once by the worker at start, before reading any request
//   request  := {"v":1, "id":INT, "job":JOB, ...fields of JOB}
//   JOB      := "info" | "calibrate" | "shutdown"
//             | "probe"   with ["probe":{"bytes":INT, "samples":INT}]   (bytes 0: the worker
//                          picks four times its L2, 64 to 256 MiB; engine/card_stability.hpp)
//             | "verify"  with "task":TASK, "reference":PATH, "candidate":PATH, "trials":INT,
//                          "seed":INT, ["vendor_libraries":POLICY]
//             | "time"    with "task":TASK, "kernel":PATH, "reference":PATH, "timing":TIMING,
//                          ["vendor_libraries":POLICY]
//                          (the reference's outputs are what timed calls are checked against)
//             | "profile" with "task":TASK, "kernel":PATH, ["seed":INT],
//                          ["profile":{"counters":BOOL, "max_ranges":INT, "max_passes":INT}],
//                          ["vendor_libraries":POLICY]
//                          (never timed: its calls run under CUPTI, apart from any timing)
//   POLICY   := "refuse" (the default: a candidate that needs or loads a vendor library
//               fails with vendor_library) | "allow" (its result names the libraries)
//   TASK     := {"name":STR, "inputs":[TENSOR...], "outputs":[TENSOR...],
//                "tolerance":{"atol":NUM, "rtol":NUM, "norm_rel":NUM},
//                ["cost":{"flops":NUM, "bytes":NUM}]}   (timing checks compute-bound tasks
//                                                        on fresh inputs)
//   TENSOR   := {"name":STR, "dtype":STR, "shape":[INT...], "init":STR, "low":INT, "high":INT}
//   response := {"v":1, "id":INT, "ok":true,  "result":RESULT, ["retire":true]}
//             | {"v":1, "id":INT, "ok":false, "failure":FAILURE, ["retire":true]}
//               retire: a vendor library came into the worker's process through a
//               candidate; the client replaces the worker before the next job
//   RESULT   := (of "info") DEVICE, gpu/device_json.hpp's grammar; (of "verify" and "time")
//               with ["vendor_libraries":[PATH...]] where the request allowed them; (of
//               "probe") PROBE
//   PROBE    := {"bytes":INT, "samples":INT, "median_ms":NUM, "p10_ms":NUM, "p90_ms":NUM,
//                "min_ms":NUM, "max_ms":NUM}   (bytes: of each buffer copied)
//   FAILURE  := {"kind":STR, "message":STR, ["return_code":INT], ["cuda_error":STR],
//                ["verify":VERIFY]}
//   PROFILE  := (the result of "profile", engine::profile)
//               {"launches":INT, "copies":INT, "kernel_ms":NUM, "span_ms":NUM,
//                "counters":BOOL, "counters_unavailable":STR, "range":STR, "replay":STR,
//                "passes":INT, "metrics":{METRIC:NUM...}, "notes":[STR...],
//                "device":{"sms":INT, "max_warps_per_sm":INT, "max_blocks_per_sm":INT,
//                          "registers_per_sm":INT, "max_registers_per_block":INT,
//                          "shared_bytes_per_sm":INT, "shared_bytes_per_block_optin":INT,
//                          "reserved_shared_bytes_per_block":INT},
//                "profile_ms":NUM, "kernels":[KERNEL...]}
//   KERNEL   := {"name":STR, "launches":INT, "duration_ms":NUM, "grid":[INT,INT,INT],
//                "block":[INT,INT,INT], "registers":INT, "static_shared_bytes":INT,
//                "dynamic_shared_bytes":INT, "local_bytes_per_thread":INT,
//                "metrics":{METRIC:NUM...}}
//               METRIC is CUPTI's name (engine/profile.hpp); a value that is not a finite
//               number is left out.
//
// "v" is the protocol version; a peer refuses any other. "id" echoes the request's id so a
// late reply to a killed job can never be taken for the next job's. A worker that hits a
// sticky CUDA error answers the job and then exits; the client starts a new one.

#include "engine/profile.hpp"
#include "engine/task.hpp"
#include "gpu/failure.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ks::gpu {

/// The protocol version both peers must speak.
inline constexpr int protocol_version = 1;

/// The jobs a worker runs; the actors' bench jobs are these too (actors::bench_kind). The
/// numbers are stable.
enum class job_kind : int32_t {
  info = 0,
  calibrate = 1,
  verify = 2,
  time = 3,
  shutdown = 4,
  profile = 5,
  probe = 6, ///< the card-stability probe: a fixed copy timed (engine/card_stability.hpp)
};

/// Lists every job kind, in the order of their numbers.
inline constexpr job_kind all_job_kinds[] = {job_kind::info, job_kind::calibrate, job_kind::verify,
                                             job_kind::time, job_kind::shutdown,  job_kind::profile,
                                             job_kind::probe};

/// Returns the wire name of `job`.
const char* to_string(job_kind job) noexcept;

/// What the worker does with a candidate that needs or loads a vendor library (cuBLAS,
/// cuDNN, ...; gpu/vendor_libraries.hpp). The numbers are stable.
enum class vendor_policy : int32_t {
  refuse = 0, ///< fail it with vendor_library (the default: only our kernels count)
  allow = 1,  ///< measure it, and name the libraries in its result (bench.allow_vendor_libraries)
};

/// Returns the wire name of `policy` ("refuse", "allow").
const char* to_string(vendor_policy policy) noexcept;

/// Options of a correctness check.
struct verify_options {
  int32_t trials = 3;       ///< each on freshly drawn inputs
  uint64_t seed = 20261126; ///< trial i draws with seed + i
};

/// Options of a timing run.
struct timing_options {
  double warmup_ms = 25;         ///< run at least this long (and 2 calls) before timing
  int32_t min_trials = 10;       ///< never report fewer
  int32_t max_trials = 2000;     ///< stop here even if the median still moves
  double max_ms = 2000;          ///< stop once this much GPU time was timed
  double stable_rel = 0.005;     ///< stop once a batch moves the median by less than this
  int32_t host_check_batch = 20; ///< the audited back-to-back batch holds ~5 ms of calls,
                                 ///< at most 100 times this many
  bool flush_l2 = true;          ///< flush L2 before every timed call
};

/// Options of a profile job.
struct profile_options {
  bool counters = true;    ///< read hardware counters (false: the activity records only)
  int32_t max_ranges = 64; ///< a call launching more kernels is profiled as one range
  int32_t max_passes = 64; ///< a metric set needing more replay passes falls back to the
                           ///< core metrics
};

/// Options of a stability probe (engine/card_stability.hpp).
struct probe_options {
  int64_t bytes = 0;    ///< of each buffer; 0: the worker picks four times its L2, 64-256 MiB
  int32_t samples = 32; ///< copies back to back (from 32: windows of 8), after a 10 ms warm-up
};

/// One request to the worker.
struct request {
  int64_t id = 0;
  job_kind job = job_kind::info;
  std::optional<engine::task> task; ///< verify, time and profile
  std::string reference;            ///< verify and time: reference shared object
  std::string candidate;            ///< verify: candidate shared object
  std::string kernel;               ///< time and profile: shared object to time or profile
  verify_options verify;            ///< its seed also draws a profile job's inputs
  timing_options timing;
  profile_options profile;
  probe_options probe;
  vendor_policy vendor_libraries = vendor_policy::refuse; ///< verify, time and profile
};

/// What the worker reads off its device.
struct device_info {
  int32_t index = 0;
  int32_t device_count = 0;
  std::string name;
  std::string uuid;
  std::string arch; ///< nvcc's name for it: "sm_90a" on Hopper
  int32_t cc_major = 0, cc_minor = 0;
  int32_t sms = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t smem_per_block_optin = 0;
  int32_t sm_clock_khz = 0; ///< as read; 0 where the runtime does not report it
  int32_t mem_clock_khz = 0;
  int32_t mem_bus_bits = 0;
  int32_t driver_version = 0; ///< e.g. 13000
  int32_t runtime_version = 0;
};

/// Measured peaks of a device.
struct calibration {
  double dram_gbps = 0;   ///< device-to-device copy, bytes read plus written per second / 1e9
  double fp32_gflops = 0; ///< FMA throughput (2 flops each) / 1e9
  int64_t copy_bytes = 0; ///< size of the buffers copied
  double copy_ms = 0;     ///< median copy time
  double fma_ms = 0;      ///< median FMA kernel time
};

/// The timing of a stability probe, in milliseconds per copy.
struct probe_result {
  int64_t bytes = 0;   ///< of each buffer copied (a buffer that did not fit was halved)
  int32_t samples = 0; ///< windows of copies timed, each giving its time per copy
  double median_ms = 0, p10_ms = 0, p90_ms = 0, min_ms = 0, max_ms = 0;
};

/// The statistics of a correctness check; on a failure they point at the first bad element.
struct verify_result {
  bool passed = false;
  int32_t trials = 0; ///< trials run (a failure stops at the failing one)
  double max_abs_err = 0;
  double max_rel_err = 0;
  double norm_rel_err = 0;      ///< ||out - ref|| / ||ref||, worst over outputs and trials
  int64_t bad_count = 0;        ///< elements out of tolerance in the failing output
  int64_t nan_count = 0;        ///< of those, how many are NaN (unwritten?)
  int64_t first_bad_index = -1; ///< flat index into bad_output
  std::string bad_output;       ///< name of the failing output, or of the changed input
  int32_t bad_trial = -1;
  double expected = 0;        ///< reference value at first_bad_index
  double actual = 0;          ///< candidate value there
  bool input_changed = false; ///< the candidate wrote to an input (bad_output names it)
  /// The vendor libraries the candidate needs or loaded (paths), where the request allowed
  /// them; empty otherwise.
  std::vector<std::string> vendor_libraries;
};

/// The result of a timing run, all times in milliseconds.
struct timing_result {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, min_ms = 0, mean_ms = 0;
  int32_t trials = 0;
  double host_ms_per_call = 0; ///< host clock over the check batch, per call
  double device_tail_ms = 0;   ///< device still busy after the stream was done
  bool escaped = false;        ///< the host-clock check saw work outside the stream
  int32_t batch = 0;           ///< calls in the audited back-to-back batch
  int32_t input_sets = 0;      ///< input sets the timed calls alternated between
  int32_t checked_calls = 0;   ///< timed calls whose outputs were compared with the reference
  std::string audit;           ///< how the batch was audited: "cupti" or "host-clock"
  std::string audit_note;      ///< why CUPTI was not used, where it was not
  int32_t l2_resets = 0;       ///< calls after which the candidate's persisting L2 was undone
  std::vector<std::string> vendor_libraries; ///< as verify_result's, for the timed kernel
  /// The trial times in trial order, at most max_reported_samples of them (evenly spaced over
  /// the trials when there were more), so that the judge can rank two kernels' samples
  /// instead of comparing a p90 with a p10: one lucky fast trial of a noisy parent must not
  /// hide a child that is faster in nearly every trial.
  std::vector<double> samples_ms;
  static constexpr size_t max_reported_samples = 128;
};

/// A typed failure with what a user or the repair agent needs.
struct failure {
  failure_kind kind = failure_kind::crash;
  std::string message;
  std::optional<int32_t> return_code;  ///< launch_error from ks_forward's return
  std::string cuda_error;              ///< the CUDA error name, if any
  std::optional<verify_result> verify; ///< wrong_result details
};

/// The payload of a successful response: one result type per job kind (shutdown's is
/// monostate, profile's is engine::profile).
using result_payload = std::variant<std::monostate, device_info, calibration, verify_result,
                                    timing_result, engine::profile, probe_result>;

/// Names the result type of job kind K (result_of<job_kind::time> is timing_result).
template <job_kind K>
struct job_result_type;
template <>
struct job_result_type<job_kind::info> {
  using type = device_info;
};
template <>
struct job_result_type<job_kind::calibrate> {
  using type = calibration;
};
template <>
struct job_result_type<job_kind::verify> {
  using type = verify_result;
};
template <>
struct job_result_type<job_kind::time> {
  using type = timing_result;
};
template <>
struct job_result_type<job_kind::shutdown> {
  using type = std::monostate;
};
template <>
struct job_result_type<job_kind::profile> {
  using type = engine::profile;
};
template <>
struct job_result_type<job_kind::probe> {
  using type = probe_result;
};

/// The result type of job kind K.
template <job_kind K>
using result_of = typename job_result_type<K>::type;

/// One response of the worker.
struct response {
  int64_t id = 0;
  bool ok = false;
  result_payload result;
  std::optional<failure> fail;
  /// The worker asks to be replaced once this job is answered: a vendor library came into
  /// its process through a candidate, where a later candidate could reach it unseen.
  bool retire = false;
};

/// The worker's first line.
struct hello {
  int64_t pid = 0;
  int32_t device = 0;
};

/// Encodes `r` as one line (no trailing '\n').
std::string encode(const request& r);
/// Encodes `r` as one line (no trailing '\n').
std::string encode(const response& r);
/// Encodes `h` as one line (no trailing '\n').
std::string encode(const hello& h);

/// Decodes a request line; errc::protocol with what is wrong otherwise.
[[nodiscard]] engine::expected<request> decode_request(std::string_view line);
/// Decodes a response line to a request of kind `job`; errc::protocol otherwise.
[[nodiscard]] engine::expected<response> decode_response(std::string_view line, job_kind job);
/// Decodes the hello line; errc::protocol otherwise.
[[nodiscard]] engine::expected<hello> decode_hello(std::string_view line);

/// Encodes a profile as the JSON object of the grammar's PROFILE (one line, no '\n'): the
/// profile job's result, and what `kernelskill profile --json` and the analyst's recorded
/// fixtures hold.
std::string encode_profile(const engine::profile& p);

/// Decodes a PROFILE object (whitespace and newlines allowed); errc::protocol naming the
/// field otherwise.
[[nodiscard]] engine::expected<engine::profile> decode_profile(std::string_view text);

} // namespace ks::gpu
