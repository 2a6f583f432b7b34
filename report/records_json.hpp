#pragma once

// The JSON texts the actor layer stores beside its records (node_detail's verify_json, a
// device's calibration, the campaign's environment). Plain functions over gpu/ types: no CAF.
//
//   verify      := {"passed":BOOL, "trials":INT, "max_abs_err":NUM, "max_rel_err":NUM,
//                   "norm_rel_err":NUM, "bad_count":INT, "nan_count":INT,
//                   "first_bad_index":INT, "bad_output":STR, "bad_trial":INT,
//                   "expected":NUM, "actual":NUM, "input_changed":BOOL}
//   calibration := {"v":1, the fields of gpu/device_json.hpp's CALIBRATION}
//   environment := {"v":1, "host":STR, "arch":STR, "nvcc":STR (first line of its version),
//                   "dry_run":BOOL, "gpus":[{"index":INT (the campaign's GPU index),
//                   "device":INT (the CUDA device), the other fields of gpu/device_json.hpp's
//                   DEVICE, "calibration":calibration}]}

#include "gpu/worker_protocol.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::report {

/// Returns `v` as JSON text (see the grammar above).
std::string verify_json(const gpu::verify_result& v);

/// Returns `c` as JSON text (see the grammar above).
std::string calibration_json(const gpu::calibration& c);

/// Parses calibration_json's text back; nullopt if it is not one or a peak is not above 0
/// (gpu::usable_calibration): such a record is measured again.
std::optional<gpu::calibration> parse_calibration(std::string_view text);

/// Describes one GPU of the campaign for the environment record.
struct gpu_description {
  int32_t index = 0;  ///< the campaign's GPU index
  int32_t device = 0; ///< the CUDA device number
  gpu::device_info info;
  gpu::calibration calibration;
};

/// Returns the environment record: the GPUs as read, the nvcc arch and version.
std::string environment_json(const std::vector<gpu_description>& gpus, const std::string& arch,
                             const std::string& nvcc_version, bool dry_run);

} // namespace ks::report
