#include "config/toml_source.hpp"

#include "base/text.hpp"
#include "config/option_table.hpp"

#include <cstdint>
#include <utility>

namespace ks::config {

namespace {

/// Checks whether `c` may be part of a bare key (TOML 1.0: ASCII letters, digits, _ and -).
bool is_bare_key_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool is_ascii(char c) {
  return static_cast<unsigned char>(c) < 0x80;
}

/// A code point decoded from UTF-8, and how many bytes it took; {0, 0} for none (ASCII is not
/// asked for, and a longer or broken sequence is none toml++ misreads: its reader refuses it).
struct code_point {
  uint32_t code = 0;
  size_t length = 0;
};

/// Returns the code point of two or three bytes at the start of `at`.
code_point decode_two_or_three(std::string_view at) {
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(at[i])); };
  auto continuation = [&](size_t i) { return i < at.size() && (byte(i) & 0xc0) == 0x80; };
  if (!at.empty() && (byte(0) & 0xe0) == 0xc0 && continuation(1))
    return {((byte(0) & 0x1f) << 6) | (byte(1) & 0x3f), 2};
  if (!at.empty() && (byte(0) & 0xf0) == 0xe0 && continuation(1) && continuation(2))
    return {((byte(0) & 0x0f) << 12) | ((byte(1) & 0x3f) << 6) | (byte(2) & 0x3f), 3};
  return {};
}

/// Checks whether the UTF-8 text at `at` starts with a code point toml++ 3.3 cannot classify
/// as white space or not: is_non_ascii_horizontal_whitespace() splits U+00A0-U+FEFF into
/// blocks of 0x3FA code points and reaches TOML_UNREACHABLE for every code point of the
/// blocks 0, 11 and 63 but U+00A0, U+3000 and U+FEFF (toml_source.hpp).
bool starts_unclassified(std::string_view at) {
  struct range {
    uint32_t first, last;
  };
  static constexpr range unclassified[] = {
      {0xa1, 0x499}, {0x2c5e, 0x2fff}, {0x3001, 0x3057}, {0xfb26, 0xfefe}};
  uint32_t code = decode_two_or_three(at).code;
  for (const range& r : unclassified)
    if (code >= r.first && code <= r.last)
      return true;
  return false;
}

/// Returns the length of the code point at the start of `at` when toml++ 3.3 counts it as
/// horizontal white space beyond ASCII (U+00A0, U+1680, U+180E, U+2000-U+200B, U+202F,
/// U+205F-U+2060, U+3000, U+FEFF), else 0.
size_t toml_space_length(std::string_view at) {
  code_point c = decode_two_or_three(at);
  bool space = c.code == 0xa0 || c.code == 0x1680 || c.code == 0x180e ||
               (c.code >= 0x2000 && c.code <= 0x200b) || c.code == 0x202f ||
               (c.code >= 0x205f && c.code <= 0x2060) || c.code == 0x3000 || c.code == 0xfeff;
  return space ? c.length : 0;
}

/// Walks a TOML text as its lexer does, as far as toml_limit_error needs: comments, strings,
/// runs of key parts joined by dots, and what is not ASCII outside strings and comments.
class key_scanner {
public:
  explicit key_scanner(std::string_view text) : text_(text) {}

  /// Returns the first problem: where it is and what it is.
  std::optional<std::pair<position, std::string>> first_problem() {
    if (text_.starts_with("\xef\xbb\xbf")) // a byte order mark, which toml++ skips
      i_ = line_start_ = 3;
    while (i_ < text_.size()) {
      char c = text_[i_];
      follow_value_run(c);
      if (c == '\n') {
        newline();
        end_run();
      } else if (c == ' ' || c == '\t') {
        ++i_;
      } else if (c == '#') {
        while (i_ < text_.size() && text_[i_] != '\n')
          ++i_;
      } else if (c == '.') {
        after_dot_ = parts_ > 0;
        ++i_;
      } else if (c == '"' || c == '\'') {
        if (part())
          return too_deep();
        if (!skip_string(c))
          return problem_;
      } else if (is_bare_key_byte(c)) {
        if (part())
          return too_deep();
        while (i_ < text_.size() && is_bare_key_byte(text_[i_]))
          ++i_;
      } else if (!is_ascii(c)) {
        return std::pair{here(), std::string("a character outside ASCII outside a string or a "
                                             "comment, where TOML allows none (quote a key that "
                                             "needs one: \"clé\" = 1)")};
      } else {
        end_run();
        ++i_;
      }
    }
    return std::nullopt;
  }

private:
  position here() const {
    return {static_cast<uint32_t>(line_), static_cast<uint32_t>(i_ - line_start_ + 1)};
  }

