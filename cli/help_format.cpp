#include "cli/help_format.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

namespace ks::cli {

size_t help_width() {
  winsize size{};
  if (::isatty(STDOUT_FILENO) == 1 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0)
    return std::clamp<size_t>(size.ws_col, 60, 100);
  return 80;
}

std::string wrap(std::string_view text, size_t width, size_t hanging) {
  std::string out;
  size_t line_start = 0;
  while (line_start <= text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos)
      line_end = text.size();
    std::string_view line = text.substr(line_start, line_end - line_start);
    // Keep the line's own indentation (lists inside a description).
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string_view::npos)
      indent = line.size();
    std::string current(line.substr(0, indent));
    size_t column = indent;
    bool first_word = true;
    size_t pos = indent;
    while (pos < line.size()) {
      size_t word_end = line.find(' ', pos);
      if (word_end == std::string_view::npos)
        word_end = line.size();
      std::string_view word = line.substr(pos, word_end - pos);
      if (!word.empty()) {
        if (!first_word && column + 1 + word.size() > width) {
          out += current + "\n";
          current = std::string(hanging + indent, ' ');
          column = hanging + indent;
          first_word = true;
        }
        if (!first_word) {
          current += ' ';
          ++column;
        }
        current += word;
        column += word.size();
        first_word = false;
      }
      pos = word_end + 1;
    }
    out += current;
    if (line_end == text.size())
      break;
    out += '\n';
    line_start = line_end + 1;
  }
  return out;
}

std::string first_sentence(std::string_view text) {
  size_t end = text.find(". ");
  size_t newline = text.find('\n');
  end = std::min(end, newline);
  if (end == std::string_view::npos)
    return std::string(text);
  std::string out(text.substr(0, end));
  if (!out.empty() && out.back() != '.' && out.back() != ':')
    out += '.';
  return out;
}

help_formatter::help_formatter(size_t width) : width_(width) {
  column_width(30);
}

std::string help_formatter::make_description(const CLI::App* app) const {
  std::string description = app->get_description();
  if (description.empty())
    return {};
  return wrap(description, width_) + "\n\n";
}

std::string help_formatter::make_subcommand(const CLI::App* sub) const {
  std::ostringstream out;
  size_t room = width_ > column_width_ + 20 ? width_ - column_width_ : 20;
  CLI::detail::format_help(out, sub->get_display_name(true),
                           wrap(first_sentence(sub->get_description()), room), column_width_);
  return out.str();
}

std::string help_formatter::make_option_desc(const CLI::Option* opt) const {
  size_t room = width_ > column_width_ + 20 ? width_ - column_width_ : 20;
  return wrap(opt->get_description(), room);
}

std::string help_formatter::make_footer(const CLI::App* app) const {
  std::string footer = app->get_footer();
  if (footer.empty())
    return {};
  return footer + (footer.ends_with('\n') ? "" : "\n");
}

} // namespace ks::cli
