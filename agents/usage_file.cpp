#include "agents/usage_file.hpp"

#include "base/text.hpp"

#include <boost/json.hpp>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace ks::agents {

namespace fs = std::filesystem;
namespace json = boost::json;
using engine::errc;
using engine::fail;

namespace {

json::object totals_json(const usage_totals& u) {
  return json::object{{"requests", u.requests},
                      {"input_tokens", u.input_tokens},
                      {"output_tokens", u.output_tokens},
                      {"cost", u.cost}};
}

int64_t integer_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr)
    return 0;
  if (v->is_int64())
    return v->as_int64();
  if (v->is_uint64())
    return static_cast<int64_t>(v->as_uint64());
  if (v->is_double())
    return static_cast<int64_t>(v->as_double());
  return 0;
}

double number_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr)
    return 0;
  if (v->is_double())
    return v->as_double();
  return static_cast<double>(integer_at(o, key));
}

usage_totals totals_of(const json::object& o) {
  return usage_totals{integer_at(o, "requests"), integer_at(o, "input_tokens"),
                      integer_at(o, "output_tokens"), number_at(o, "cost")};
}

} // namespace

std::string usage_json(const gateway_stats& s, std::string_view backend, std::string_view model) {
  json::object tasks;
  for (const auto& [task, u] : s.by_task)
    tasks[task] = totals_json(u);
  json::object o{{"v", 1},
                 {"type", "llm_usage"},
                 {"backend", backend},
                 {"model", model},
                 {"submitted", s.submitted},
                 {"succeeded", s.succeeded},
                 {"failed", s.failed},
                 {"cancelled", s.cancelled},
                 {"refused", s.refused},
                 {"attempts", s.attempts},
                 {"retries", s.retries},
                 {"requests", s.total.requests},
                 {"input_tokens", s.total.input_tokens},
                 {"output_tokens", s.total.output_tokens},
                 {"cost", s.total.cost},
                 {"budget_spent", s.budget_spent},
                 {"tasks", std::move(tasks)}};
  return json::serialize(o) + "\n";
}

engine::expected<usage_record> parse_usage(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object())
    return fail(errc::invalid_input, "llm_usage.json is not a JSON object");
  const json::object& o = v.as_object();
  const json::value* type = o.if_contains("type");
  if (type == nullptr || !type->is_string() || type->as_string() != "llm_usage" ||
      integer_at(o, "v") != 1)
    return fail(errc::invalid_input, "llm_usage.json is not a version 1 llm_usage record");
  gateway_stats s;
  s.submitted = integer_at(o, "submitted");
  s.succeeded = integer_at(o, "succeeded");
  s.failed = integer_at(o, "failed");
  s.cancelled = integer_at(o, "cancelled");
  s.refused = integer_at(o, "refused");
  s.attempts = integer_at(o, "attempts");
  s.retries = integer_at(o, "retries");
  s.total = totals_of(o);
  if (const json::value* b = o.if_contains("budget_spent"); b != nullptr && b->is_string())
    s.budget_spent = std::string(b->as_string());
  if (const json::value* t = o.if_contains("tasks"); t != nullptr && t->is_object())
    for (const auto& [task, u] : t->as_object())
      if (u.is_object())
        s.by_task[std::string(task)] = totals_of(u.as_object());
  usage_record out{std::move(s), {}, {}};
  if (const json::value* b = o.if_contains("backend"); b != nullptr && b->is_string())
    out.backend = std::string(b->as_string());
  if (const json::value* m = o.if_contains("model"); m != nullptr && m->is_string())
    out.model = std::string(m->as_string());
  return out;
}

engine::expected<void> write_usage(const fs::path& path, const gateway_stats& stats,
                                   std::string_view backend, std::string_view model) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path temporary = path;
  temporary += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << usage_json(stats, backend, model);
    if (!out)
      return fail(errc::io, "cannot write " + temporary.string());
  }
  fs::rename(temporary, path, ec);
  if (ec)
    return fail(errc::io, "cannot rename " + temporary.string() + ": " + ec.message());
  return {};
}

engine::expected<std::optional<usage_record>> read_usage(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return std::optional<usage_record>{};
  auto text = base::read_text(path);
  if (!text)
    return fail(errc::io, path.string() + ": cannot read it");
  auto parsed = parse_usage(*text);
  if (!parsed)
    return fail(errc::invalid_input, path.string() + ": " + parsed.error().message());
  return std::optional<usage_record>(std::move(*parsed));
}

} // namespace ks::agents
