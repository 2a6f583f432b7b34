#pragma once

// The two chat APIs a language-model backend speaks, as pure functions: building the HTTP
// request of one chat turn and reading the server's answer. No I/O here (llm_gateway.hpp sends
// the requests), so every rule is testable on its own.
//
//   openai     POST <endpoint>/chat/completions   Authorization: Bearer <key>
//              { "model", "messages": [{role, content}], "max_tokens", "temperature" }
//              -> { "model", "choices": [{ "message": {"content"}, "finish_reason" }],
//                   "usage": { "prompt_tokens", "completion_tokens" } }
//   anthropic  POST <endpoint>/messages           x-api-key: <key>, anthropic-version
//              { "model", "system", "messages": [{role, content}], "max_tokens",
//                "temperature" }
//              -> { "model", "content": [{ "type": "text", "text" }], "stop_reason",
//                   "usage": { "input_tokens", "output_tokens" } }
//
// What a status means is decided here too: 2xx is an answer (or a malformed one), 408, 409,
// 425, 429 and 5xx are worth another try (honouring Retry-After), any other status is final.

#include "engine/error.hpp"

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ks::agents {

/// The largest answer body an endpoint may send, in bytes (a reply of 200,000 tokens is about
/// 1 MB): the gateway stops receiving past it, and parse_model_reply refuses a longer one.
inline constexpr size_t max_reply_bytes = size_t{4} * 1024 * 1024;

/// The most tokens one answer may say it used, input or output: more is absurd (no model reads
/// a context that long), so a usage beyond it is a protocol error, as a negative one is.
inline constexpr int64_t max_reply_tokens = 100'000'000;

/// Returns `a + b` for token counts and totals, held at INT64_MAX instead of wrapping.
inline int64_t saturating_add(int64_t a, int64_t b) noexcept {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? (b < 0 ? INT64_MIN : INT64_MAX) : sum;
}

/// Names the chat API an endpoint speaks.
enum class api_kind { openai, anthropic };

/// Returns "openai" or "anthropic".
const char* to_string(api_kind api) noexcept;

/// Parses "openai" or "anthropic"; nullopt otherwise.
std::optional<api_kind> parse_api_kind(std::string_view name) noexcept;

/// One message of a chat: role "system", "user" or "assistant".
struct chat_message {
  std::string role;
  std::string content;

  friend bool operator==(const chat_message&, const chat_message&) = default;
};

/// One request to a model on behalf of a role; the gateway adds the endpoint, model and key.
struct model_request {
  std::string role;                   ///< "planner", "coder", "repairer", "distiller"
  std::string task;                   ///< the task it is for; empty: none
  int64_t node = -1;                  ///< the node it is for; -1: none
  std::vector<chat_message> messages; ///< a system message first, if any
  int64_t max_tokens = 8192;          ///< the longest reply asked for
  double temperature = 0.2;

  friend bool operator==(const model_request&, const model_request&) = default;
};

/// A model's answer, with what it cost.
struct model_reply {
  std::string text;          ///< the reply's text (every text block, joined)
  std::string model;         ///< the model as the server named it
  std::string finish_reason; ///< "stop", "length", "end_turn", ...
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  bool usage_estimated = false; ///< the answer gave no usage: tokens are bytes / 4, rounded up
  double cost = 0;              ///< at the configured prices; 0 when none is configured
  double latency_ms = 0;        ///< from the request's start to its answer, retries included
  int64_t attempts = 1;         ///< HTTP requests sent, retries included
  std::string transcript;       ///< the transcript file written for it; empty: none
};

/// An HTTP POST to send.
struct http_request {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers; ///< name, value
  std::string body;
};

/// Returns the public base URL of `api` ("https://api.openai.com/v1", ...).
std::string default_endpoint(api_kind api);

/// Returns the POST of `request` to `endpoint` (the base URL; empty: the public one) for
/// `model`, with `api_key` in the API's header when it is not empty.
http_request make_http_request(api_kind api, std::string_view endpoint, std::string_view model,
                               std::string_view api_key, const model_request& request);

/// Reads a 2xx answer's body. Fails with errc::protocol when it is not JSON of the API's
/// shape (naming what is missing), is longer than max_reply_bytes or nested deeper than
/// decode::max_depth, or when a usage count it gives is not an integer from 0 to
/// max_reply_tokens (negative, fractional, absurd, past int64). An answer without usage (or
/// without one of its counts) is estimated: its text's bytes / 4 as output, `request_bytes` / 4
/// as input, rounded up, so that a token budget counts it all the same. A reply with no text is an
/// answer (its tokens were paid): what the text must hold is for the backend to judge.
[[nodiscard]] engine::expected<model_reply> parse_model_reply(api_kind api, std::string_view body,
                                                              size_t request_bytes = 0);

/// Checks whether an HTTP `status` is worth another try: 408, 409, 425, 429 and 5xx.
bool retryable_status(long status) noexcept;

/// Returns the delay a Retry-After header `value` asks for, in seconds: a number of seconds
/// (fractions allowed) or an HTTP date, against `now`; nullopt when it is neither.
std::optional<double> parse_retry_after(std::string_view value, std::time_t now);

/// Returns one line saying what an error body holds: its "error.message" (or "message") when
/// it is JSON that has one, else its first 200 characters, blanks collapsed.
std::string error_summary(std::string_view body);

} // namespace ks::agents
