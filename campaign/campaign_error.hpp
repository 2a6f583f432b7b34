#pragma once

#include "engine/error.hpp"
#include "gpu/failure.hpp"

#include <optional>
#include <string>
#include <utility>

namespace ks::campaign {

/// Says why a campaign could not run: the error, and what kind of failure it was, so that the
/// command line maps it to an exit code without reading the message.
struct campaign_error {
  campaign_error(engine::error e) : error(std::move(e)) {} // NOLINT: every engine error is one
  campaign_error(engine::errc code, std::string message) : error(code, std::move(message)) {}

  engine::error error;
  std::optional<gpu::failure_kind> gpu_failure; ///< a GPU's bench worker failed this way
  /// The machine lacks what the campaign needs (nvcc, the ABI header, the bench worker,
  /// bubblewrap for bench.sandbox): exit 3, whatever the code.
  bool environment = false;

  engine::errc code() const noexcept { return error.code(); }
  const std::string& message() const noexcept { return error.message(); }
};

} // namespace ks::campaign
