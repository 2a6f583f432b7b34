// The HTTP gateway against a local model endpoint (tests/agents/fake_model_server.hpp) with
// scripted replies and injected faults: what is retried and how long it waits, the deadline,
// the concurrency limit, cancellation, budgets, accounting, transcripts and the API key.

#include "agents/backend_registry.hpp"
#include "agents/llm_gateway.hpp"
#include "agents/transcript.hpp"
#include "tests/agents/fake_model_server.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

using namespace ks;
using agents::api_kind;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

agents::gateway_options options_for(const test::fake_model_server& server, api_kind api) {
  agents::gateway_options o;
  o.api = api;
  o.endpoint = server.endpoint();
  o.model = "fake-model";
  o.max_concurrency = 4;
  o.request_timeout_s = 5;
  o.max_retries = 4;
  o.retry_base_s = 0.01;
  o.retry_max_s = 2;
  o.seed = 7;
  return o;
}

agents::model_request hello(const std::string& task = "relu", int64_t node = 1) {
  agents::model_request r;
  r.role = "coder";
  r.task = task;
  r.node = node;
  r.messages = {{"system", "You are a test."}, {"user", "Say hello."}};
  r.max_tokens = 100;
  return r;
}

test::scripted_reply ok(api_kind api, const std::string& text = "hello", int64_t in = 10,
                        int64_t out = 5) {
  test::scripted_reply r;
  r.body = test::chat_body(api, text, in, out);
  return r;
}

test::scripted_reply status(int code, const std::string& message = "no") {
  test::scripted_reply r;
  r.status = code;
  r.body = "{\"error\": {\"message\": \"" + message + "\"}}";
  return r;
}

/// Waits (at most a minute) until `server` has received `n` requests: they are in flight.
void wait_for_requests(const test::fake_model_server& server, size_t n) {
  auto deadline = clock_type::now() + std::chrono::minutes(1);
  while (server.requests().size() < n && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(server.requests().size() >= n);
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

std::string all_files_text(const fs::path& dir) {
  std::string text;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec))
    if (entry.is_regular_file())
      text += test::read_file(entry.path());
  return text;
}

} // namespace

TEST_CASE("the gateway sends an OpenAI chat completion with the key as a bearer token and reads "
          "the reply's text and usage",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  server.push(ok(api_kind::openai, "the answer", 123, 45));
  auto o = options_for(server, api_kind::openai);
  o.api_key = "sk-test-123";
  agents::llm_gateway gateway(o);
  auto reply = gateway.complete(hello());
  REQUIRE(reply.has_value());
  CHECK(reply->text == "the answer");
  CHECK(reply->input_tokens == 123);
  CHECK(reply->output_tokens == 45);
  CHECK(reply->attempts == 1);
  auto received = server.requests();
  REQUIRE(received.size() == 1);
  CHECK(received[0].path == "/v1/chat/completions");
  CHECK(received[0].headers["authorization"] == "Bearer sk-test-123");
  CHECK_THAT(received[0].body, Catch::Contains("\"model\":\"fake-model\""));
  CHECK_THAT(received[0].body, Catch::Contains("\"role\":\"system\""));
  agents::gateway_stats s = gateway.stats();
  CHECK(s.succeeded == 1);
  CHECK(s.total.input_tokens == 123);
  CHECK(s.by_task["relu"].output_tokens == 45);
}

TEST_CASE("the gateway sends an Anthropic message with the system prompt apart, x-api-key and "
          "the API version",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::anthropic);
  server.push(ok(api_kind::anthropic, "bonjour", 7, 3));
  auto o = options_for(server, api_kind::anthropic);
  o.api_key = "ak-test-456";
  agents::llm_gateway gateway(o);
  auto reply = gateway.complete(hello());
  REQUIRE(reply.has_value());
  CHECK(reply->text == "bonjour");
  CHECK(reply->input_tokens == 7);
  auto received = server.requests();
  REQUIRE(received.size() == 1);
  CHECK(received[0].path == "/v1/messages");
  CHECK(received[0].headers["x-api-key"] == "ak-test-456");
  CHECK(received[0].headers.count("authorization") == 0);
  CHECK(received[0].headers["anthropic-version"] == "2023-06-01");
  CHECK_THAT(received[0].body, Catch::Contains("\"system\":\"You are a test.\""));
  CHECK_THAT(received[0].body, !Catch::Contains("\"role\":\"system\""));
}

