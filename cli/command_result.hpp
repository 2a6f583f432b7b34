#pragma once

// How a command reports that it stopped early. Commands never exit; they return a
// command_error and main turns it into the exit code documented in every --help (the table
// is cli/exit_codes.hpp).

#include "gpu/failure.hpp"

#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace ks::cli {

/// Why a command stopped early. Each reason has its own exit code (see exit_code_of).
enum class stop_reason : int32_t {
  usage = 1,         ///< a bad command line, or a file or folder it names does not exist
  task = 2,          ///< the task or the campaign config is broken (its manifest, its
                     ///< reference kernel, the config's content), or an output folder holds
                     ///< no campaign
  environment = 3,   ///< a tool or folder the command needs is missing (nvcc, the cache)
  failure = 4,       ///< a typed failure of the candidate, the worker or the device
  damaged = 5,       ///< a store is damaged (the campaign's, or the skill memory): its data
                     ///< file cut short, or records that do not match their checksum
  interrupted = 130, ///< stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)
};

/// Why a command stopped, with what the user needs to act on it.
struct command_error {
  stop_reason reason = stop_reason::usage;
  std::optional<gpu::failure_kind> kind; ///< set when reason is failure
  std::string message;                   ///< printed on stderr by main; may hold several lines
  /// The command's --json report on stdout already says it failed: main adds no failure
  /// object of its own (stdout stays one JSON document).
  bool json_written = false;
};

/// A command's outcome: nothing on success, or why it stopped.
using command_result = tl::expected<void, command_error>;

/// Returns a command_error of `reason` with `message`.
inline tl::unexpected<command_error> stop(stop_reason reason, std::string message) {
  return tl::unexpected(command_error{reason, std::nullopt, std::move(message)});
}

/// Returns a command_error for a typed failure of `kind` with `message`.
inline tl::unexpected<command_error> stop(gpu::failure_kind kind, std::string message) {
  return tl::unexpected(command_error{stop_reason::failure, kind, std::move(message)});
}

/// Returns the process exit code for `e`: 1 usage, 2 task or config, 3 environment, 5 a
/// damaged store, 130 interrupted, and gpu::exit_code_for(kind) (10 + the kind's number) for a
/// typed failure.
inline int exit_code_of(const command_error& e) noexcept {
  if (e.reason == stop_reason::failure && e.kind)
    return gpu::exit_code_for(*e.kind);
  return static_cast<int>(e.reason);
}

} // namespace ks::cli
