#include "cli/config_loading.hpp"

#include "base/text.hpp"
#include "config/toml_source.hpp"

#include <toml++/toml.h>

#include <fstream>
#include <optional>
#include <sstream>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

// Returns the file at `path` parsed, or nullopt when it cannot be read or is not TOML (the
// loaders report that; this file only adds to what they say).
std::optional<toml::table> parsed(const fs::path& path) {
  std::optional<std::string> text = base::read_text(path, config::max_toml_bytes);
  if (!text)
    return std::nullopt;
  // Through config/'s parser, which bounds what toml++ does not (toml_source.hpp): this runs
  // on a file the loaders refused, too.
  auto table = config::parse_toml(*text, path.string());
  if (!table)
    return std::nullopt;
  return std::move(*table);
}

// Checks whether the (valid) config at `path` sets campaign.tasks, in a [campaign] table, as
// a dotted key or in an inline table: every spelling TOML allows.
bool sets_tasks(const fs::path& path) {
  std::optional<toml::table> table = parsed(path);
  // The config loader has read the file already, so a failure here is not expected; if one
  // comes (the file changed meanwhile), the loader's own report is the one to trust.
  return !table || table->at_path("campaign.tasks").node() != nullptr;
}

} // namespace

std::string other_kind_hint(const fs::path& path, const std::string& expected) {
  std::optional<toml::table> table = parsed(path);
  if (!table)
    return {};
  bool task = table->contains("reference") || table->contains("inputs");
  bool campaign = table->contains("campaign") || table->contains("search");
  if (expected == "config" && task && !campaign)
    return path.string() + " looks like a task manifest: `kernelskill task check " + path.string() +
           "` checks it, and a config names it in campaign.tasks";
  if (expected == "task" && campaign && !task)
    return path.string() + " looks like a campaign config: `kernelskill config --check " +
           path.string() + "` checks it, and `kernelskill run` runs it";
  return {};
}

tl::expected<config::campaign_config, command_error> load_config_for_command(const fs::path& path) {
  auto loaded = config::load_campaign_config(path);
  if (!loaded) {
    switch (loaded.error().code()) {
    case config::errc::not_found:
    case config::errc::io:
      return stop(stop_reason::usage, loaded.error().message());
    case config::errc::invalid_input:
      return stop(stop_reason::task, loaded.error().message());
    default: // config/ fails with the three codes above only
      break;
    }
    return stop(stop_reason::task, loaded.error().message());
  }
  if (!sets_tasks(path))
    return stop(stop_reason::task,
                path.string() + ":1:1: campaign.tasks is not set: name the task manifests this "
                                "campaign optimizes, e.g.\n  [campaign]\n  tasks = "
                                "[\"../tasks/quickstart/*.toml\"]   # globs or folders, relative "
                                "to this file's folder");
  return std::move(*loaded);
}

} // namespace ks::cli
