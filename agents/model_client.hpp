#pragma once

// What a language-model backend talks to: one blocking call per chat turn. The gateway
// (llm_gateway.hpp) implements it over HTTP, the campaign's gateway actor through its
// messages, the replay client from recorded transcripts; the backend knows none of them.

#include "agents/model_protocol.hpp"
#include "engine/error.hpp"

namespace ks::agents {

/// Sends chat turns to a model and waits for the answers.
class model_client {
public:
  virtual ~model_client() = default;

  /// Sends `request` and returns the model's reply once it came, or why none did:
  /// errc::transient (rate limited, unavailable, timed out, after the retries),
  /// errc::cancelled (Ctrl-C), errc::budget_spent (the campaign's budget), errc::protocol (the
  /// endpoint's answers were not the API's), errc::bad_reply (an answer with no text),
  /// errc::invalid_input (the endpoint refused the request: a bad key, an unknown model).
  [[nodiscard]] virtual engine::expected<model_reply> complete(const model_request& request) = 0;
};

} // namespace ks::agents
