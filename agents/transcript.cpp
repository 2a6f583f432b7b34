#include "agents/transcript.hpp"

#include "base/text.hpp"
#include "json/encode.hpp"

#include <boost/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace ks::agents {

namespace fs = std::filesystem;
namespace json = boost::json;
using engine::errc;
using engine::fail;

namespace {

std::string file_part(std::string_view text) {
  std::string out;
  for (char c : text)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  if (out.empty() || out.front() == '.')
    out.insert(out.begin(), '_');
  return out.substr(0, 100);
}

std::string string_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

double number_at(const json::object& o, std::string_view key, double otherwise = 0) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr)
    return otherwise;
  if (v->is_double())
    return v->as_double();
  if (v->is_int64())
    return static_cast<double>(v->as_int64());
  if (v->is_uint64())
    return static_cast<double>(v->as_uint64());
  return otherwise;
}

int64_t integer_at(const json::object& o, std::string_view key, int64_t otherwise = 0) {
  return static_cast<int64_t>(number_at(o, key, static_cast<double>(otherwise)));
}

/// Returns `text` cut to at most `limit` bytes at a UTF-8 character's start, with a note of
/// what was cut.
std::string cut(std::string_view text, size_t limit) {
  if (text.size() <= limit)
    return std::string(text);
  size_t keep = limit;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80)
    --keep;
  return std::string(text.substr(0, keep)) + "\n[... " + std::to_string(text.size() - keep) +
         " bytes cut: the transcript is at most " + std::to_string(max_transcript_bytes) +
         " bytes]";
}

} // namespace

std::string redact(std::string_view text, std::string_view secret) {
  if (secret.empty())
    return std::string(text);
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(secret); at != std::string_view::npos; at = text.find(secret, from)) {
    out.append(text.substr(from, at - from));
    out.append("[redacted]");
    from = at + secret.size();
  }
  out.append(text.substr(from));
  return out;
}

std::string transcript_json(const transcript& t, std::string_view secret) {
  // The long texts (the messages, the reply, the error) share max_transcript_bytes: when they
  // are longer together, each one longer than its share is cut to it.
  size_t long_texts = t.reply.size() + t.error.size();
  for (const chat_message& m : t.messages)
    long_texts += m.content.size();
  const bool truncated = long_texts > max_transcript_bytes;
  const size_t share = max_transcript_bytes / (t.messages.size() + 2);
  auto r = [secret](std::string_view s) { return json::string(redact(s, secret)); };
  auto r_long = [&](std::string_view s) {
    return truncated ? json::string(redact(cut(s, share), secret)) : r(s);
  };
  json::array attempts;
  for (const attempt_record& a : t.attempts)
    attempts.push_back(json::object{{"status", a.status},
                                    {"error", r(a.error)},
                                    {"ms", a.ms},
                                    {"retry_after_s", a.retry_after_s}});
  json::array messages;
  for (const chat_message& m : t.messages)
    messages.push_back(json::object{{"role", r(m.role)}, {"content", r_long(m.content)}});
  json::object o{{"v", 1},
                 {"type", "llm_transcript"},
                 {"id", t.id},
                 {"role", r(t.role)},
                 {"task", r(t.task)},
                 {"node", t.node},
                 {"api", r(t.api)},
                 {"model", r(t.model)},
                 {"endpoint", r(t.endpoint)},
                 {"started_at", r(t.started_at)},
                 {"latency_ms", t.latency_ms},
                 {"attempts", std::move(attempts)},
                 {"outcome", r(t.outcome)},
                 {"error", r_long(t.error)},
                 {"messages", std::move(messages)},
                 {"reply", r_long(t.reply)},
                 {"finish_reason", r(t.finish_reason)},
                 {"input_tokens", t.input_tokens},
                 {"output_tokens", t.output_tokens},
                 {"cost", t.cost}};
  if (truncated)
    o["truncated"] = true;
  // Every string was redacted; the whole text once more, in case JSON escaping of a field
  // and the key's own characters ever line up differently.
  return redact(encode::serialize(o), secret) + "\n";
}

