#include "agents/reply_parser.hpp"

#include "agents/model_protocol.hpp"
#include "base/text.hpp"
#include "engine/skill.hpp"
#include "json/decode.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <sstream>

namespace ks::agents {

namespace json = boost::json;
using engine::errc;
using engine::fail;

namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_code_info(const std::string& info) {
  return info.empty() || info == "cuda" || info == "cpp" || info == "c++" || info == "cu" ||
         info == "c" || info == "cxx" || info == "cc";
}

bool defines_ks_forward(const std::string& text) {
  return text.find("ks_forward") != std::string::npos;
}

/// Returns `text` parsed as JSON within the reply's limits (max_reply_bytes, decode::max_depth),
/// or nullopt with `problem` saying why not.
std::optional<json::value> bounded_json(std::string_view text, std::string& problem) {
  try {
    return decode::parse(text, max_reply_bytes);
  } catch (const decode::malformed& m) {
    problem = m.what();
    return std::nullopt;
  }
}

/// Returns the JSON object of a reply: its first ```json block, else the whole reply, else
/// the text from the first '{' to the last '}'.
engine::expected<json::object> json_object_of(std::string_view reply, std::string_view what) {
  std::vector<std::string> candidates;
  for (const fenced_block& b : fenced_blocks(reply))
    if (b.info == "json")
      candidates.push_back(b.text);
  candidates.emplace_back(base::trim(reply));
  size_t open = reply.find('{');
  size_t close = reply.rfind('}');
  if (open != std::string_view::npos && close != std::string_view::npos && close > open)
    candidates.emplace_back(reply.substr(open, close - open + 1));
  std::string first_problem;
  for (const std::string& text : candidates) {
    std::string problem;
    std::optional<json::value> v = bounded_json(text, problem);
    if (v && v->is_object())
      return std::move(v->as_object());
    if (first_problem.empty())
      first_problem = v ? "not a JSON object" : problem;
  }
  return fail(errc::bad_reply,
              "the reply holds no JSON object " + std::string(what) + " (" + first_problem + ")");
}

std::optional<std::string> text_value(const json::value& v) {
  if (v.is_string())
    return std::string(v.as_string());
  if (v.is_bool())
    return std::string(v.as_bool() ? "1" : "0");
  if (v.is_int64())
    return std::to_string(v.as_int64());
  if (v.is_uint64())
    return std::to_string(v.as_uint64());
  if (v.is_double() && std::isfinite(v.as_double())) {
    char buffer[64];
    auto r = std::to_chars(buffer, buffer + sizeof buffer, v.as_double());
    return std::string(buffer, r.ptr);
  }
  return std::nullopt;
}

std::string idea_of(std::string_view description) {
  std::string out;
  bool blank = false;
  for (char c : base::trim(description)) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      blank = true;
      continue;
    }
    if (blank && !out.empty())
      out += ' ';
    blank = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out.substr(0, 160);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}

} // namespace

std::vector<fenced_block> fenced_blocks(std::string_view reply) {
  std::vector<fenced_block> blocks;
  std::istringstream in{std::string(reply)};
  std::string line;
  std::optional<fenced_block> open;
  std::string fence;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    std::string_view stripped = base::trim(line);
    if (!open) {
      if (stripped.substr(0, 3) == "```" || stripped.substr(0, 3) == "~~~") {
        size_t length = stripped.find_first_not_of(stripped[0]);
        length = length == std::string_view::npos ? stripped.size() : length;
        fence = std::string(stripped.substr(0, length));
        std::string_view info = base::trim(stripped.substr(length));
        info = info.substr(0, info.find_first_of(" \t{"));
        open = fenced_block{lowercase(info), {}};
      }
      continue;
    }
    if (stripped.size() >= fence.size() && stripped.substr(0, fence.size()) == fence &&
        stripped.find_first_not_of(fence[0]) == std::string_view::npos) {
      blocks.push_back(std::move(*open));
      open.reset();
      continue;
    }
    open->text += line;
    open->text += '\n';
  }
  if (open)
    blocks.push_back(std::move(*open));
  return blocks;
}