TEST_CASE("a 429 is tried again after the Retry-After it asks for, and counted as a retry",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  test::scripted_reply limited = status(429, "rate limited");
  limited.headers.emplace_back("Retry-After", "1");
  server.push(limited);
  server.push(ok(api_kind::openai));
  test::test_context ctx;
  auto o = options_for(server, api_kind::openai);
  o.transcripts_dir = ctx.dir() / "transcripts";
  agents::llm_gateway gateway(o);
  auto start = clock_type::now();
  auto reply = gateway.complete(hello());
  double took = seconds_since(start);
  REQUIRE(reply.has_value());
  CHECK(reply->attempts == 2);
  CHECK(took >= 0.95);
  CHECK(took < 3);
  agents::gateway_stats s = gateway.stats();
  CHECK(s.attempts == 2);
  CHECK(s.retries == 1);
  auto transcripts = agents::read_transcripts(o.transcripts_dir);
  REQUIRE(transcripts.has_value());
  REQUIRE(transcripts->size() == 1);
  REQUIRE(transcripts->front().attempts.size() == 2);
  CHECK(transcripts->front().attempts[0].status == 429);
  CHECK(transcripts->front().attempts[0].retry_after_s == 1);
  CHECK(transcripts->front().attempts[1].status == 200);
}

TEST_CASE("a 500, a dropped connection and an answer that is not JSON are each tried again",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  server.push(status(500, "boom"));
  test::scripted_reply dropped;
  dropped.drop = true;
  server.push(dropped);
  test::scripted_reply malformed;
  malformed.body = "{\"choices\": [ not json";
  server.push(malformed);
  server.push(ok(api_kind::openai, "finally", 20, 10));
  agents::llm_gateway gateway(options_for(server, api_kind::openai));
  auto reply = gateway.complete(hello());
  REQUIRE(reply.has_value());
  CHECK(reply->text == "finally");
  CHECK(reply->attempts == 4);
  agents::gateway_stats s = gateway.stats();
  CHECK(s.retries == 3);
  CHECK(s.failed == 0);
  // Only the answer that came counts: no tokens for the failed attempts.
  CHECK(s.total.input_tokens == 20);
  CHECK(s.total.output_tokens == 10);
}

TEST_CASE("an answer slower than the deadline is abandoned at the deadline and tried again",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  test::scripted_reply slow = ok(api_kind::openai, "too late");
  slow.delay_s = 5;
  server.push(slow);
  server.push(ok(api_kind::openai, "in time"));
  auto o = options_for(server, api_kind::openai);
  o.request_timeout_s = 0.5;
  agents::llm_gateway gateway(o);
  auto start = clock_type::now();
  auto reply = gateway.complete(hello());
  double took = seconds_since(start);
  REQUIRE(reply.has_value());
  CHECK(reply->text == "in time");
  CHECK(reply->attempts == 2);
  CHECK(took >= 0.45);
  CHECK(took < 3);
}

TEST_CASE("a request that keeps failing gives up after max_retries with a transient error "
          "naming the last failure",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  for (int i = 0; i < 10; ++i)
    server.push(status(503, "overloaded"));
  auto o = options_for(server, api_kind::openai);
  o.max_retries = 2;
  agents::llm_gateway gateway(o);
  auto reply = gateway.complete(hello());
  REQUIRE_FALSE(reply.has_value());
  CHECK(reply.error().code() == engine::errc::transient);
  CHECK_THAT(reply.error().message(), Catch::Contains("3 times"));
  CHECK_THAT(reply.error().message(), Catch::Contains("HTTP 503: overloaded"));
  CHECK(server.requests().size() == 3);
  CHECK(gateway.stats().failed == 1);
}

TEST_CASE("a refusal that another try cannot fix (401) is not tried again", "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  server.push(status(401, "invalid api key"));
  agents::llm_gateway gateway(options_for(server, api_kind::openai));
  auto reply = gateway.complete(hello());
  REQUIRE_FALSE(reply.has_value());
  CHECK(reply.error().code() == engine::errc::invalid_input);
  CHECK_THAT(reply.error().message(), Catch::Contains("HTTP 401: invalid api key"));
  CHECK(server.requests().size() == 1);
}

