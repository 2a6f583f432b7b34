#include "cli/command_line.hpp"

#include "config/spelling.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ks::cli {

namespace {

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
}

const CLI::App* command_named(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : commands_of(app))
    if (sub->get_name() == name)
      return sub;
  return nullptr;
}

std::string names_of(const std::vector<const CLI::App*>& commands) {
  std::string text;
  for (const CLI::App* sub : commands)
    text += (text.empty() ? "" : ", ") + sub->get_name();
  return text;
}

// Returns "kernelskill run" for the run command, "kernelskill" for the program itself.
std::string full_name(const CLI::App& app) {
  std::string name = app.get_name();
  for (const CLI::App* up = app.get_parent(); up != nullptr; up = up->get_parent())
    name = up->get_name() + " " + name;
  return name;
}

// Returns what a message about `app` starts with: "task check: ", or nothing for the program
// (main prefixes every message with "kernelskill: ").
std::string prefix_of(const CLI::App& app) {
  if (app.get_parent() == nullptr)
    return {};
  std::string name = app.get_name();
  for (const CLI::App* up = app.get_parent(); up != nullptr && up->get_parent() != nullptr;
       up = up->get_parent())
    name = up->get_name() + " " + name;
  return name + ": ";
}

// Checks whether `word` is a number ("-1", "-0.5", "-1e3"): a value, never an option.
bool is_number(const std::string& word) {
  char* end = nullptr;
  std::strtod(word.c_str(), &end);
  return end != word.c_str() && *end == '\0';
}

// Returns the option of `app` that `flag` ("--dry-run", "-h") names, or nullptr.
const CLI::Option* option_named(const CLI::App& app, const std::string& flag) {
  bool is_long = flag.rfind("--", 0) == 0;
  std::string bare = flag.substr(is_long ? 2 : 1);
  for (const CLI::Option* opt : app.get_options()) {
    const auto& names = is_long ? opt->get_lnames() : opt->get_snames();
    for (const std::string& name : names)
      if (name == bare)
        return opt;
  }
  return nullptr;
}

std::vector<std::string> flags_of(const CLI::App& app) {
  std::vector<std::string> flags;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& name : opt->get_lnames())
      flags.push_back("--" + name);
    for (const std::string& name : opt->get_snames())
      flags.push_back("-" + name);
  }
  return flags;
}

// Returns the closest of `known` to `word`: a typo (config::closest), else the one word that
// `word` is a prefix of ("--def" for "--defaults").
std::optional<std::string> suggestion(const std::string& word,
                                      const std::vector<std::string>& known) {
  std::vector<std::string_view> views(known.begin(), known.end());
  if (auto guess = config::closest(word, views))
    return std::string(*guess);
  std::optional<std::string> only;
  for (const std::string& candidate : known)
    if (word.size() >= 3 && candidate.rfind(word, 0) == 0) {
      if (only)
        return std::nullopt;
      only = candidate;
    }
  return only;
}

std::string did_you_mean(const std::optional<std::string>& guess) {
  return guess ? " (did you mean '" + *guess + "'?)" : "";
}

// Returns the commands below `app` that have an option `flag`, as "run, eval".
std::string commands_with(const CLI::App& app, const std::string& flag) {
  std::string text;
  for (const CLI::App* sub : commands_of(app)) {
    if (option_named(*sub, flag) != nullptr)
      text += (text.empty() ? "" : ", ") + full_name(*sub);
    std::string deeper = commands_with(*sub, flag);
    if (!deeper.empty())
      text += (text.empty() ? "" : ", ") + deeper;
  }
  return text;
}

std::optional<std::string> check_from(const CLI::App& root, const CLI::App& app,
                                      const std::vector<std::string>& args, size_t i) {
  for (; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--")
      return std::nullopt; // everything after is positional
    bool option = word.size() > 1 && word[0] == '-' && !is_number(word);
    if (option) {
      std::string flag = word.substr(0, word.find('='));
      const CLI::Option* opt = option_named(app, flag);
      if (opt == nullptr) {
        std::string message = prefix_of(app) + "unknown option '" + flag + "'" +
                              did_you_mean(suggestion(flag, flags_of(app)));
        std::string owners = commands_with(root, flag);
        if (!owners.empty())
          message += "; it is an option of " + owners +
                     (&app == &root ? ": give it after the command" : "");
        return message;
      }
      // --help and --version end the parse: what follows is not read.
      if (opt == app.get_help_ptr() || flag == "--version")
        return std::nullopt;
      // An option that takes a value (and was not given one with '=') consumes the next word.
      if (opt->get_type_size_max() > 0 && word.find('=') == std::string::npos)
        ++i;
      continue;
    }
    std::vector<const CLI::App*> commands = commands_of(app);
    if (commands.empty())
      continue; // a positional argument; CLI11 counts them
    const CLI::App* next = command_named(app, word);
    if (next == nullptr) {
      std::vector<std::string> names;
      for (const CLI::App* sub : commands)
        names.push_back(sub->get_name());
      return prefix_of(app) + "unknown command '" + word + "'" +
             did_you_mean(suggestion(word, names)) + "; the commands are " + names_of(commands);
    }
    return check_from(root, *next, args, i + 1);
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> check_command_line(const CLI::App& app,
                                              const std::vector<std::string>& args) {
  return check_from(app, app, args, 0);
}

std::string command_path(const CLI::App& app, const std::vector<std::string>& args) {
  std::string path;
  const CLI::App* current = &app;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--")
      break;
    if (word.size() > 1 && word[0] == '-' && !is_number(word)) {
      const CLI::Option* opt = option_named(*current, word.substr(0, word.find('=')));
      if (opt != nullptr && opt->get_type_size_max() > 0 && word.find('=') == std::string::npos)
        ++i;
      continue;
    }
    const CLI::App* next = command_named(*current, word);
    if (next == nullptr)
      break;
    path += (path.empty() ? "" : " ") + word;
    current = next;
  }
  return path;
}

const CLI::App* find_command(const CLI::App& app, const std::vector<std::string>& path) {
  const CLI::App* current = &app;
  for (const std::string& name : path) {
    current = command_named(*current, name);
    if (current == nullptr)
      return nullptr;
  }
  return current;
}

std::string command_names(const CLI::App& app) {
  return names_of(commands_of(app));
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos)
      end = text.size();
    if (end > start)
      words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

CLI::Validator within(double low, double high, const std::string& unit) {
  auto number = [](double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.15g", x);
    return std::string(text);
  };
  std::string bounds = number(low) + " to " + number(high) + (unit.empty() ? "" : " " + unit);
  return CLI::Validator(
      [bounds, low, high](std::string& value) -> std::string {
        char* end = nullptr;
        double x = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0' || !std::isfinite(x))
          return "must be a number from " + bounds + ", not '" + value + "'";
        if (x < low || x > high)
          return "must be from " + bounds + ", not " + value;
        return {};
      },
      // No description: the option's own help text states its bounds.
      "", "WITHIN");
}

} // namespace ks::cli