engine::expected<std::string> parse_code(std::string_view reply) {
  std::vector<fenced_block> blocks = fenced_blocks(reply);
  if (blocks.empty())
    return fail(errc::bad_reply,
                "the reply has no fenced code block: put the whole .cu file in one ```cuda block");
  const fenced_block* chosen = nullptr;
  for (const fenced_block& b : blocks)
    if (is_code_info(b.info) && defines_ks_forward(b.text))
      chosen = &b;
  if (chosen == nullptr)
    return fail(errc::bad_reply, "no code block of the reply defines ks_forward: the candidate "
                                 "must be one whole .cu file exporting extern \"C\" int "
                                 "ks_forward(...)");
  // abi.h declares ks_forward extern "C", so a file that includes it needs no more.
  if (chosen->text.find("extern \"C\"") == std::string::npos &&
      chosen->text.find("kernelskill/abi.h") == std::string::npos)
    return fail(errc::bad_reply,
                "the code block defines ks_forward neither extern \"C\" nor after including "
                "kernelskill/abi.h: the bench worker finds the C symbol only");
  return chosen->text;
}

engine::expected<std::vector<engine::plan>> parse_plans(std::string_view reply,
                                                        const plan_rules& rules) {
  json::array items;
  {
    // A bare array is accepted too: models drop the wrapper often, and it says the same.
    std::optional<json::array> bare;
    for (const fenced_block& b : fenced_blocks(reply))
      if (b.info == "json" || b.info.empty()) {
        std::string problem;
        std::optional<json::value> v = bounded_json(b.text, problem);
        if (v && v->is_array()) {
          bare = std::move(v->as_array());
          break;
        }
      }
    if (bare) {
      items = std::move(*bare);
    } else {
      auto object = json_object_of(reply, "with \"plans\"");
      if (!object)
        return tl::unexpected(object.error());
      const json::value* plans = object->if_contains("plans");
      if (plans == nullptr || !plans->is_array())
        return fail(errc::bad_reply, "the reply's JSON object has no \"plans\" array");
      items = plans->as_array();
    }
  }
  std::vector<std::string> offered = rules.skills;
  std::vector<std::string> problems;
  std::vector<engine::plan> out;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string at = "plan " + std::to_string(i + 1) + ": ";
    const json::object* o = items[i].if_object();
    if (o == nullptr) {
      problems.push_back(at + "not a JSON object");
      continue;
    }
    engine::plan p;
    const json::value* skill = o->if_contains("skill");
    const json::value* description = o->if_contains("description");
    if (skill == nullptr || !skill->is_string() || base::trim(skill->as_string()).empty()) {
      problems.push_back(at + "no \"skill\" (a skill id offered, or \"custom\")");
      continue;
    }
    p.skill = lowercase(base::trim(skill->as_string()));
    if (description == nullptr || !description->is_string() ||
        base::trim(description->as_string()).empty()) {
      problems.push_back(at + "no \"description\" (one line: what changes and why)");
      continue;
    }
    p.description = std::string(base::trim(description->as_string()));
    bool known = p.skill == custom_skill ||
                 std::find(offered.begin(), offered.end(), p.skill) != offered.end();
    if (!known) {
      problems.push_back(at + "unknown skill '" + p.skill + "' (choose one of: " + joined(offered) +
                         (offered.empty() ? "" : ", ") + "custom)");
      continue;
    }
    const engine::skill* s = rules.library != nullptr ? rules.library->find(p.skill) : nullptr;
    if (const json::value* t = o->if_contains("template"); t != nullptr && !t->is_null()) {
      if (!t->is_string()) {
        problems.push_back(at + "\"template\" must be a string");
        continue;
      }
      p.template_name = std::string(base::trim(t->as_string()));
      if (!p.template_name.empty() && s != nullptr &&
          s->find_template(p.template_name) == nullptr) {
        std::vector<std::string> names;
        for (const engine::skill_template& st : s->templates)
          names.push_back(st.name);
        problems.push_back(at + "skill '" + p.skill + "' has no template '" + p.template_name +
                           "'" +
                           (names.empty() ? " (it has none)" : " (it has: " + joined(names) + ")"));
        continue;
      }
    }
    if (s != nullptr)
      p.skill_version = s->version;
    bool params_ok = true;
    if (const json::value* params = o->if_contains("params");
        params != nullptr && !params->is_null()) {
      if (!params->is_object()) {
        problems.push_back(at + "\"params\" must be an object of names to values");
        continue;
      }
      for (const auto& [key, value] : params->as_object()) {
        std::optional<std::string> text = text_value(value);
        if (!text) {
          problems.push_back(at + "param '" + std::string(key) +
                             "' must be a number, a string or a boolean");
          params_ok = false;
          break;
        }
        p.params[std::string(key)] = *text;
      }
    }
    if (!params_ok)
      continue;
    if (p.skill == custom_skill && p.params.count("idea") == 0)
      p.params["idea"] = idea_of(p.description);
    bool repeated = std::any_of(out.begin(), out.end(),
                                [&](const engine::plan& q) { return engine::same_plan(p, q); });
    if (repeated) {
      problems.push_back(at + "the same plan as an earlier one of this reply (same skill, "
                              "template and params)");
      continue;
    }
    out.push_back(std::move(p));
  }
  if (!problems.empty()) {
    std::string message = "the plans are not valid:";
    for (const std::string& p : problems)
      message += "\n  " + p;
    return fail(errc::bad_reply, message);
  }
  if (static_cast<int64_t>(out.size()) > rules.count)
    out.resize(static_cast<size_t>(std::max<int64_t>(0, rules.count)));
  return out;
}

