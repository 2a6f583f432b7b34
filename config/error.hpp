#pragma once

// config/ depends on nothing of ours (docs/architecture.md), so it has its own small error
// type, shaped like engine/error.hpp: a code plus the message a user acts on.

#include <tl/expected.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace ks::config {

/// Classifies why loading a config failed. The numbers are stable ("storage order").
enum class errc : int32_t {
  invalid_input = 1, ///< the file is not valid TOML, or holds unknown keys or bad values
  io = 2,            ///< the file could not be read
  not_found = 3,     ///< the file does not exist
};

/// Returns the short, stable name of `code` ("invalid_input", ...).
const char* to_string(errc code) noexcept;

/// Carries an error code plus the context a user needs to act on it (file, line, what to do).
class error {
public:
  error(errc code, std::string message) : code_(code), message_(std::move(message)) {}

  /// Returns the classification.
  errc code() const noexcept { return code_; }

  /// Returns the human-readable explanation: for errc::invalid_input, one
  /// `FILE:LINE:COL: message` line per problem.
  const std::string& message() const noexcept { return message_; }

private:
  errc code_;
  std::string message_;
};

/// Shorthand for the result type of config/.
template <class T>
using expected = tl::expected<T, error>;

/// Returns an unexpected error of `code` with `message`.
inline tl::unexpected<error> fail(errc code, std::string message) {
  return tl::unexpected<error>(error{code, std::move(message)});
}

} // namespace ks::config
