#pragma once

// The registry of agent backends: one name -> factory table, as kernel_tuner registers its
// strategies. It lives outside engine/ so that a backend speaking HTTP (openai, anthropic)
// links its HTTP library here, never into engine/: adding one is one file and one row.

#include "engine/agent_backend.hpp"

#include <memory>
#include <string_view>
#include <vector>

namespace ks::agents {

/// Creates the backend named `name` ("offline") with `settings` and `context`; fails with
/// errc::invalid_input listing the valid names otherwise, or saying that a planned backend is
/// not built yet.
engine::expected<std::unique_ptr<engine::agent_backend>>
make_backend(std::string_view name, const engine::backend_settings& settings,
             const engine::backend_context& context);

/// Returns the names make_backend accepts, in registration order ("offline").
std::vector<std::string_view> backend_names();

} // namespace ks::agents
