#pragma once

// The registry of agent backends: one name -> factory table, as kernel_tuner registers its
// strategies. It lives outside engine/ so that a backend speaking HTTP (openai, anthropic)
// links its HTTP library here, never into engine/: adding one is one file and one row.
//
// A language-model backend thinks through a model service (model_service.hpp): the campaign
// makes one (make_model_service) and shares it between every role through its gateway actor,
// so that the concurrency limit, the retries and the budgets are the campaign's, not a role's.

#include "agents/model_client.hpp"
#include "agents/model_service.hpp"
#include "agents/prompt_library.hpp"
#include "engine/agent_backend.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ks::agents {

/// What a language-model backend thinks through, beyond its settings.
struct model_wiring {
  std::shared_ptr<model_client> client;          ///< required by a model backend
  std::shared_ptr<const prompt_library> prompts; ///< null: loaded from settings.prompts_dir
};

/// Creates the backend named `name` ("offline", "openai", "anthropic", "replay") with
/// `settings` and `context`; a model backend sends its requests through `wiring.client`.
/// Fails with errc::invalid_input listing the valid names for an unknown one, or when a model
/// backend has no client; with the prompt folder's error when its prompts do not load.
[[nodiscard]] engine::expected<std::unique_ptr<engine::agent_backend>>
make_backend(std::string_view name, const engine::backend_settings& settings,
             const engine::backend_context& context, const model_wiring& wiring = {});

/// Returns the names make_backend accepts, in registration order.
std::vector<std::string_view> backend_names();

/// Checks whether backend `name` thinks through a model (needs a model service).
bool needs_model(std::string_view name) noexcept;

/// What the campaign's model service is made from: the config's [agents] and budgets.
struct service_settings {
  std::string backend;  ///< "openai", "anthropic" or "replay"
  std::string endpoint; ///< base URL; empty: the API's public one
  std::string model;
  std::string api_key_env; ///< the variable holding the key; empty: no key
  int64_t max_concurrency = 4;
  double request_timeout_s = 120;
  int64_t max_retries = 4;
  double retry_base_s = 1;
  double retry_max_s = 60;
  int64_t token_budget = 0;              ///< 0: unlimited
  double cost_budget = 0;                ///< 0: unlimited
  model_price price;                     ///< of `model`
  std::filesystem::path transcripts_dir; ///< empty: none written
  std::filesystem::path usage_file;      ///< llm_usage.json: read (earlier runs), then kept
  std::filesystem::path replay_dir;      ///< "replay": the transcripts to answer from
  usage_totals spent_floor; ///< what earlier runs spent at least (the store's transcripts): the
                            ///< budgets start from the larger of it and usage_file's
};

/// Makes the model service `settings.backend` needs: an llm_gateway for openai and anthropic
/// (the API key read from the environment variable api_key_env names, never written
/// anywhere), a replay_service for replay; either starts from what usage_file says earlier
/// runs spent, or from spent_floor where that says more (a usage file deleted or rewritten
/// does not reset a budget). Fails with invalid_input when api_key_env names a variable that
/// is not set, when usage_file is malformed, or for a backend that needs no model.
[[nodiscard]] engine::expected<std::shared_ptr<model_service>>
make_model_service(const service_settings& settings);

} // namespace ks::agents
