#pragma once

// The language-model backend: the planner, coder and repairer (and the distiller) thinking
// through a model. Each call renders its role's prompt (prompt_library.hpp), sends it through a
// model_client (the campaign's gateway actor, or a gateway directly) and parses the reply
// strictly (reply_parser.hpp). A reply that cannot be used is sent back once with the parse
// error; a second one that cannot either fails with errc::bad_reply, which the supervisor
// records as the branch's own failure kind ("bad_reply"). Errors of the client pass through:
// errc::transient (the planner is asked again later), errc::cancelled (Ctrl-C: the node waits
// for the resume), errc::budget_spent (no new request: the finals run).
//
// What the model answers is never trusted: a plan must name a skill it was offered (or
// "custom"), code must be a whole .cu file that defines ks_forward, and a candidate only ever
// runs inside the bench worker, which verifies it and times it against dishonesty
// (docs/measurement.md).

#include "agents/model_client.hpp"
#include "agents/prompt_library.hpp"
#include "engine/agent_backend.hpp"
#include "engine/skill_library.hpp"

#include <memory>
#include <string>

namespace ks::agents {

/// Implements engine::agent_backend with a language model; see the top of the file.
class llm_backend final : public engine::agent_backend {
public:
  /// Creates a backend named `name` ("openai", "anthropic", "replay") that sends its requests
  /// through `client` with `prompts`, as `settings` says (reply_tokens, temperature).
  llm_backend(std::string name, std::shared_ptr<model_client> client,
              std::shared_ptr<const prompt_library> prompts, engine::backend_settings settings,
              engine::backend_context context);

  /// Returns its name.
  std::string_view name() const noexcept override;

  /// Proposes up to request.count plans from the model, none already tried on this parent.
  /// Returns an empty list when the model says it has no idea left.
  [[nodiscard]] engine::expected<std::vector<engine::plan>>
  propose(const engine::planning_request& request) override;

  /// Returns the model's source for request.plan (the reference itself for the reference
  /// plan); errc::bad_reply when it gives no usable file or the parent unchanged.
  [[nodiscard]] engine::expected<std::string>
  write_code(const engine::coding_request& request) override;

  /// Returns the model's fix, or gave_up when it says it cannot fix it; errc::bad_reply when
  /// it gives neither, or the failed source unchanged.
  [[nodiscard]] engine::expected<engine::repair_reply>
  repair(const engine::repair_request& request) override;

  /// Returns the files of a new skill distilled from `request`'s winning lineage, loaded and
  /// validated (engine::load_skill, as learned); errc::bad_reply when the model's skill does
  /// not load even after it was shown the problems, or reuses an existing id.
  [[nodiscard]] engine::expected<engine::skill> distill(const distill_request& request);

private:
  std::string name_;
  std::shared_ptr<model_client> client_;
  std::shared_ptr<const prompt_library> prompts_;
  engine::backend_settings settings_;
  engine::backend_context context_;
};

} // namespace ks::agents
