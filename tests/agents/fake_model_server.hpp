#pragma once

// A model endpoint for tests: an HTTP/1.1 server on 127.0.0.1 (an ephemeral port) that speaks
// OpenAI's chat completions or Anthropic's messages with scripted replies and injected faults,
// so that the gateway, the backends and whole campaigns run against it without a network.
//
// Each request gets, in order: the next scripted reply if any was pushed, else the responder's
// (by default a plausible model: plans for a planner, the parent kernel with one launch
// parameter changed for a coder, the failed kernel fixed for a repairer, a skill for a
// distiller; see plausible_reply). Faults are injected by request number (1, 2, ... in order
// of arrival) with a spec such as "1:429,3:500,5:drop,7:slow,9:malformed,11:nocode,13:broken":
//
//   429        status 429 with Retry-After: 0 and an error body
//   401        status 401 with an error body (a key the endpoint refuses)
//   500        status 500 with an error body
//   drop       the connection closed without an answer
//   slow       the answer delayed by slow_s (longer than the client's deadline)
//   malformed  status 200 with a body that is not JSON
//   nocode     a 200 answer whose text has no code block and no JSON
//   broken     a coder's answer whose kernel does not compile (it names KS_FAKE_COMPILE_ERROR,
//              which tests/actors/fake_nvcc.sh rejects)

#include "agents/model_protocol.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ks::test {

/// One request as the server received it.
struct received_request {
  int64_t number = 0; ///< 1, 2, ... in order of arrival
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers; ///< names lowercased
  std::string body;
};

/// What the server answers to one request.
struct scripted_reply {
  int status = 200;
  std::string body;                                         ///< sent as it is
  std::vector<std::pair<std::string, std::string>> headers; ///< besides Content-Type/Length
  double delay_s = 0;                                       ///< before answering
  bool drop = false;                                        ///< close without answering
};

/// Returns a 200 body of `api` whose text is `text`, with usage `input` / `output` tokens.
std::string chat_body(agents::api_kind api, const std::string& text, int64_t input, int64_t output,
                      const std::string& model = "fake-model");

/// Returns the text of the last user message of a request body of `api`, and of its system
/// prompt ("" when none).
std::pair<std::string, std::string> prompt_of(agents::api_kind api, const std::string& body);

/// Returns what a plausible model answers to `request` (see the top of the file), with
/// `fault` ("" for none) applied; tokens are the prompt's and reply's lengths / 4.
scripted_reply plausible_reply(agents::api_kind api, const received_request& request,
                               const std::string& fault);

/// Parses a fault spec ("1:429,3:drop"); invalid entries are skipped.
std::map<int64_t, std::string> parse_faults(const std::string& spec);

/// The server; see the top of the file.
class fake_model_server {
public:
  using responder = std::function<scripted_reply(const received_request&)>;

  /// Starts listening on 127.0.0.1 at an ephemeral port (or `port` when not 0).
  explicit fake_model_server(agents::api_kind api, uint16_t port = 0);

  /// Stops: closes every connection and joins its threads.
  ~fake_model_server();

  fake_model_server(const fake_model_server&) = delete;
  fake_model_server& operator=(const fake_model_server&) = delete;

  /// Returns the port it listens on.
  uint16_t port() const noexcept { return port_; }

  /// Returns the base URL: "http://127.0.0.1:PORT/v1".
  std::string endpoint() const;

  /// Queues `reply` for the next request that has no earlier scripted reply.
  void push(scripted_reply reply);

  /// Answers requests with no scripted reply with `r` (default: plausible_reply, with the
  /// faults of set_faults).
  void set_responder(responder r);

  /// Injects faults by request number (see the top of the file).
  void set_faults(const std::string& spec);

  /// Sets how long a "slow" fault waits, in seconds (default 3).
  void set_slow_s(double seconds);

  /// Returns every request received so far, in order.
  std::vector<received_request> requests() const;

  /// Returns every reply sent so far (a dropped connection's too, with drop set), in the
  /// order they were sent.
  std::vector<scripted_reply> replies() const;

  /// Returns the input and output tokens of every 200 answer sent that is the API's JSON and
  /// was not delayed (a delay is the tests' way to outlast the client's deadline): what a
  /// client that counts exactly must have counted.
  std::pair<int64_t, int64_t> tokens_sent() const;

  /// Returns the most requests that were being answered at once.
  int64_t max_concurrent() const noexcept { return max_concurrent_.load(); }

private:
  void accept_loop();
  void serve(int fd);
  void close_client(int fd);
  scripted_reply answer(const received_request& r);

  agents::api_kind api_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> concurrent_{0};
  std::atomic<int64_t> max_concurrent_{0};
  mutable std::mutex mutex_;
  std::vector<scripted_reply> script_;
  responder responder_;
  std::map<int64_t, std::string> faults_;
  double slow_s_ = 3;
  std::vector<received_request> received_;
  std::vector<scripted_reply> sent_;
  int64_t next_number_ = 1;
  std::vector<int> client_fds_;
  struct threads;
  std::unique_ptr<threads> threads_;
};

} // namespace ks::test
