#pragma once

// The one JSON spelling of a device's info and of its calibration, written by every writer of
// them: the worker protocol's info and calibrate results, the campaign's environment record
// (shown in results.json) and the store's calibration record, and the command line's --json
// output and calibration cache (devices, eval, profile):
//
//   DEVICE := {"index":INT, "device_count":INT, "name":STR, "uuid":STR, "arch":STR,
//              "cc":"M.m", "sms":INT, "memory_bytes":INT, "l2_bytes":INT,
//              "smem_per_block_optin":INT, "sm_clock_khz":INT, "mem_clock_khz":INT,
//              "mem_bus_bits":INT, "driver_version":INT, "runtime_version":INT}
//
// "cc" is results.json's spelling, the most public of the three this replaced; the reader
// also takes the others (the worker protocol's "cc_major" and "cc_minor", the command line's
// "compute_capability"), so a worker or a file written before reads the same.
//
//   CALIBRATION := {"dram_gbps":REAL, "fp32_gflops":REAL, "copy_bytes":INT, "copy_ms":REAL,
//                   "fma_ms":REAL}
//
// JSON has no NaN or infinity: a non-finite measurement is written as null, which no reader
// takes for a number.

#include "gpu/worker_protocol.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>

namespace ks::gpu {

/// Returns `d` as the DEVICE object of the grammar above.
boost::json::object device_info_json(const device_info& d);

/// Returns the device_info a DEVICE object `o` holds; the fields after "l2_bytes" may be
/// missing (0). Throws decode::malformed (json/decode.hpp) naming a missing or mistyped field.
device_info device_info_from_json(const boost::json::object& o);

/// Returns `c` as the CALIBRATION object of the grammar above.
boost::json::object calibration_json(const calibration& c);

/// Returns the calibration a CALIBRATION object `o` holds; the fields after "fp32_gflops" may
/// be missing (0). Throws decode::malformed naming a missing or mistyped field.
calibration calibration_from_json(const boost::json::object& o);

/// Returns the calibration `v` holds when it is a CALIBRATION object with both peaks above 0,
/// the only calibration a roofline can use; nullopt otherwise.
std::optional<calibration> usable_calibration(const boost::json::value& v);

} // namespace ks::gpu
