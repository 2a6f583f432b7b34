#pragma once

// JSON forms of what the worker and the compiler report, for `--json` output and the
// calibration cache. Field names follow the C++ members, so the output documents itself.

#include "gpu/compiler.hpp"
#include "gpu/worker_protocol.hpp"

#include <boost/json.hpp>

#include <optional>

namespace ks::cli {

/// Returns `d` as every writer of device info spells it (gpu/device_json.hpp).
boost::json::object to_json(const gpu::device_info& d);

/// Returns `v` as a JSON object.
boost::json::object to_json(const gpu::verify_result& v);

/// Returns `t` as a JSON object.
boost::json::object to_json(const gpu::timing_result& t);

/// Returns `f` as a JSON object: kind, message and the optional details.
boost::json::object to_json(const gpu::failure& f);

/// Returns `r` as a JSON object; the diagnostics only when it failed (they can be long).
boost::json::object to_json(const gpu::compile_result& r);

/// Returns the object a `--json` command prints when it fails without a report of its own:
/// {"ok": false, "failure": {"kind", "exit_code", "message"}}, as `devices --json` writes a
/// worker's failure; "kind" is exit code `exit_code`'s name in cli/exit_codes.hpp ("task
/// error", "wrong_result").
boost::json::object failure_json(int32_t exit_code, const std::string& message);

/// Writes `v` indented by two spaces per level, followed by a newline.
std::string pretty(const boost::json::value& v);

} // namespace ks::cli
