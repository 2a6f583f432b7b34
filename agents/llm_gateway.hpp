#pragma once

// The HTTP side of every model request of a campaign: one gateway, shared by every role and
// task, that sends requests to an OpenAI-compatible or Anthropic endpoint over libcurl (see
// llm_gateway.cpp for the method: one thread of its own drives curl's multi interface, so no
// caller's thread waits on the network unless it asks to, and an actor scheduler never does).
//
// What it guarantees:
// - at most max_concurrency HTTP requests in flight; the rest wait in submission order;
// - each attempt ends by request_timeout_s (curl's own deadline);
// - 429, 408, 409, 425, 5xx, a dropped connection, a timed-out attempt and an answer that is
//   not the API's JSON are tried again, up to max_retries times, after an exponential backoff
//   with jitter (retry_base_s * 2^(n-1), at most retry_max_s, times a factor drawn in [0.5, 1])
//   or after what Retry-After asks; a Retry-After beyond retry_max_s ends the request
//   (errc::transient, saying how long the endpoint asked to wait);
// - cancel() ends every request queued or in flight at once (errc::cancelled);
// - budgets: once the tokens or the cost of the answers so far reach a budget, no request
//   (and no retry) starts: it fails with errc::budget_spent; requests in flight finish; a
//   usage an answer gives is checked (negative, fractional, absurd or past int64: a protocol
//   error), one it does not give is estimated from the bytes, and totals never wrap;
// - an answer's body is received up to max_reply_bytes (its headers up to 256 KiB): past it the
//   transfer is cut and the request fails (errc::protocol), not retried;
// - the API key is held in memory only: it is sent in a header and redacted from every
//   transcript; never logged.

#include "agents/model_protocol.hpp"
#include "agents/model_service.hpp"
#include "agents/transcript.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace ks::agents {

/// How the gateway reaches its endpoint, and its limits.
struct gateway_options {
  api_kind api = api_kind::openai;
  std::string endpoint; ///< base URL; empty: the API's public one
  std::string model;
  std::string api_key;                              ///< in memory only; empty: no key is sent
  int64_t max_concurrency = 4;                      ///< HTTP requests in flight, at most
  double request_timeout_s = 120;                   ///< one attempt, at most
  int64_t max_retries = 4;                          ///< attempts after the first, at most
  double retry_base_s = 1;                          ///< the first backoff before jitter
  double retry_max_s = 60;                          ///< the longest wait before a retry
  size_t max_reply_bytes = agents::max_reply_bytes; ///< an answer's body, at most; cut past it
  int64_t token_budget = 0;              ///< input + output tokens of the campaign; 0: unlimited
  double cost_budget = 0;                ///< cost of the campaign at `price`; 0: unlimited
  model_price price;                     ///< of `model`
  std::filesystem::path transcripts_dir; ///< one file per request; empty: none written
  std::filesystem::path usage_file; ///< llm_usage.json, rewritten after every request; empty: none
  gateway_stats earlier;            ///< what earlier runs of the campaign spent (budgets count it)
  std::string backend_name;         ///< for the usage file ("openai", "anthropic")
  uint64_t seed = 0;                ///< of the jitter; 0: drawn at random
};

/// Sends model requests over HTTP; see the top of the file. Thread-safe.
class llm_gateway final : public model_service {
public:
  /// Starts the gateway's thread.
  explicit llm_gateway(gateway_options options);

  /// Cancels what is left and joins the thread.
  ~llm_gateway() override;

  llm_gateway(const llm_gateway&) = delete;
  llm_gateway& operator=(const llm_gateway&) = delete;

  /// Queues `request`; `done` is called once with its reply or error. Returns its id (the
  /// transcript's).
  int64_t submit(model_request request, callback done) override;

  /// Ends every request queued or in flight with errc::cancelled saying `why`; requests
  /// submitted later run as usual.
  void cancel(std::string why) override;

  /// Returns the counters so far.
  gateway_stats stats() const override;

  /// Returns the options (the API key included: never print them).
  const gateway_options& options() const noexcept;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ks::agents