  void newline() {
    ++line_;
    line_start_ = ++i_;
  }

  // toml++ reads a value that starts with a digit or a sign ahead to the first character that
  // ends a value (white space, ']', '}', ',', '#'), asking that of each character, strings
  // included: this follows those runs, each starting after such a character or after what may
  // precede a value ('=', '[', '{') where no such run goes on through it.
  void follow_value_run(char c) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ']' || c == '}' || c == ',' ||
        c == '#') {
      value_run_ = value_run::fresh;
    } else if (c == '=' || c == '[' || c == '{') {
      if (value_run_ != value_run::numeric)
        value_run_ = value_run::fresh;
    } else if (value_run_ == value_run::fresh) {
      value_run_ =
          (c >= '0' && c <= '9') || c == '+' || c == '-' ? value_run::numeric : value_run::other;
    }
  }

  void end_run() {
    parts_ = 0;
    after_dot_ = false;
  }

  // Counts a key part starting here; true when its run has grown past the bound.
  bool part() {
    if (after_dot_) {
      ++parts_;
    } else {
      parts_ = 1;
      run_start_ = here();
    }
    after_dot_ = false;
    return parts_ > max_key_parts;
  }

  std::pair<position, std::string> too_deep() const {
    return {run_start_, "a dotted key or table header of more than " +
                            std::to_string(max_key_parts) +
                            " parts (tables nested this deep are refused before parsing)"};
  }

  // Skips the string that starts here with `quote`: basic ("...", escapes) or literal ('...'),
  // on one line, or multi-line ("""...""" or '''...''', whose closing run of quotes may be
  // longer than three). A one-line string left open ends with its line, where toml++ stops
  // with an error. Returns false, with problem_ set, where toml++ would misread the string.
  bool skip_string(char quote) {
    const bool basic = quote == '"';
    const std::string_view triple = basic ? std::string_view("\"\"\"") : std::string_view("'''");
    // No valid TOML has a string inside such a run, but toml++ reads it before it says so.
    const bool read_ahead = value_run_ == value_run::numeric;
    auto read_ahead_problem = [&] {
      problem_ = {here(), "a character toml++ 3.3 misreads (U+00A1-U+0499, U+2C5E-U+2FFF, "
                          "U+3001-U+3057, U+FB26-U+FEFE) in a string inside a value that starts "
                          "with a digit or a sign, which it reads ahead (end the value before "
                          "the string)"};
      return false;
    };
    if (text_.substr(i_, 3) != triple) {
      ++i_;
      while (i_ < text_.size() && text_[i_] != '\n') {
        if (read_ahead && starts_unclassified(text_.substr(i_)))
          return read_ahead_problem();
        if (text_[i_] == quote) {
          ++i_;
          return true;
        }
        if (basic && text_[i_] == '\\' && i_ + 1 < text_.size() && text_[i_ + 1] != '\n') {
          ++i_; // the escaped character, skipped below
          if (read_ahead && starts_unclassified(text_.substr(i_)))
            return read_ahead_problem();
        }
        ++i_;
      }
      return true;
    }
    i_ += 3;
    while (i_ < text_.size()) {
      if (read_ahead && starts_unclassified(text_.substr(i_)))
        return read_ahead_problem();
      if (text_.substr(i_, 3) == triple) {
        while (i_ < text_.size() && text_[i_] == quote)
          ++i_;
        return true;
      }
      if (basic && text_[i_] == '\\') {
        // toml++ asks whether the character after a backslash is white space, and after a
        // line-ending backslash, whether each one is until the first it keeps: its white space
        // includes some beyond ASCII (toml_space_length), which it skips there.
        ++i_;
        bool line_ending = false;
        while (i_ < text_.size()) {
          if (text_[i_] == ' ' || text_[i_] == '\t' || text_[i_] == '\r') {
            ++i_;
          } else if (text_[i_] == '\n') {
            newline();
          } else if (size_t n = line_ending ? toml_space_length(text_.substr(i_)) : 0; n > 0) {
            i_ += n;
          } else {
            break;
          }
          line_ending = true;
        }
        if (starts_unclassified(text_.substr(i_))) {
          problem_ = {here(), "a character toml++ 3.3 misreads (U+00A1-U+0499, U+2C5E-U+2FFF, "
                              "U+3001-U+3057, U+FB26-U+FEFE) right after a backslash, or first "
                              "after the white space a line-ending backslash skips, in a "
                              "multi-line string (put an ASCII character before it)"};
          return false;
        }
        if (!line_ending && i_ < text_.size())
          ++i_; // the escaped character
        continue;
      }
      if (text_[i_] == '\n')
        newline();
      else
        ++i_;
    }
    return true;
  }

  std::string_view text_;
  size_t i_ = 0; // the byte looked at
  size_t line_ = 1;
  size_t line_start_ = 0;
  enum class value_run { fresh, numeric, other };
  value_run value_run_ = value_run::fresh; // see follow_value_run
  int32_t parts_ = 0;                      // in the run of key parts being read
  bool after_dot_ = false; // a dot since the last part: the next part continues the run
  position run_start_;
  std::pair<position, std::string> problem_; // skip_string's, when it returns false
};

} // namespace