TEST_CASE("a Retry-After longer than retry_max_s ends the request at once, saying so",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  test::scripted_reply limited = status(429, "quota");
  limited.headers.emplace_back("Retry-After", "3600");
  server.push(limited);
  agents::llm_gateway gateway(options_for(server, api_kind::openai));
  auto start = clock_type::now();
  auto reply = gateway.complete(hello());
  REQUIRE_FALSE(reply.has_value());
  CHECK(reply.error().code() == engine::errc::transient);
  CHECK_THAT(reply.error().message(), Catch::Contains("asks to wait 3.6e+03 s"));
  CHECK(seconds_since(start) < 2);
}

TEST_CASE("no more than max_concurrency requests are in flight at once, and every one is "
          "answered",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  server.set_responder([](const test::received_request&) {
    test::scripted_reply r = ok(api_kind::openai);
    r.delay_s = 0.15;
    return r;
  });
  auto o = options_for(server, api_kind::openai);
  o.max_concurrency = 2;
  agents::llm_gateway gateway(o);
  std::mutex m;
  std::condition_variable cv;
  int done = 0;
  int succeeded = 0;
  for (int i = 0; i < 8; ++i)
    gateway.submit(hello(), [&](agents::request_outcome o) {
      std::lock_guard lock(m);
      ++done;
      succeeded += o.result.has_value() ? 1 : 0;
      cv.notify_all();
    });
  std::unique_lock lock(m);
  REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done == 8; }));
  CHECK(succeeded == 8);
  CHECK(server.max_concurrent() == 2);
}

TEST_CASE("cancel ends the requests queued and in flight at once, with errc::cancelled",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  server.set_responder([](const test::received_request&) {
    test::scripted_reply r = ok(api_kind::openai);
    r.delay_s = 10;
    return r;
  });
  auto o = options_for(server, api_kind::openai);
  o.max_concurrency = 2;
  agents::llm_gateway gateway(o);
  std::mutex m;
  std::condition_variable cv;
  std::vector<engine::errc> codes;
  for (int i = 0; i < 5; ++i)
    gateway.submit(hello(), [&](agents::request_outcome o) {
      std::lock_guard lock(m);
      codes.push_back(o.result ? engine::errc::internal : o.result.error().code());
      cv.notify_all();
    });
  wait_for_requests(server, 2); // two are in flight
  auto start = clock_type::now();
  gateway.cancel("interrupted by the user");
  std::unique_lock lock(m);
  REQUIRE(cv.wait_for(lock, std::chrono::seconds(3), [&] { return codes.size() == 5; }));
  CHECK(seconds_since(start) < 1);
  for (engine::errc c : codes)
    CHECK(c == engine::errc::cancelled);
  CHECK(gateway.stats().cancelled == 5);
  lock.unlock();
  // A request after the cancel runs as usual.
  server.set_responder([](const test::received_request&) { return ok(api_kind::openai); });
  CHECK(gateway.complete(hello()).has_value());
}

TEST_CASE("once the token budget is spent no request starts (budget_spent), and the spent "
          "tokens and cost are counted at the configured price",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  server.push(ok(api_kind::openai, "first", 1000, 500));
  server.push(ok(api_kind::openai, "never", 1, 1));
  auto o = options_for(server, api_kind::openai);
  o.token_budget = 1200;
  o.price = agents::model_price{2.0, 10.0};
  agents::llm_gateway gateway(o);
  auto first = gateway.complete(hello());
  REQUIRE(first.has_value());
  CHECK(first->cost == Approx(1000 * 2.0 / 1e6 + 500 * 10.0 / 1e6));
  auto second = gateway.complete(hello());
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().code() == engine::errc::budget_spent);
  CHECK_THAT(second.error().message(), Catch::Contains("token budget (1200 tokens)"));
  CHECK(server.requests().size() == 1);
  agents::gateway_stats s = gateway.stats();
  CHECK(s.refused == 1);
  CHECK(s.total.cost == Approx(0.007));
  CHECK_FALSE(s.budget_spent.empty());
}

