#include "engine/skill_partials.hpp"

#include "engine/mustache_limits.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace ks::engine {

namespace {

constexpr std::string_view open_tag = "{{>";
constexpr std::string_view close_tag = "}}";

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0)
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0)
    s.remove_suffix(1);
  return s;
}

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

/// Returns `text` with `indent` before each of its lines.
std::string indented(std::string_view text, std::string_view indent) {
  if (indent.empty())
    return std::string(text);
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    out.append(indent).append(text.substr(start, end - start));
    start = end;
  }
  return out;
}

/// Expands `text` at nesting `depth`; `chain` names the partials it sits in, for messages.
/// `expansions` counts the partials expanded so far in the whole template: with the size of
/// what each level gives, it bounds the work a skill from anywhere can ask for (a partial that
/// includes another many times, eight deep, would otherwise multiply without end).
expanded_template expand(std::string_view text, const std::map<std::string, std::string>& files,
                         int depth, const std::string& chain, int32_t& expansions) {
  expanded_template out;
  size_t pos = 0;
  while (true) {
    if (out.text.size() > max_template_bytes) {
      out.problem = std::make_pair(pos, chain + "the template with its partials expanded passes " +
                                            std::to_string(max_template_bytes) + " bytes");
      return out;
    }
    size_t at = text.find(open_tag, pos);
    size_t close = at == std::string_view::npos ? at : text.find(close_tag, at);
    if (close == std::string_view::npos) { // no tag left, or an unclosed one: the syntax check's
      out.text.append(text.substr(pos));
      return out;
    }
    std::string name(trimmed(text.substr(at + open_tag.size(), close - at - open_tag.size())));
    auto fail = [&](const std::string& why) {
      out.problem = std::make_pair(at, chain + why);
      return out;
    };
    if (!is_partial_name(name))
      return fail("partial name '" + name + "' must be letters, digits and underscores");
    auto file = files.find(partial_key(name));
    if (file == files.end())
      return fail("no partial '" + name + "': put it in " + std::string(partial_folder) + "/" +
                  name + ".cu.mustache beside the skill's folder");
    if (depth >= partial_depth)
      return fail("partials nest deeper than " + std::to_string(partial_depth) + " ('" + name +
                  "' includes itself?)");
    if (++expansions > max_partial_expansions)
      return fail("more than " + std::to_string(max_partial_expansions) +
                  " partials expanded in one template");
    expanded_template inner =
        expand(file->second, files, depth + 1, chain + "in partial '" + name + "': ", expansions);
    if (inner.problem)
      return fail(inner.problem->second.substr(chain.size()));
    size_t line_start = text.rfind('\n', at);
    line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
    size_t tag_end = close + close_tag.size();
    size_t line_end = text.find('\n', tag_end);
    if (line_end == std::string_view::npos)
      line_end = text.size();
    size_t after = line_end == text.size() ? line_end : line_end + 1;
    std::string_view indent = text.substr(line_start, at - line_start);
    if (blank(indent) && blank(text.substr(tag_end, line_end - tag_end))) {
      // Alone on its line: the line becomes the partial.
      out.text.append(text.substr(pos, line_start - pos));
      out.text.append(indented(inner.text, indent));
      pos = after;
    } else {
      out.text.append(text.substr(pos, at - pos));
      out.text.append(inner.text);
      pos = tag_end;
    }
  }
}

} // namespace

bool is_partial_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

std::string partial_key(std::string_view name) {
  return std::string(partial_folder) + "/" + std::string(name) + ".cu.mustache";
}

std::vector<std::string> partial_names(std::string_view text) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  size_t pos = 0;
  while (true) {
    size_t at = text.find(open_tag, pos);
    if (at == std::string_view::npos)
      return names;
    size_t close = text.find(close_tag, at);
    if (close == std::string_view::npos)
      return names;
    std::string name(trimmed(text.substr(at + open_tag.size(), close - at - open_tag.size())));
    if (seen.insert(name).second)
      names.push_back(name);
    pos = close + close_tag.size();
  }
}

expanded_template expand_partials(std::string_view text,
                                  const std::map<std::string, std::string>& files) {
  int32_t expansions = 0;
  return expand(text, files, 0, "", expansions);
}

} // namespace ks::engine
