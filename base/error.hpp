#pragma once

// The error every component of ours returns: a code plus the message a user acts on, and
// `expected<T>`, tl::expected with it. config/, engine/, memory/, gpu/ and agents/ name it
// through their own aliases (config::error, engine::error), which are this type.

#include <tl/expected.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace ks::base {

/// Classifies why an operation failed. The numbers are stable ("storage order"): they are
/// persisted and sent over the worker protocol. config/ uses the first three.
enum class errc : int32_t {
  invalid_input = 1, ///< a file or value the user gave is malformed
  io = 2,            ///< a file could not be read or written
  not_found = 3,     ///< a named file, task or tool does not exist
  subprocess = 4,    ///< a child process could not be started or misbehaved
  timeout = 5,       ///< an operation ran past its deadline
  protocol = 6,      ///< a peer sent something the protocol does not allow
  internal = 7,      ///< a broken invariant of ours
  transient = 8,     ///< a service cannot answer now (rate limited, unavailable, timed out):
                     ///< the same request may succeed later
  bad_reply = 9,     ///< a language model answered, but not in the form asked for (no code
                     ///< block, invalid plan JSON), even when asked again with the error
  cancelled = 10,    ///< the operation was cancelled (Ctrl-C) before it finished
  budget_spent = 11, ///< a campaign budget (tokens, cost) is spent: no new request starts
  damaged = 12,      ///< a stored file or record is damaged: a store's data file is shorter
                     ///< than its header says, or a record's checksum does not match it
};

/// Returns the short, stable name of `code` ("invalid_input", ...).
const char* to_string(errc code) noexcept;

/// Carries an error code plus the context a user needs to act on it (file, line, what to do).
class error {
public:
  error(errc code, std::string message) : code_(code), message_(std::move(message)) {}

  /// Returns the classification.
  errc code() const noexcept { return code_; }

  /// Returns the human-readable explanation: for a config's errc::invalid_input, one
  /// `FILE:LINE:COL: message` line per problem.
  const std::string& message() const noexcept { return message_; }

private:
  errc code_;
  std::string message_;
};

/// Shorthand for the result type of every component of ours.
template <class T>
using expected = tl::expected<T, error>;

/// Returns an unexpected error of `code` with `message`.
inline tl::unexpected<error> fail(errc code, std::string message) {
  return tl::unexpected<error>(error{code, std::move(message)});
}

} // namespace ks::base