TEST_CASE("the cost budget stops new requests too", "[agents][gateway]") {
  test::fake_model_server server(api_kind::anthropic);
  server.push(ok(api_kind::anthropic, "first", 1000000, 0));
  auto o = options_for(server, api_kind::anthropic);
  o.cost_budget = 0.5;
  o.price = agents::model_price{1.0, 0};
  agents::llm_gateway gateway(o);
  REQUIRE(gateway.complete(hello()).has_value());
  auto second = gateway.complete(hello());
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().code() == engine::errc::budget_spent);
}

TEST_CASE("an answer larger than max_reply_bytes is cut there and fails, not tried again",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  // Issue 27: a flooding endpoint took the engine to 4.2 GB in 3 s.
  server.push(ok(api_kind::openai, std::string(size_t{3} * 1024 * 1024, 'x')));
  server.push(ok(api_kind::openai, "small"));
  auto o = options_for(server, api_kind::openai);
  o.max_reply_bytes = size_t{1024} * 1024;
  test::test_context ctx;
  o.transcripts_dir = ctx.dir() / "transcripts";
  agents::llm_gateway gateway(o);
  auto large = gateway.complete(hello());
  REQUIRE_FALSE(large.has_value());
  CHECK(large.error().code() == engine::errc::protocol);
  CHECK_THAT(large.error().message(), Catch::Contains("larger than 1048576 bytes"));
  CHECK(server.requests().size() == 1); // not tried again
  // The next request is answered as usual.
  auto small = gateway.complete(hello());
  REQUIRE(small.has_value());
  CHECK(small->text == "small");
  CHECK(all_files_text(o.transcripts_dir).size() < size_t{64} * 1024);
}

TEST_CASE("a usage that is negative, fractional, absurd or past int64 is a protocol error, and "
          "an answer without usage is counted by its bytes",
          "[agents][gateway]") {
  const char* bad[] = {R"({"prompt_tokens": -5, "completion_tokens": 3})",
                       R"({"prompt_tokens": 9223372036854775807, "completion_tokens": 3})",
                       R"({"prompt_tokens": 18446744073709551615, "completion_tokens": 3})",
                       R"({"prompt_tokens": 1.5, "completion_tokens": 3})",
                       R"({"prompt_tokens": 1e300, "completion_tokens": 3})",
                       R"({"prompt_tokens": 3, "completion_tokens": "3"})"};
  for (const char* usage : bad) {
    auto reply = agents::parse_model_reply(
        api_kind::openai,
        std::string(R"({"choices":[{"message":{"content":"hi"}}],"usage":)") + usage + "}");
    INFO(usage);
    REQUIRE_FALSE(reply.has_value());
    CHECK(reply.error().code() == engine::errc::protocol);
    CHECK_THAT(reply.error().message(), Catch::Contains("is not a token count"));
  }
  // No usage: estimated (request bytes / 4 in, text bytes / 4 out), so a budget still counts it.
  auto none = agents::parse_model_reply(api_kind::anthropic,
                                        R"({"content":[{"type":"text","text":"12345678"}]})", 400);
  REQUIRE(none.has_value());
  CHECK(none->usage_estimated);
  CHECK(none->input_tokens == 100);
  CHECK(none->output_tokens == 2);
  // Through the gateway: answers without usage spend the token budget all the same.
  test::fake_model_server server(api_kind::openai);
  test::scripted_reply silent;
  silent.body = R"({"choices":[{"message":{"content":")" + std::string(4000, 'a') + R"("}}]})";
  server.push(silent);
  server.push(silent);
  auto o = options_for(server, api_kind::openai);
  o.token_budget = 1000;
  agents::llm_gateway gateway(o);
  REQUIRE(gateway.complete(hello()).has_value());
  auto second = gateway.complete(hello());
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().code() == engine::errc::budget_spent);
}

TEST_CASE("token totals never wrap: the budget trips on the largest counts allowed",
          "[agents][gateway]") {
  agents::usage_totals t;
  agents::model_reply huge;
  huge.input_tokens = agents::max_reply_tokens;
  huge.output_tokens = agents::max_reply_tokens;
  t.input_tokens = INT64_MAX - 5;
  t.add(huge);
  CHECK(t.input_tokens == INT64_MAX);
  CHECK(t.output_tokens == agents::max_reply_tokens);
  CHECK(agents::saturating_add(INT64_MAX, INT64_MAX) == INT64_MAX);
}

