// The include check reads the source as the preprocessor's first phases do, closely enough
// that a directive cannot hide from it: backslash-newlines are joined (a directive may be split
// across lines), comments become a space (#/**/include is a directive), the digraph %: is a #.
// String and character literals are skipped whole, so a comment marker inside one is text. A
// raw string holding a line that looks like an include is refused too: a false alarm on a
// rare construct is better than a file leaving the machine. Only literal paths are accepted: an
// `#include MACRO` is refused, since the macro's expansion is not checked here.
//
// The diagnostics filter knows the two formats nvcc's output holds: cudafe's "FILE(LINE):
// error: ..." and the host compiler's "FILE:LINE:COL: error: ..."; each such head line starts a
// diagnostic, and the lines after it (the quoted source line, the caret, notes) belong to it
// until the next head. A diagnostic about another file keeps its head's position and severity
// only. Defence in depth: with the include check, nvcc only reads the system's headers.

#include "engine/candidate_checks.hpp"

#include <cctype>
#include <vector>

namespace ks::engine {

namespace {

/// One logical line of the source: its text without comments, and the line it starts on.
struct logical_line {
  std::string text;
  int64_t line = 1;
};

/// Splits `source` into logical lines, continuations joined and comments replaced by a space.
std::vector<logical_line> logical_lines(std::string_view source) {
  std::vector<logical_line> lines(1);
  int64_t physical = 1;
  enum class state { code, block_comment, line_comment, string, character } s = state::code;
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    // Phase 2: a backslash-newline joins two physical lines, everywhere.
    if (c == '\\' && i + 1 < source.size() && source[i + 1] == '\n') {
      ++i;
      ++physical;
      continue;
    }
    if (c == '\\' && i + 2 < source.size() && source[i + 1] == '\r' && source[i + 2] == '\n') {
      i += 2;
      ++physical;
      continue;
    }
    if (c == '\n') {
      ++physical;
      if (s == state::line_comment || s == state::string || s == state::character)
        s = state::code;
      if (s == state::block_comment)
        continue;
      lines.push_back(logical_line{{}, physical});
      continue;
    }
    logical_line& out = lines.back();
    switch (s) {
    case state::code:
      if (c == '/' && i + 1 < source.size() && source[i + 1] == '*') {
        s = state::block_comment;
        out.text += ' ';
        ++i;
      } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
        s = state::line_comment;
        ++i;
      } else {
        if (c == '"')
          s = state::string;
        else if (c == '\'')
          s = state::character;
        out.text += c;
      }
      break;
    case state::block_comment:
      if (c == '*' && i + 1 < source.size() && source[i + 1] == '/') {
        s = state::code;
        ++i;
      }
      break;
    case state::line_comment:
      break;
    case state::string:
    case state::character:
      out.text += c;
      if (c == '\\' && i + 1 < source.size() && source[i + 1] != '\n') {
        out.text += source[++i];
      } else if (c == (s == state::string ? '"' : '\'')) {
        s = state::code;
      }
      break;
    }
  }
  return lines;
}

std::string_view skip_blanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r' ||
                           text.front() == '\v' || text.front() == '\f'))
    text.remove_prefix(1);
  return text;
}

