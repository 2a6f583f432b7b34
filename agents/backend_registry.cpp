// The registry of agent backends: one name -> factory table. A backend lives in its own file
// behind engine::agent_backend; adding one means one row here. The LLM backends are named but
// not built yet, so a config that asks for one gets a message saying so instead of "unknown
// backend".

#include "agents/backend_registry.hpp"

#include "engine/offline_backend.hpp"

#include <string>

namespace ks::agents {

using engine::errc;
using engine::fail;

namespace {

struct backend_entry {
  std::string_view name;
  std::unique_ptr<engine::agent_backend> (*make)(const engine::backend_settings& settings,
                                                 const engine::backend_context& context);
};

// The offline backend ignores the settings: the [agents] section may also hold an LLM
// backend's settings, kept for when the user switches back.
const backend_entry registry[] = {
    {"offline",
     [](const engine::backend_settings&,
        const engine::backend_context& context) -> std::unique_ptr<engine::agent_backend> {
       return std::make_unique<engine::offline_backend>(context.skills);
     }},
};

constexpr std::string_view planned[] = {"openai", "anthropic"};

} // namespace

engine::expected<std::unique_ptr<engine::agent_backend>>
make_backend(std::string_view name, const engine::backend_settings& settings,
             const engine::backend_context& context) {
  for (const backend_entry& entry : registry)
    if (entry.name == name)
      return entry.make(settings, context);
  for (std::string_view future : planned)
    if (future == name)
      return fail(errc::invalid_input, "the " + std::string(name) +
                                           " backend is not built yet (the LLM issue); use "
                                           "backend = \"offline\"");
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

} // namespace ks::agents