TEST_CASE("a deleted llm_usage.json does not reset the token budget: it starts from what the "
          "store's transcripts say was spent",
          "[agents][gateway]") {
  test::fake_model_server server(api_kind::openai);
  server.push(ok(api_kind::openai, "never"));
  test::test_context ctx;
  agents::service_settings s;
  s.backend = "openai";
  s.endpoint = server.endpoint();
  s.model = "fake-model";
  s.token_budget = 1000;
  s.usage_file = ctx.dir() / "llm_usage.json"; // not there: deleted
  s.spent_floor.requests = 3;
  s.spent_floor.input_tokens = 900;
  s.spent_floor.output_tokens = 200;
  auto service = agents::make_model_service(s);
  REQUIRE(service.has_value());
  CHECK_FALSE((*service)->stats().budget_spent.empty());
  auto refused = (*service)->complete(hello());
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == engine::errc::budget_spent);
  CHECK(server.requests().empty());
}

TEST_CASE("a transcript longer than max_transcript_bytes is cut, saying so", "[agents][gateway]") {
  agents::transcript t;
  t.messages = {{"system", "s"}, {"user", std::string(size_t{6} * 1024 * 1024, 'u')}};
  t.reply = std::string(size_t{6} * 1024 * 1024, 'r') + "\xc3\xa9"; // ends in a two-byte character
  std::string text = agents::transcript_json(t, "");
  CHECK(text.size() < agents::max_transcript_bytes + 4096);
  CHECK(text.find("\"truncated\":true") != std::string::npos);
  CHECK(text.find("bytes cut") != std::string::npos);
  auto back = agents::parse_transcript(text);
  REQUIRE(back.has_value()); // still valid JSON (cut at a character's start)
  CHECK(back->reply.size() < size_t{3} * 1024 * 1024);
}

TEST_CASE("a transcript holds the prompt, the reply, every attempt, tokens, latency and "
          "model, and never the API key, even when the endpoint echoes it",
          "[agents][gateway]") {
  test::test_context ctx;
  test::fake_model_server server(api_kind::openai);
  const std::string key = "sk-secret-ABCDEF0123456789";
  server.push(status(500, "bad key " + key + " in header"));
  server.push(ok(api_kind::openai, "a reply mentioning " + key, 11, 22));
  auto o = options_for(server, api_kind::openai);
  o.api_key = key;
  o.transcripts_dir = ctx.dir() / "transcripts";
  agents::llm_gateway gateway(o);
  auto reply = gateway.complete(hello("softmax", 4));
  REQUIRE(reply.has_value());
  REQUIRE_FALSE(reply->transcript.empty());
  CHECK(fs::path(reply->transcript).parent_path().filename() == "softmax");
  CHECK(fs::path(reply->transcript).filename().string().find("-coder-node4.json") !=
        std::string::npos);
  auto t = agents::parse_transcript(test::read_file(reply->transcript));
  REQUIRE(t.has_value());
  CHECK(t->role == "coder");
  CHECK(t->task == "softmax");
  CHECK(t->node == 4);
  CHECK(t->model == "fake-model");
  CHECK(t->input_tokens == 11);
  CHECK(t->output_tokens == 22);
  CHECK(t->latency_ms > 0);
  CHECK(t->attempts.size() == 2);
  CHECK(t->messages.size() == 2);
  CHECK(t->messages[1].content == "Say hello.");
  CHECK_THAT(t->reply, Catch::Contains("[redacted]"));
  CHECK(all_files_text(ctx.dir()).find(key) == std::string::npos);
}

TEST_CASE("a failed request keeps its transcript, with the error and no reply",
          "[agents][gateway]") {
  test::test_context ctx;
  test::fake_model_server server(api_kind::openai);
  server.push(status(400, "unknown model"));
  auto o = options_for(server, api_kind::openai);
  o.transcripts_dir = ctx.dir() / "t";
  agents::llm_gateway gateway(o);
  REQUIRE_FALSE(gateway.complete(hello()).has_value());
  auto all = agents::read_transcripts(o.transcripts_dir);
  REQUIRE(all.has_value());
  REQUIRE(all->size() == 1);
  CHECK(all->front().outcome == "failed");
  CHECK_THAT(all->front().error, Catch::Contains("unknown model"));
}

