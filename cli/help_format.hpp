#pragma once

// How kernelskill's --help looks: descriptions wrapped to the terminal (80 columns when
// stdout is not one, at most 100), a command's one-line summary in the list of commands and
// its whole description on its own page, and option descriptions wrapped beside their names.

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace ks::cli {

/// Returns the width help text is wrapped at: the terminal's columns (60 to 100) when stdout
/// is a terminal, else 80.
size_t help_width();

/// Returns `text` wrapped at `width` columns: each line of `text` is wrapped on its own, and
/// every line it is broken into after the first starts with `hanging` spaces. A word longer
/// than a line stays whole.
std::string wrap(std::string_view text, size_t width, size_t hanging = 0);

/// Returns the first sentence of `text` (up to the first ". " or the end), for the list of
/// commands.
std::string first_sentence(std::string_view text);

/// Formats --help pages as described at the top of this file.
class help_formatter : public CLI::Formatter {
public:
  /// Makes a formatter that wraps at `width` columns.
  explicit help_formatter(size_t width);

  std::string make_description(const CLI::App* app) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
  std::string make_footer(const CLI::App* app) const override;

private:
  size_t width_;
};

} // namespace ks::cli