engine::expected<engine::repair_reply> parse_repair(std::string_view reply) {
  engine::repair_reply out;
  auto object = json_object_of(reply, "with \"diagnosis\" and \"fix_summary\"");
  if (object) {
    if (const json::value* d = object->if_contains("diagnosis"); d != nullptr && d->is_string())
      out.diagnosis = std::string(base::trim(d->as_string()));
    if (const json::value* f = object->if_contains("fix_summary"); f != nullptr && f->is_string())
      out.fix_summary = std::string(base::trim(f->as_string()));
    if (const json::value* g = object->if_contains("give_up"); g != nullptr && g->is_bool())
      out.gave_up = g->as_bool();
  }
  if (out.gave_up)
    return out;
  auto code = parse_code(reply);
  if (!code)
    return tl::unexpected(code.error());
  if (!object)
    return fail(errc::bad_reply,
                object.error().message() + ": say what was wrong and what you changed, as asked");
  if (out.diagnosis.empty() || out.fix_summary.empty())
    return fail(errc::bad_reply,
                "the reply's JSON object needs a non-empty \"diagnosis\" and \"fix_summary\"");
  out.source = std::move(*code);
  return out;
}

engine::expected<std::map<std::string, std::string>>
parse_skill_files(std::string_view reply, std::string_view template_file) {
  std::map<std::string, std::string> files;
  for (const fenced_block& b : fenced_blocks(reply)) {
    if (b.info == "toml" && files.count("skill.toml") == 0)
      files["skill.toml"] = b.text;
    else if ((b.info == "mustache" || is_code_info(b.info)) &&
             files.count(std::string(template_file)) == 0)
      files[std::string(template_file)] = b.text;
  }
  if (files.count("skill.toml") == 0)
    return fail(errc::bad_reply, "the reply has no ```toml block holding skill.toml");
  return files;
}

} // namespace ks::agents
