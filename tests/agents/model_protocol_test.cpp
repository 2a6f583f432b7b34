#include "agents/model_protocol.hpp"
#include "agents/transcript.hpp"

#include <catch2/catch.hpp>

using namespace ks;
using agents::api_kind;

TEST_CASE("an OpenAI request joins the endpoint and /chat/completions, whatever its trailing "
          "slash, and carries every message in order",
          "[agents][protocol]") {
  agents::model_request r;
  r.messages = {{"system", "be brief"}, {"user", "hi"}, {"assistant", "yes?"}, {"user", "go"}};
  r.max_tokens = 64;
  auto http = agents::make_http_request(api_kind::openai, "http://host:8000/v1/", "m", "", r);
  CHECK(http.url == "http://host:8000/v1/chat/completions");
  CHECK(http.body.find("\"max_tokens\":64") != std::string::npos);
  CHECK(http.body.find("{\"role\":\"assistant\",\"content\":\"yes?\"}") != std::string::npos);
  for (const auto& [name, value] : http.headers)
    CHECK(name != "Authorization"); // no key, no header
  auto public_one = agents::make_http_request(api_kind::openai, "", "m", "k", r);
  CHECK(public_one.url == "https://api.openai.com/v1/chat/completions");
}

TEST_CASE("an Anthropic request takes the system prompt apart and joins consecutive turns of "
          "one role",
          "[agents][protocol]") {
  agents::model_request r;
  r.messages = {{"system", "be brief"}, {"user", "a"}, {"user", "b"}};
  auto http = agents::make_http_request(api_kind::anthropic, "", "claude", "key", r);
  CHECK(http.url == "https://api.anthropic.com/v1/messages");
  CHECK(http.body.find("\"system\":\"be brief\"") != std::string::npos);
  CHECK(http.body.find("\"messages\":[{\"role\":\"user\",\"content\":\"a\\n\\nb\"}]") !=
        std::string::npos);
}

TEST_CASE("a reply is read for its text, model, finish reason and usage in both APIs",
          "[agents][protocol]") {
  auto openai = agents::parse_model_reply(
      api_kind::openai,
      R"({"model":"m1","choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}})");
  REQUIRE(openai.has_value());
  CHECK(openai->text == "hi");
  CHECK(openai->model == "m1");
  CHECK(openai->finish_reason == "length");
  CHECK(openai->input_tokens == 3);
  CHECK(openai->output_tokens == 4);
  auto anthropic = agents::parse_model_reply(
      api_kind::anthropic,
      R"({"model":"c","content":[{"type":"text","text":"a"},{"type":"tool_use"},{"type":"text","text":"b"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":6}})");
  REQUIRE(anthropic.has_value());
  CHECK(anthropic->text == "ab");
  CHECK(anthropic->output_tokens == 6);
}

TEST_CASE("an answer that is not the API's JSON is a protocol error saying what is missing",
          "[agents][protocol]") {
  auto garbled = agents::parse_model_reply(api_kind::openai, "{\"choices\": [");
  REQUIRE_FALSE(garbled.has_value());
  CHECK(garbled.error().code() == engine::errc::protocol);
  auto wrong_api = agents::parse_model_reply(api_kind::openai, R"({"content": []})");
  REQUIRE_FALSE(wrong_api.has_value());
  CHECK_THAT(wrong_api.error().message(), Catch::Contains("no \"choices\""));
}

TEST_CASE("an answer larger than max_reply_bytes or nested too deep is a protocol error",
          "[agents][protocol]") {
  // Valid JSON of the API's shape, 9 MiB of text: refused by its size, not parsed.
  std::string flood = R"({"choices":[{"message":{"content":")" +
                      std::string(agents::max_reply_bytes + 1024, 'a') + R"("}}]})";
  auto large = agents::parse_model_reply(api_kind::openai, flood);
  REQUIRE_FALSE(large.has_value());
  CHECK(large.error().code() == engine::errc::protocol);
  CHECK_THAT(large.error().message(), Catch::Contains("allowed"));
  CHECK(agents::error_summary(flood).size() < 300);
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto nested = agents::parse_model_reply(api_kind::anthropic, deep);
  REQUIRE_FALSE(nested.has_value());
  CHECK(nested.error().code() == engine::errc::protocol);
  CHECK_THAT(nested.error().message(), Catch::Contains("not JSON"));
}

TEST_CASE("retryable statuses are 408, 409, 425, 429 and 5xx", "[agents][protocol]") {
  for (long s : {408L, 409L, 425L, 429L, 500L, 502L, 503L, 529L})
    CHECK(agents::retryable_status(s));
  for (long s : {200L, 400L, 401L, 403L, 404L, 422L})
    CHECK_FALSE(agents::retryable_status(s));
}

TEST_CASE("Retry-After is read as seconds or as an HTTP date", "[agents][protocol]") {
  CHECK(agents::parse_retry_after(" 2 ", 0) == 2.0);
  CHECK(agents::parse_retry_after("0.5", 0) == 0.5);
  std::time_t now = 1445412470; // Wed, 21 Oct 2015 07:27:50 GMT
  CHECK(agents::parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now) == 10.0);
  CHECK_FALSE(agents::parse_retry_after("soon", 0).has_value());
  CHECK_FALSE(agents::parse_retry_after("-3", 0).has_value());
}

TEST_CASE("an error body is summed up by its message", "[agents][protocol]") {
  CHECK(agents::error_summary(R"({"error": {"message": "quota exceeded", "type": "x"}})") ==
        "quota exceeded");
  CHECK(agents::error_summary("<html>\n  Bad   gateway\n</html>") == "<html> Bad gateway </html>");
}

TEST_CASE("redact replaces every occurrence of the secret and nothing else", "[agents][protocol]") {
  CHECK(agents::redact("key=abc and abc again", "abc") == "key=[redacted] and [redacted] again");
  CHECK(agents::redact("nothing here", "") == "nothing here");
}
