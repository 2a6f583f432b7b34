#pragma once

// Problems with a config file are collected, not thrown: every check reports what it found
// and goes on, so one run shows the author everything that is wrong; checkpoint() then fails
// once with all of them (mold's Error + checkpoint, minus the exit: only main picks one).

#include "config/error.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ks::config {

/// A 1-based line and column in a config file.
struct position {
  uint32_t line = 1;
  uint32_t column = 1;
};

/// Returns `FILE:LINE:COL: message`.
std::string located(const std::string& file, position at, const std::string& message);

/// Collects the problems found in one file.
class diagnostics {
public:
  /// Reports problems of `file`, named as the user gave it.
  explicit diagnostics(std::string file) : file_(std::move(file)) {}

  /// Records `message` about the text at `at`.
  void report(position at, std::string message);

  /// Returns how many problems were recorded.
  int64_t count() const noexcept { return static_cast<int64_t>(problems_.size()); }

  /// Returns nothing when no problem was recorded; otherwise one errc::invalid_input error
  /// whose message holds every problem as `FILE:LINE:COL: message`, one a line, in source
  /// order (problems at the same position keep the order they were reported in).
  [[nodiscard]] expected<void> checkpoint() const;

private:
  struct problem {
    position at;
    std::string message;
  };

  std::string file_;
  std::vector<problem> problems_;
};

} // namespace ks::config
