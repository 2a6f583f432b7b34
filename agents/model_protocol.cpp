#include "agents/model_protocol.hpp"

#include "base/text.hpp"
#include "json/decode.hpp"
#include "json/encode.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

namespace ks::agents {

namespace json = boost::json;
using engine::errc;
using engine::fail;

namespace {

std::string trimmed_endpoint(std::string_view endpoint, api_kind api) {
  std::string base = endpoint.empty() ? default_endpoint(api) : std::string(endpoint);
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  return base;
}

const json::value* member(const json::value& v, std::string_view key) {
  const json::object* o = v.if_object();
  if (o == nullptr)
    return nullptr;
  return o->if_contains(key);
}

std::string text_of(const json::value* v) {
  if (v != nullptr && v->is_string())
    return std::string(v->as_string());
  return {};
}

int64_t estimated_tokens(size_t bytes) {
  return static_cast<int64_t>((bytes + 3) / 4);
}

/// Reads the token count `key` of `usage` into `out`; leaves `out` (an estimate) when there is
/// none. A count that is not an integer from 0 to max_reply_tokens is a protocol error: a
/// negative one would count as nothing and a huge one would wrap a total, and either way the
/// budget would never trip (issue 27). Returns whether the answer gave it.
bool read_tokens(const json::value& usage, std::string_view key, int64_t& out) {
  const json::value* v = member(usage, key);
  if (v == nullptr || v->is_null())
    return false;
  bool in_range = false;
  int64_t n = 0;
  if (v->is_int64()) {
    n = v->as_int64();
    in_range = n >= 0 && n <= max_reply_tokens;
  } else if (v->is_uint64()) {
    in_range = v->as_uint64() <= static_cast<uint64_t>(max_reply_tokens);
    n = in_range ? static_cast<int64_t>(v->as_uint64()) : 0;
  } else if (v->is_double()) {
    double d = v->as_double();
    in_range = std::isfinite(d) && d >= 0 && d <= static_cast<double>(max_reply_tokens) &&
               d == std::floor(d);
    n = in_range ? static_cast<int64_t>(d) : 0;
  }
  if (!in_range)
    throw decode::malformed("usage." + std::string(key) + " = " + encode::serialize(*v) +
                            " is not a token count (an integer from 0 to " +
                            std::to_string(max_reply_tokens) + ")");
  out = n;
  return true;
}

std::string collapsed(std::string_view text, size_t limit) {
  std::string out;
  bool blank = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      blank = !out.empty();
      continue;
    }
    if (blank)
      out += ' ';
    blank = false;
    out += c;
    if (out.size() >= limit) {
      out += "...";
      break;
    }
  }
  return out;
}

} // namespace

const char* to_string(api_kind api) noexcept {
  return api == api_kind::openai ? "openai" : "anthropic";
}

std::optional<api_kind> parse_api_kind(std::string_view name) noexcept {
  if (name == "openai")
    return api_kind::openai;
  if (name == "anthropic")
    return api_kind::anthropic;
  return std::nullopt;
}

std::string default_endpoint(api_kind api) {
  return api == api_kind::openai ? "https://api.openai.com/v1" : "https://api.anthropic.com/v1";
}

http_request make_http_request(api_kind api, std::string_view endpoint, std::string_view model,
                               std::string_view api_key, const model_request& request) {
  http_request out;
  std::string base = trimmed_endpoint(endpoint, api);
  json::object body;
  body["model"] = model;
  body["max_tokens"] = request.max_tokens;
  body["temperature"] = request.temperature;
  json::array messages;
  if (api == api_kind::openai) {
    out.url = base + "/chat/completions";
    for (const chat_message& m : request.messages)
      messages.push_back(json::object{{"role", m.role}, {"content", m.content}});
    if (!api_key.empty())
      out.headers.emplace_back("Authorization", "Bearer " + std::string(api_key));
  } else {
    out.url = base + "/messages";
    // Anthropic takes the system prompt apart, and the turns must alternate starting with
    // the user: consecutive turns of one role are joined.
    std::string system;
    for (const chat_message& m : request.messages) {
      if (m.role == "system") {
        system += (system.empty() ? "" : "\n\n") + m.content;
        continue;
      }
      std::string role = m.role == "assistant" ? "assistant" : "user";
      if (!messages.empty() && messages.back().as_object().at("role").as_string() == role) {
        json::string& content = messages.back().as_object()["content"].as_string();
        content.append("\n\n");
        content.append(m.content);
        continue;
      }
      messages.push_back(json::object{{"role", role}, {"content", m.content}});
    }
    if (!system.empty())
      body["system"] = system;
    if (!api_key.empty())
      out.headers.emplace_back("x-api-key", std::string(api_key));
    out.headers.emplace_back("anthropic-version", "2023-06-01");
  }
  body["messages"] = std::move(messages);
  out.headers.emplace_back("Content-Type", "application/json");
  out.body = encode::serialize(body);
  return out;
}

