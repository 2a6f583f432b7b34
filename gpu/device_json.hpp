#pragma once

// The one JSON spelling of a device's info, written by every writer of it: the worker
// protocol's info result, the campaign's environment record (shown in results.json), and the
// command line's --json output (devices, eval, profile):
//
//   DEVICE := {"index":INT, "device_count":INT, "name":STR, "uuid":STR, "arch":STR,
//              "cc":"M.m", "sms":INT, "memory_bytes":INT, "l2_bytes":INT,
//              "smem_per_block_optin":INT, "sm_clock_khz":INT, "mem_clock_khz":INT,
//              "mem_bus_bits":INT, "driver_version":INT, "runtime_version":INT}
//
// "cc" is results.json's spelling, the most public of the three this replaced; the reader
// also takes the others (the worker protocol's "cc_major" and "cc_minor", the command line's
// "compute_capability"), so a worker or a file written before reads the same.

#include "gpu/worker_protocol.hpp"

#include <boost/json/object.hpp>

namespace ks::gpu {

/// Returns `d` as the DEVICE object of the grammar above.
boost::json::object device_info_json(const device_info& d);

/// Returns the device_info a DEVICE object `o` holds; the fields after "l2_bytes" may be
/// missing (0). Throws decode::malformed (json/decode.hpp) naming a missing or mistyped field.
device_info device_info_from_json(const boost::json::object& o);

} // namespace ks::gpu
