// Bounds on Mustache rendering. kainjow's library is neither bounded in depth nor in size: its
// parser copies the text of every section into the section (so n nested sections over a text
// of s bytes cost n * s), its renderer walks the tree recursively, and a section over a list
// repeats its body once per item, so sections over lists nested d deep repeat it L^d times.
// Issue 27 saw 100,000 nested sections take 23 GB. We bound both halves from outside the
// library:
//
// - Before parsing, template_limit_error scans the tags as kainjow's parser does (the default
//   delimiters, "{{{" only with them, "{{=<% %>=}}" changing them) and refuses a text larger
//   than max_template_bytes or sections nested deeper than max_section_depth. The parse then
//   costs at most max_section_depth times the text, and the recursion is as shallow.
// - While rendering, every walk over a list of components (the template's root, a section's
//   body for one item, a partial's root) starts right after a hook of the context: a lookup
//   (get) for a section or a partial, a push for each list item. Between two hooks the walk
//   renders each text component of one list at most once, so at most the largest template
//   text seen (the unit), plus a variable's value. render_budget charges the unit at every
//   hook and the value's size at every lookup, so the rendered text, and the time spent, stay
//   below its limit; past it, the hook throws and the render stops.
// - Partials are parsed by kainjow when they are expanded: each one is checked like a
//   template first, and a render expands at most max_partial_expansions of them.

#include "engine/mustache_limits.hpp"

#include <algorithm>
#include <cctype>

namespace ks::engine {

namespace {

// kainjow's trim: spaces as isspace says, both ends.
std::string_view trimmed(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size() && std::isspace(static_cast<unsigned char>(s[begin])))
    ++begin;
  size_t end = s.size();
  while (end > begin && std::isspace(static_cast<unsigned char>(s[end - 1])))
    --end;
  return s.substr(begin, end - begin);
}

bool valid_delimiter(std::string_view d) {
  return std::none_of(d.begin(), d.end(), [](char c) {
    return c == '=' || std::isspace(static_cast<unsigned char>(c));
  });
}

// Reads a set-delimiter tag's contents ("=<% %>=") as kainjow does; false when invalid.
bool read_delimiters(std::string_view contents, std::string& begin, std::string& end) {
  if (contents.size() < 5 || contents.back() != '=')
    return false;
  std::string_view inner = trimmed(contents.substr(1, contents.size() - 2));
  size_t space = inner.find(' ');
  if (space == std::string_view::npos)
    return false;
  size_t next = inner.find_first_not_of(' ', space + 1);
  if (next == std::string_view::npos)
    return false;
  std::string_view b = inner.substr(0, space);
  std::string_view e = inner.substr(next);
  if (!valid_delimiter(b) || !valid_delimiter(e))
    return false;
  begin = std::string(b);
  end = std::string(e);
  return true;
}

} // namespace

std::optional<std::pair<size_t, std::string>> template_limit_error(std::string_view text) {
  if (text.size() > max_template_bytes)
    return std::make_pair(size_t{0}, "the template is larger than " +
                                         std::to_string(max_template_bytes) + " bytes");
  std::string begin = "{{";
  std::string end = "}}";
  int32_t depth = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find(begin, pos);
    if (open == std::string_view::npos)
      return std::nullopt;
    bool braces = begin == "{{" && end == "}}";
    size_t body = open + begin.size();
    bool triple = braces && open != text.size() - 2 && body < text.size() && text[body] == '{';
    if (triple)
      ++body;
    std::string_view close_with = triple ? std::string_view("}}}") : std::string_view(end);
    size_t close = text.find(close_with, body);
    if (close == std::string_view::npos)
      return std::nullopt; // an unclosed tag: Mustache's own error
    std::string_view contents = trimmed(text.substr(body, close - body));
    pos = close + close_with.size();
    if (!contents.empty() && contents.front() == '=') {
      if (!read_delimiters(contents, begin, end))
        return std::nullopt; // an invalid set-delimiter tag: Mustache's own error
      continue;
    }
    if (triple || contents.empty())
      continue;
    if (contents.front() == '#' || contents.front() == '^') {
      if (++depth > max_section_depth)
        return std::make_pair(open, "sections are nested deeper than " +
                                        std::to_string(max_section_depth) + " levels");
    } else if (contents.front() == '/') {
      depth = std::max(0, depth - 1);
    }
  }
  return std::nullopt;
}

render_budget::render_budget(size_t template_bytes, int64_t limit) noexcept
  : unit_(static_cast<int64_t>(std::max<size_t>(template_bytes, 1))), limit_(limit) {}

void render_budget::charge(size_t value_bytes) {
  spent_ += unit_ + static_cast<int64_t>(value_bytes);
  if (spent_ > limit_)
    throw render_limit_reached{"the rendering would exceed " + std::to_string(limit_) +
                               " bytes (sections over lists nested too deep?)"};
}

void render_budget::charge_partial(std::string_view name, std::string_view text) {
  if (++partials_ > max_partial_expansions)
    throw render_limit_reached{"more than " + std::to_string(max_partial_expansions) +
                               " partials expanded (does {{> " + std::string(name) +
                               "}} include itself?)"};
  if (auto problem = template_limit_error(text))
    throw render_limit_reached{"the partial " + std::string(name) + ": " + problem->second};
  unit_ = std::max(unit_, static_cast<int64_t>(text.size()));
  charge();
}

} // namespace ks::engine