engine::expected<model_reply> parse_model_reply(api_kind api, std::string_view body,
                                                size_t request_bytes) {
  json::value v;
  try {
    v = decode::parse(body, max_reply_bytes);
  } catch (const decode::malformed& m) {
    return fail(errc::protocol,
                "the endpoint's answer is " + std::string(m.what()) + ": " + collapsed(body, 120));
  }
  if (!v.is_object())
    return fail(errc::protocol, "the endpoint's answer is not a JSON object");
  model_reply reply;
  reply.model = text_of(member(v, "model"));
  const json::value* usage = member(v, "usage");
  if (api == api_kind::openai) {
    const json::value* choices = member(v, "choices");
    if (choices == nullptr || !choices->is_array() || choices->as_array().empty())
      return fail(errc::protocol, "the endpoint's answer has no \"choices\"");
    const json::value& first = choices->as_array().front();
    const json::value* message = member(first, "message");
    if (message == nullptr)
      return fail(errc::protocol, "the endpoint's first choice has no \"message\"");
    reply.text = text_of(member(*message, "content"));
    reply.finish_reason = text_of(member(first, "finish_reason"));
  } else {
    const json::value* content = member(v, "content");
    if (content == nullptr || !content->is_array())
      return fail(errc::protocol, "the endpoint's answer has no \"content\" array");
    for (const json::value& block : content->as_array())
      if (text_of(member(block, "type")) == "text")
        reply.text += text_of(member(block, "text"));
    reply.finish_reason = text_of(member(v, "stop_reason"));
  }
  // What the answer says it used; an estimate where it says nothing.
  reply.input_tokens = estimated_tokens(request_bytes);
  reply.output_tokens = estimated_tokens(reply.text.size());
  bool openai = api == api_kind::openai;
  try {
    bool given = usage != nullptr &&
                 read_tokens(*usage, openai ? "prompt_tokens" : "input_tokens", reply.input_tokens);
    given =
        usage != nullptr &&
        read_tokens(*usage, openai ? "completion_tokens" : "output_tokens", reply.output_tokens) &&
        given;
    reply.usage_estimated = !given;
  } catch (const decode::malformed& m) {
    return fail(errc::protocol, std::string("the endpoint's answer has ") + m.what());
  }
  return reply;
}

bool retryable_status(long status) noexcept {
  return status == 408 || status == 409 || status == 425 || status == 429 ||
         (status >= 500 && status <= 599);
}

std::optional<double> parse_retry_after(std::string_view value, std::time_t now) {
  value = base::trim(value);
  if (value.empty())
    return std::nullopt;
  double seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec == std::errc{} && end == value.data() + value.size())
    return std::isfinite(seconds) && seconds >= 0 ? std::optional<double>(seconds) : std::nullopt;
  // An HTTP date: "Wed, 21 Oct 2015 07:28:00 GMT".
  std::tm parts{};
  std::string text(value);
  const char* rest = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &parts);
  if (rest == nullptr || *rest != '\0')
    return std::nullopt;
  std::time_t at = ::timegm(&parts);
  return std::max(0.0, std::difftime(at, now));
}

std::string error_summary(std::string_view body) {
  json::value v;
  bool parsed = true;
  try {
    v = decode::parse(body, max_reply_bytes);
  } catch (const decode::malformed&) {
    parsed = false;
  }
  if (parsed) {
    const json::value* error = member(v, "error");
    std::string message = error != nullptr ? text_of(member(*error, "message")) : "";
    if (message.empty() && error != nullptr)
      message = text_of(error);
    if (message.empty())
      message = text_of(member(v, "message"));
    if (!message.empty())
      return collapsed(message, 200);
  }
  return collapsed(body, 200);
}

} // namespace ks::agents