engine::expected<transcript> parse_transcript(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object())
    return fail(errc::invalid_input, "not a JSON object" + (ec ? " (" + ec.message() + ")" : ""));
  const json::object& o = v.as_object();
  if (string_at(o, "type") != "llm_transcript")
    return fail(errc::invalid_input, "not a transcript (its \"type\" is not \"llm_transcript\")");
  if (integer_at(o, "v") != 1)
    return fail(errc::invalid_input, "a transcript of format version " +
                                         std::to_string(integer_at(o, "v")) +
                                         ", this kernelskill reads version 1");
  transcript t;
  t.id = integer_at(o, "id");
  t.role = string_at(o, "role");
  t.task = string_at(o, "task");
  t.node = integer_at(o, "node", -1);
  t.api = string_at(o, "api");
  t.model = string_at(o, "model");
  t.endpoint = string_at(o, "endpoint");
  t.started_at = string_at(o, "started_at");
  t.latency_ms = number_at(o, "latency_ms");
  t.outcome = string_at(o, "outcome");
  t.error = string_at(o, "error");
  t.reply = string_at(o, "reply");
  t.finish_reason = string_at(o, "finish_reason");
  t.input_tokens = integer_at(o, "input_tokens");
  t.output_tokens = integer_at(o, "output_tokens");
  t.cost = number_at(o, "cost");
  if (const json::value* a = o.if_contains("attempts"); a != nullptr && a->is_array())
    for (const json::value& item : a->as_array())
      if (item.is_object())
        t.attempts.push_back(
            attempt_record{static_cast<long>(integer_at(item.as_object(), "status")),
                           string_at(item.as_object(), "error"), number_at(item.as_object(), "ms"),
                           number_at(item.as_object(), "retry_after_s", -1)});
  if (const json::value* m = o.if_contains("messages"); m != nullptr && m->is_array())
    for (const json::value& item : m->as_array())
      if (item.is_object())
        t.messages.push_back(chat_message{string_at(item.as_object(), "role"),
                                          string_at(item.as_object(), "content")});
  return t;
}

fs::path transcript_path(const fs::path& dir, const transcript& t) {
  char id[32];
  std::snprintf(id, sizeof id, "%06lld", static_cast<long long>(t.id));
  std::string name = std::string(id) + "-" + file_part(t.role.empty() ? "request" : t.role);
  if (t.node >= 0)
    name += "-node" + std::to_string(t.node);
  return dir / file_part(t.task.empty() ? "_campaign" : t.task) / (name + ".json");
}

engine::expected<fs::path> write_transcript(const fs::path& dir, const transcript& t,
                                            std::string_view secret) {
  return write_transcript_text(dir, t, transcript_json(t, secret));
}

engine::expected<fs::path> write_transcript_text(const fs::path& dir, const transcript& t,
                                                 std::string_view json_text) {
  fs::path path = transcript_path(dir, t);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec)
    return fail(errc::io, "cannot create " + path.parent_path().string() + ": " + ec.message());
  fs::path temporary = path;
  temporary += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << json_text;
    if (!out)
      return fail(errc::io, "cannot write " + temporary.string());
  }
  fs::rename(temporary, path, ec);
  if (ec)
    return fail(errc::io, "cannot rename " + temporary.string() + ": " + ec.message());
  return path;
}

int64_t next_transcript_id(const fs::path& dir) {
  int64_t highest = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // Names are "<id, 6 digits or more>-<role>...json" (transcript_path).
    const std::string name = it->path().filename().string();
    if (it->path().extension() != ".json")
      continue;
    int64_t id = 0;
    auto [end, failed] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (failed == std::errc() && end != name.data() && end != name.data() + name.size() &&
        *end == '-')
      highest = std::max(highest, id);
  }
  return highest + 1;
}

engine::expected<std::vector<transcript>> read_transcripts(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fail(errc::not_found, "no transcript folder " + dir.string());
  std::vector<transcript> out;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json")
      continue;
    auto t = parse_transcript(base::read_text(entry.path()).value_or(""));
    if (!t)
      return fail(errc::invalid_input, entry.path().string() + ": " + t.error().message());
    out.push_back(std::move(*t));
  }
  if (ec)
    return fail(errc::io, "cannot read " + dir.string() + ": " + ec.message());
  std::sort(out.begin(), out.end(),
            [](const transcript& a, const transcript& b) { return a.id < b.id; });
  return out;
}

} // namespace ks::agents