/// Says why `path` may not be included; nullopt when it may.
std::optional<std::string> why_refused(std::string_view path) {
  if (path.empty())
    return "an empty path";
  if (path.front() == '/')
    return "an absolute path";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    std::string_view part =
        path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (part == "..")
      return "a path that leaves the include folders ('..')";
    if (end == std::string_view::npos)
      break;
    start = end + 1;
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> refused_includes(std::string_view source, std::string_view file_name) {
  std::string refused;
  for (const logical_line& l : logical_lines(source)) {
    std::string_view text = skip_blanks(l.text);
    if (text.starts_with("%:"))
      text.remove_prefix(2);
    else if (text.starts_with("#"))
      text.remove_prefix(1);
    else
      continue;
    text = skip_blanks(text);
    size_t word = 0;
    while (word < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[word])) || text[word] == '_'))
      ++word;
    std::string_view directive = text.substr(0, word);
    if (directive != "include" && directive != "include_next" && directive != "import")
      continue;
    std::string_view operand = skip_blanks(text.substr(word));
    std::optional<std::string> why;
    if (operand.empty() || (operand.front() != '"' && operand.front() != '<')) {
      why = "the operand is no \"path\" or <path> (a macro's expansion is not checked)";
    } else {
      char close = operand.front() == '"' ? '"' : '>';
      size_t end = operand.find(close, 1);
      why = end == std::string_view::npos ? std::optional<std::string>("the path is not closed")
                                          : why_refused(operand.substr(1, end - 1));
    }
    if (!why)
      continue;
    std::string shown(operand.substr(0, 120));
    refused += std::string(file_name) + ":" + std::to_string(l.line) + ": error: #" +
               std::string(directive) + " " + shown + ": " + *why +
               "; a candidate may include the standard, CUDA and system headers and "
               "kernelskill/abi.h only (refused before nvcc runs)\n";
  }
  if (refused.empty())
    return std::nullopt;
  return refused;
}

namespace {

/// A diagnostic's head line: the file it is about and the rest from the severity on; nullopt
/// when `line` is no head.
struct head {
  std::string_view file;
  std::string_view position;
  std::string_view severity;
};

std::optional<head> head_of(std::string_view line) {
  static constexpr std::string_view severities[] = {
      "error", "warning", "note", "remark", "catastrophic error", "fatal error", "internal error"};
  // FILE(LINE): severity   (cudafe)      FILE:LINE[:COL]: severity   (the host compiler, ptxas)
  for (size_t at = 1; at < line.size(); ++at) {
    size_t after = std::string_view::npos;
    if (line[at] == '(') {
      size_t close = line.find(')', at);
      if (close == std::string_view::npos || close == at + 1)
        continue;
      bool digits = true;
      for (size_t i = at + 1; i < close; ++i)
        digits = digits && std::isdigit(static_cast<unsigned char>(line[i]));
      if (!digits || line.substr(close + 1, 2) != ": ")
        continue;
      after = close + 3;
    } else if (line[at] == ':' && at + 1 < line.size() &&
               std::isdigit(static_cast<unsigned char>(line[at + 1]))) {
      size_t i = at + 1;
      while (i < line.size() &&
             (std::isdigit(static_cast<unsigned char>(line[i])) || line[i] == ':'))
        ++i;
      if (line[i - 1] != ':' || i >= line.size() || line[i] != ' ')
        continue;
      after = i + 1;
    } else {
      continue;
    }
    std::string_view rest = line.substr(after);
    for (std::string_view s : severities)
      if (rest.starts_with(s))
        return head{line.substr(0, at), line.substr(at, after - at), s};
  }
  return std::nullopt;
}

bool is_candidate(std::string_view file, std::string_view file_name) {
  if (file == file_name)
    return true;
  // nvcc may name it with its folder ("./kernel.cu", "/abs/build/kernel.cu").
  return file.size() > file_name.size() && file.ends_with(file_name) &&
         file[file.size() - file_name.size() - 1] == '/';
}

} // namespace

std::string own_diagnostics(std::string_view diagnostics, std::string_view file_name) {
  std::string out;
  bool hiding = false;
  size_t start = 0;
  while (start < diagnostics.size()) {
    size_t end = diagnostics.find('\n', start);
    std::string_view line = diagnostics.substr(
        start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? diagnostics.size() : end + 1;
    if (auto h = head_of(line)) {
      hiding = !is_candidate(h->file, file_name);
      if (hiding) {
        out += std::string(h->file) + std::string(h->position) + std::string(h->severity) +
               ": [in a file that is not the candidate's: not shown]\n";
        continue;
      }
    } else if (hiding) {
      continue;
    }
    out += line;
    out += '\n';
  }
  return out;
}

} // namespace ks::engine
