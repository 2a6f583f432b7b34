#include "campaign/campaign_tasks.hpp"

#include "engine/task_manifest.hpp"

#include <glob.h>

#include <map>
#include <optional>
#include <set>
#include <string>

namespace ks::campaign {

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> expand(const fs::path& pattern) {
  std::vector<fs::path> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

} // namespace

engine::expected<std::vector<engine::task>>
load_campaign_tasks(const config::campaign_config& config) {
  std::vector<engine::task> tasks;
  std::optional<engine::errc> first_code;
  std::string messages;
  auto problem = [&](engine::errc code, const std::string& text) {
    first_code = first_code.value_or(code);
    messages.append(messages.empty() ? "" : "\n").append(text);
  };
  std::set<fs::path> seen;
  std::map<std::string, fs::path> names;
  for (const fs::path& pattern : config.task_patterns()) {
    std::vector<fs::path> matches = expand(pattern);
    if (matches.empty()) {
      problem(engine::errc::not_found,
              pattern.string() + ": matches no task manifest (campaign.tasks in " +
                  (config.source.empty() ? std::string("the config") : config.source.string()) +
                  ")");
      continue;
    }
    for (const fs::path& match : matches) {
      fs::path canonical = fs::weakly_canonical(match);
      if (!seen.insert(canonical).second)
        continue;
      auto loaded = engine::load_task_suite(match);
      if (!loaded) {
        problem(loaded.error().code(), loaded.error().message());
        continue;
      }
      for (engine::task& t : *loaded) {
        auto [at, inserted] = names.emplace(t.name, t.manifest_path);
        if (!inserted) {
          problem(engine::errc::invalid_input, t.manifest_path.string() +
                                                   ": duplicate task name '" + t.name +
                                                   "' (also in " + at->second.string() + ")");
          continue;
        }
        if (config.bench.atol)
          t.tol.atol = *config.bench.atol;
        if (config.bench.rtol)
          t.tol.rtol = *config.bench.rtol;
        if (config.bench.norm_rel)
          t.tol.norm_rel = *config.bench.norm_rel;
        tasks.push_back(std::move(t));
      }
    }
  }
  if (first_code)
    return engine::fail(*first_code, std::move(messages));
  if (tasks.empty())
    return engine::fail(engine::errc::invalid_input, "campaign.tasks names no task");
  return tasks;
}

} // namespace ks::campaign
