// The registry of agent backends: one name -> factory table, as kernel_tuner registers its
// strategies. A backend lives in its own file behind agent_backend; adding one means one row
// here. The LLM backends are named but not built yet, so a config that asks for one gets a
// message saying so instead of "unknown backend".

#include "engine/agent_backend.hpp"

#include "engine/offline_backend.hpp"

#include <string>

namespace ks::engine {

namespace {

struct backend_entry {
  std::string_view name;
  std::unique_ptr<agent_backend> (*make)(const backend_settings& settings);
};

// The offline backend takes no settings and ignores those given: the [agents] section may
// also hold an LLM backend's settings, kept for when the user switches back.
const backend_entry registry[] = {
    {"offline",
     [](const backend_settings&) -> std::unique_ptr<agent_backend> {
       return std::make_unique<offline_backend>();
     }},
};

constexpr std::string_view planned[] = {"openai", "anthropic"};

} // namespace

expected<std::unique_ptr<agent_backend>> make_backend(std::string_view name,
                                                      const backend_settings& settings) {
  for (const backend_entry& entry : registry)
    if (entry.name == name)
      return entry.make(settings);
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

} // namespace ks::engine
