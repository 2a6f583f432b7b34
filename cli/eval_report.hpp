#pragma once

// Everything `kernelskill eval` found out, step by step, and its two printed forms: text for
// a person and one JSON object for a program. A step that did not run leaves its field empty,
// so a failed evaluation still reports what it measured before the failure.

#include "cli/calibration_cache.hpp"
#include "cli/command_result.hpp"
#include "engine/task.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_protocol.hpp"
#include "report/torch_baselines.hpp"

#include <boost/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

namespace ks::cli {

/// Where the time of one evaluation went, in ms.
struct eval_phases {
  double worker_start = 0; ///< spawn to hello, summed over every worker started
  int32_t worker_starts = 0;
  double device = 0;  ///< the info job: the worker's CUDA context and device query
  double compile = 0; ///< reference and candidate together (they compile in parallel)
  double verify = 0;  ///< the reference's self-check and the candidate's trials
  double calibrate = 0;
  double time = 0;     ///< timing the reference and the candidate
  double shutdown = 0; ///< the worker's exit (CUDA context teardown)
  double total = 0;    ///< everything, reading the manifest and the sources included
};

/// The findings of one evaluation.
struct eval_report {
  std::filesystem::path manifest;
  std::filesystem::path candidate;
  std::optional<engine::task> task;
  std::string arch;
  int32_t trials = 0;
  uint64_t seed = 0;
  std::optional<gpu::device_info> device;
  std::optional<gpu::compile_result> reference_compile;
  std::optional<gpu::compile_result> candidate_compile;
  std::optional<gpu::verify_result> reference_check; ///< the reference against itself
  std::optional<gpu::verify_result> verify;          ///< the candidate against the reference
  std::optional<gpu::timing_result> reference_time;
  std::optional<gpu::timing_result> candidate_time;
  std::optional<cached_calibration> peaks;
  std::optional<report::torch_baselines> baselines; ///< --baselines, checked against the task
  std::string calibration_error;                    ///< why there are no peaks, if so
  eval_phases phases;
  std::optional<gpu::failure> failure; ///< the typed failure that stopped it
  std::optional<command_error> error;  ///< how the command stopped, if it did
};

/// Returns the roofline floor of `r`'s task in ms, or nullopt without peaks or cost.
std::optional<double> roofline_floor(const eval_report& r);

/// Returns the vendor libraries the candidate used (--allow-vendor-libraries let it), as its
/// verification and its timing named them, each once.
std::vector<std::string> candidate_vendor_libraries(const eval_report& r);

/// Writes the text form of `r` (the steps that ran) to `out`.
void print_text(std::ostream& out, const eval_report& r);

/// Returns the JSON form of `r`, with "ok" and "exit_code".
boost::json::object to_json(const eval_report& r);

/// Returns a failure of the candidate explained for a person: the worker's message plus,
/// for wrong_result, the output, first bad index (and its coordinates in `t`'s shape),
/// expected and actual values, counts and errors; for launch_error, the return code.
std::string explain_failure(const gpu::failure& f, const std::optional<engine::task>& t,
                            uint64_t seed);

} // namespace ks::cli