TEST_CASE("every outcome hands its caller the transcript's text, redacted and equal to its file: "
          "answered, failed, cancelled and refused",
          "[agents][gateway]") {
  test::test_context ctx;
  test::fake_model_server server(api_kind::openai);
  const std::string key = "sk-secret-handed-0a1b2c";
  server.push(ok(api_kind::openai, "a reply mentioning " + key, 600, 500));
  server.push(status(400, "unknown model, key " + key));
  server.set_responder([](const test::received_request&) {
    test::scripted_reply r = ok(api_kind::openai);
    r.delay_s = 10;
    return r;
  });
  auto o = options_for(server, api_kind::openai);
  o.api_key = key;
  o.max_concurrency = 1;
  o.transcripts_dir = ctx.dir() / "transcripts";
  agents::llm_gateway gateway(o);
  std::mutex m;
  std::condition_variable cv;
  std::vector<agents::request_outcome> outcomes;
  auto keep = [&](agents::request_outcome outcome) {
    std::lock_guard lock(m);
    outcomes.push_back(std::move(outcome));
    cv.notify_all();
  };
  auto wait_for = [&](size_t n) {
    std::unique_lock lock(m);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return outcomes.size() == n; }));
  };
  gateway.submit(hello("relu", 1), keep); // answered
  wait_for(1);
  gateway.submit(hello("relu", 2), keep); // refused by the endpoint: failed
  wait_for(2);
  gateway.submit(hello("relu", 3), keep); // in flight when cancelled
  wait_for_requests(server, 3);
  gateway.cancel("interrupted");
  wait_for(3);

  agents::gateway_options spent = o;
  spent.token_budget = 1000;
  spent.earlier = gateway.stats(); // the 1100 tokens answered so far spend it
  agents::llm_gateway after(spent);
  after.submit(hello("", -1), keep); // refused by the budget, a request of no task
  wait_for(4);

  auto files = agents::read_transcripts(o.transcripts_dir);
  REQUIRE(files.has_value());
  REQUIRE(files->size() == 4);
  const std::vector<std::string> expected = {"ok", "failed", "cancelled", "refused"};
  for (size_t i = 0; i < outcomes.size(); ++i) {
    CAPTURE(i);
    const std::string& text = outcomes[i].transcript_json;
    CHECK(text.find(key) == std::string::npos);
    auto t = agents::parse_transcript(text);
    REQUIRE(t.has_value());
    CHECK(t->outcome == expected[i]);
    CHECK(test::read_file(agents::transcript_path(o.transcripts_dir, *t)) == text);
  }
  // The reply and the endpoint's error both held the key: redacted where it stood.
  CHECK_THAT(outcomes[0].transcript_json, Catch::Contains("a reply mentioning [redacted]"));
  CHECK_THAT(outcomes[1].transcript_json, Catch::Contains("[redacted]"));
  CHECK(outcomes[0].result.has_value());
  CHECK_FALSE(outcomes[3].result.has_value());
  CHECK(all_files_text(ctx.dir()).find(key) == std::string::npos);
}

TEST_CASE("a gateway on a folder that holds transcripts numbers after them, so that a resumed "
          "campaign replaces no file",
          "[agents][gateway]") {
  test::test_context ctx;
  test::fake_model_server server(api_kind::openai);
  auto o = options_for(server, api_kind::openai);
  o.transcripts_dir = ctx.dir() / "transcripts";
  CHECK(agents::next_transcript_id(o.transcripts_dir) == 1); // no folder yet
  int64_t first_run = 0;
  {
    agents::llm_gateway gateway(o);
    REQUIRE(gateway.complete(hello()).has_value());
    REQUIRE(gateway.complete(hello()).has_value());
    first_run = static_cast<int64_t>(agents::read_transcripts(o.transcripts_dir)->size());
  }
  REQUIRE(first_run == 2);
  CHECK(agents::next_transcript_id(o.transcripts_dir) == 3);
  agents::llm_gateway resumed(o);
  auto reply = resumed.complete(hello()); // the same role, task and node as before
  REQUIRE(reply.has_value());
  CHECK(fs::path(reply->transcript).filename().string().rfind("000003-coder-node1", 0) == 0);
  auto all = agents::read_transcripts(o.transcripts_dir);
  REQUIRE(all.has_value());
  REQUIRE(all->size() == 3);
  CHECK(all->back().id == 3);
}
