#include "cli/config_loading.hpp"

#include <toml++/toml.h>

#include <fstream>
#include <sstream>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

// Checks whether the (valid) config text sets campaign.tasks, in a [campaign] table, as a
// dotted key or in an inline table: every spelling TOML allows.
bool sets_tasks(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  // The config loader has read the file already, so a syntax error here is not expected; if
  // one comes (the file changed meanwhile), the loader's own report is the one to trust.
#if TOML_EXCEPTIONS
  try {
    toml::table table = toml::parse(text.str(), std::string_view(path.string()));
    return table.at_path("campaign.tasks").node() != nullptr;
  } catch (const toml::parse_error&) {
    return true;
  }
#else
  toml::parse_result parsed = toml::parse(text.str(), std::string_view(path.string()));
  return !parsed || parsed.table().at_path("campaign.tasks").node() != nullptr;
#endif
}

} // namespace

tl::expected<config::campaign_config, command_error> load_config_for_command(const fs::path& path) {
  auto loaded = config::load_campaign_config(path);
  if (!loaded) {
    switch (loaded.error().code()) {
    case config::errc::not_found:
    case config::errc::io:
      return stop(stop_reason::usage, loaded.error().message());
    case config::errc::invalid_input:
      return stop(stop_reason::task, loaded.error().message());
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