std::optional<std::pair<position, std::string>> toml_limit_error(std::string_view text) {
  if (static_cast<int64_t>(text.size()) > max_toml_bytes)
    return std::pair{position{}, "holds " + std::to_string(text.size()) + " bytes, more than the " +
                                     base::describe_size(max_toml_bytes) +
                                     " a TOML file of kernelskill may hold"};
  return key_scanner(text).first_problem();
}

position position_of(const toml::source_region& region) {
  if (region.begin.line == 0)
    return {};
  return {region.begin.line, region.begin.column};
}

std::string type_name(const toml::node& node) {
  switch (node.type()) {
  case toml::node_type::string:
    return "a string";
  case toml::node_type::integer:
    return "an integer";
  case toml::node_type::floating_point:
    return "a float";
  case toml::node_type::boolean:
    return "a boolean";
  case toml::node_type::array:
    return "an array";
  case toml::node_type::table:
    return "a table";
  case toml::node_type::date:
    return "a date";
  case toml::node_type::time:
    return "a time";
  case toml::node_type::date_time:
    return "a date-time";
  case toml::node_type::none:
    break;
  }
  return "nothing";
}

std::string describe(const toml::node& node) {
  if (auto value = node.value_exact<int64_t>())
    return std::to_string(*value);
  if (auto value = node.value_exact<double>())
    return format_number(*value);
  if (auto value = node.value_exact<bool>())
    return *value ? "true" : "false";
  if (auto value = node.value_exact<std::string>())
    return "\"" + *value + "\"";
  if (const toml::array* array = node.as_array(); array != nullptr && array->empty())
    return "[]";
  return type_name(node);
}

expected<toml::table> parse_toml(std::string_view text, const std::string& file) {
  if (auto problem = toml_limit_error(text))
    return fail(errc::invalid_input, located(file, problem->first, problem->second));
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    return fail(errc::invalid_input,
                located(file, position_of(e.source()), std::string(e.description())));
  }
#else
  toml::parse_result parsed = toml::parse(text, std::string_view(file));
  if (!parsed)
    return fail(errc::invalid_input, located(file, position_of(parsed.error().source()),
                                             std::string(parsed.error().description())));
  return std::move(parsed).table();
#endif
}

} // namespace ks::config
