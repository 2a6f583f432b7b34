#pragma once

// A model service: what the campaign's gateway actor holds. It takes requests with a callback
// (never blocking its caller), can cancel everything in flight, and counts what was spent.
// llm_gateway.hpp sends the requests over HTTP; replay_service.hpp answers them from the
// transcripts of an earlier run, so that an LLM campaign can be re-run deterministically.

#include "agents/model_client.hpp"
#include "agents/model_protocol.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace ks::agents {

/// What a model's tokens cost, in the config's currency per million tokens.
struct model_price {
  double input_per_mtok = 0;
  double output_per_mtok = 0;

  friend bool operator==(const model_price&, const model_price&) = default;
};

/// Tokens and cost of some requests.
struct usage_totals {
  int64_t requests = 0; ///< answered requests
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost = 0;

  /// Counts `reply`: one request, its tokens (held at INT64_MAX, never wrapped) and its cost.
  void add(const model_reply& reply) noexcept {
    requests = saturating_add(requests, 1);
    input_tokens = saturating_add(input_tokens, reply.input_tokens);
    output_tokens = saturating_add(output_tokens, reply.output_tokens);
    cost += reply.cost;
  }

  friend bool operator==(const usage_totals&, const usage_totals&) = default;
};

/// What a service did so far.
struct gateway_stats {
  int64_t submitted = 0; ///< requests submitted
  int64_t succeeded = 0;
  int64_t failed = 0; ///< ended without an answer (cancelled and refused not included)
  int64_t cancelled = 0;
  int64_t refused = 0;   ///< refused because a budget was spent
  int64_t attempts = 0;  ///< HTTP requests started, retries included
  int64_t retries = 0;   ///< attempts beyond each request's first
  int64_t in_flight = 0; ///< HTTP requests running now
  int64_t queued = 0;    ///< requests waiting for a slot or a retry
  usage_totals total;
  std::map<std::string, usage_totals> by_task; ///< "" for requests of no task
  std::string budget_spent; ///< why no request starts any more; empty while within budget
  std::string last_error;   ///< why the last failed request failed (not kept in llm_usage.json)

  friend bool operator==(const gateway_stats&, const gateway_stats&) = default;
};

/// Returns the cost of `input` and `output` tokens at `price`.
inline double cost_of(int64_t input, int64_t output, const model_price& price) {
  return (static_cast<double>(input) * price.input_per_mtok +
          static_cast<double>(output) * price.output_per_mtok) /
         1e6;
}

/// What one request came to.
struct request_outcome {
  engine::expected<model_reply> result; ///< the reply, or why none came
  /// The request's transcript as JSON text (agents/transcript.hpp), redacted of the API key:
  /// the text of its file, for whoever keeps it elsewhere too (the campaign's store). Given
  /// for every outcome, failed, cancelled and refused ones included.
  std::string transcript_json;
};

/// Takes model requests and answers each through a callback.
class model_service : public model_client {
public:
  /// Receives the outcome of one request; it must not block (it may run on the service's
  /// own thread).
  using callback = std::function<void(request_outcome)>;

  /// Queues `request`; `done` is called once with its reply or error. Returns its id (the
  /// transcript's).
  virtual int64_t submit(model_request request, callback done) = 0;

  /// Ends every request queued or in flight with errc::cancelled saying `why`.
  virtual void cancel(std::string why) = 0;

  /// Returns the counters so far.
  virtual gateway_stats stats() const = 0;

  /// Sends `request` and waits for its outcome (submit, then wait).
  [[nodiscard]] engine::expected<model_reply> complete(const model_request& request) override;
};

} // namespace ks::agents
