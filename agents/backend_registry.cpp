// The registry of agent backends: one name -> factory table. A backend lives in its own file
// behind engine::agent_backend; adding one means one row here. The model backends share one
// implementation (llm_backend.hpp) and differ by the service that answers them: openai and
// anthropic by the HTTP gateway speaking that API, replay by recorded transcripts.

#include "agents/backend_registry.hpp"

#include "agents/llm_backend.hpp"
#include "agents/llm_gateway.hpp"
#include "agents/replay_service.hpp"
#include "agents/usage_file.hpp"
#include "engine/offline_backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ks::agents {

using engine::errc;
using engine::fail;

namespace {

using factory = engine::expected<std::unique_ptr<engine::agent_backend>> (*)(
    std::string_view name, const engine::backend_settings& settings,
    const engine::backend_context& context, const model_wiring& wiring);

struct backend_entry {
  std::string_view name;
  bool model;
  factory make;
};

// The offline backend ignores the settings: the [agents] section may also hold an LLM
// backend's settings, kept for when the user switches back.
engine::expected<std::unique_ptr<engine::agent_backend>>
make_offline(std::string_view, const engine::backend_settings&,
             const engine::backend_context& context, const model_wiring&) {
  return std::make_unique<engine::offline_backend>(context.skills);
}

engine::expected<std::unique_ptr<engine::agent_backend>>
make_model_backend(std::string_view name, const engine::backend_settings& settings,
                   const engine::backend_context& context, const model_wiring& wiring) {
  if (wiring.client == nullptr)
    return fail(errc::invalid_input, "the " + std::string(name) +
                                         " backend needs a model service (the campaign makes "
                                         "one from [agents])");
  std::shared_ptr<const prompt_library> prompts = wiring.prompts;
  if (prompts == nullptr) {
    auto loaded = prompt_library::load(settings.prompts_dir.empty()
                                           ? default_prompts_dir()
                                           : std::filesystem::path(settings.prompts_dir));
    if (!loaded)
      return tl::unexpected(loaded.error());
    prompts = std::make_shared<const prompt_library>(std::move(*loaded));
  }
  return std::make_unique<llm_backend>(std::string(name), wiring.client, std::move(prompts),
                                       settings, context);
}

const backend_entry registry[] = {
    {"offline", false, make_offline},
    {"openai", true, make_model_backend},
    {"anthropic", true, make_model_backend},
    {"replay", true, make_model_backend},
};

} // namespace

engine::expected<std::unique_ptr<engine::agent_backend>>
make_backend(std::string_view name, const engine::backend_settings& settings,
             const engine::backend_context& context, const model_wiring& wiring) {
  for (const backend_entry& entry : registry)
    if (entry.name == name)
      return entry.make(name, settings, context, wiring);
  std::string valid;
  for (std::string_view known : backend_names())
    valid.append(valid.empty() ? "" : ", ").append(known);
  return fail(errc::invalid_input,
              "unknown agent backend '" + std::string(name) + "'; valid backends: " + valid);
}

std::vector<std::string_view> backend_names() {
  std::vector<std::string_view> names;
  for (const backend_entry& entry : registry)
    names.push_back(entry.name);
  return names;
}

bool needs_model(std::string_view name) noexcept {
  for (const backend_entry& entry : registry)
    if (entry.name == name)
      return entry.model;
  return false;
}

engine::expected<std::shared_ptr<model_service>> make_model_service(const service_settings& s) {
  gateway_stats earlier;
  if (!s.usage_file.empty()) {
    auto read = read_usage(s.usage_file);
    if (!read)
      return tl::unexpected(read.error());
    if (*read)
      earlier = std::move((*read)->stats);
  }
  // The budgets count from the larger of the two accounts, field by field.
  usage_totals& t = earlier.total;
  t.requests = std::max(t.requests, s.spent_floor.requests);
  t.input_tokens = std::max(t.input_tokens, s.spent_floor.input_tokens);
  t.output_tokens = std::max(t.output_tokens, s.spent_floor.output_tokens);
  t.cost = std::max(t.cost, s.spent_floor.cost);
  if (s.backend == "replay") {
    if (s.replay_dir.empty())
      return fail(errc::invalid_input, "agents.backend \"replay\" needs agents.replay (the "
                                       "transcripts folder of the run to replay)");
    replay_options o;
    o.recorded = s.replay_dir;
    o.transcripts_dir = s.transcripts_dir;
    o.model = s.model;
    o.price = s.price;
    o.token_budget = s.token_budget;
    o.cost_budget = s.cost_budget;
    o.usage_file = s.usage_file;
    o.earlier = std::move(earlier);
    auto made = replay_service::open(std::move(o));
    if (!made)
      return tl::unexpected(made.error());
    return std::shared_ptr<model_service>(std::move(*made));
  }
  auto api = parse_api_kind(s.backend);
  if (!api)
    return fail(errc::invalid_input, "the " + s.backend + " backend talks to no model");
  gateway_options o;
  o.api = *api;
  o.endpoint = s.endpoint;
  o.model = s.model;
  if (!s.api_key_env.empty()) {
    const char* key = std::getenv(s.api_key_env.c_str());
    if (key == nullptr || *key == '\0')
      return fail(errc::invalid_input,
                  "agents.api_key_env names " + s.api_key_env +
                      ", which is not set in the environment (export it, or set api_key_env = "
                      "\"\" for an endpoint that needs no key)");
    o.api_key = key;
  }
  o.max_concurrency = s.max_concurrency;
  o.request_timeout_s = s.request_timeout_s;
  o.max_retries = s.max_retries;
  o.retry_base_s = s.retry_base_s;
  o.retry_max_s = s.retry_max_s;
  o.token_budget = s.token_budget;
  o.cost_budget = s.cost_budget;
  o.price = s.price;
  o.transcripts_dir = s.transcripts_dir;
  o.usage_file = s.usage_file;
  o.earlier = std::move(earlier);
  o.backend_name = s.backend;
  return std::shared_ptr<model_service>(std::make_shared<llm_gateway>(std::move(o)));
}

} // namespace ks::agents
