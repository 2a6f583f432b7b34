// One campaign per output folder at a time, and never in a folder of something else.
//
// A campaign writes its results (results.json, report.md, best/), its store (state/) and its
// cache into campaign.output, so a second run on the same folder would mix two campaigns in
// one tree, and a folder that holds something else would have those names replaced. Before
// anything is written, the folder is classified: it is ours when it holds the lock file (every
// run since the lock came writes it), or when every entry is a name a campaign or a dry run
// writes (an output of an older version); anything else is refused unless the user said
// --overwrite. Then the lock (base/folder_lock.hpp) is taken and held until the run ends; the
// kernel drops it when the process dies, so a killed campaign resumes without a stale lock.

#include "report/output_folder.hpp"

#include "report/bench_trace.hpp"
#include "report/campaign_store.hpp"
#include "report/gpu_stability.hpp"
#include "report/torch_baselines.hpp"

#include <algorithm>
#include <array>
#include <system_error>

namespace ks::report {

namespace fs = std::filesystem;
using engine::errc;
using engine::fail;

namespace {

// What a campaign or a dry run writes into its output folder, and their temporary files.
bool ours(const std::string& name) {
  static const std::array<std::string_view, 13> names{"best",
                                                      "cache",
                                                      "dry-run",
                                                      "state",
                                                      "transcripts",
                                                      "results.json",
                                                      "report.md",
                                                      "report.html",
                                                      "llm_usage.json",
                                                      campaign_baselines_file,
                                                      output_lock_file,
                                                      report::bench_trace_file,
                                                      report::gpu_stability_file};
  if (name == damaged_state_folder) // a damaged store that run --overwrite set aside
    return true;
  if (std::find(names.begin(), names.end(), name) != names.end())
    return true;
  // Written to NAME.tmp... and renamed (report_writer, usage_file).
  return std::any_of(names.begin(), names.end(), [&](std::string_view n) {
    return name.size() > n.size() + 4 && name.compare(0, n.size(), n) == 0 &&
           name.compare(n.size(), 4, ".tmp") == 0;
  });
}

} // namespace

std::vector<std::string> foreign_entries(const fs::path& folder) {
  std::vector<std::string> foreign;
  std::error_code ec;
  if (fs::exists(folder / std::string(output_lock_file), ec))
    return foreign;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!ours(name))
      foreign.push_back(name);
  }
  std::sort(foreign.begin(), foreign.end());
  return foreign;
}

std::optional<engine::error> refuse_foreign(const fs::path& folder, foreign_output foreign) {
  std::vector<std::string> others = foreign_entries(folder);
  if (others.empty() || foreign == foreign_output::overwrite)
    return std::nullopt;
  std::string listed;
  for (size_t i = 0; i < others.size() && i < 3; ++i)
    listed += (i == 0 ? "" : ", ") + others[i];
  if (others.size() > 3)
    listed += " and " + std::to_string(others.size() - 3) + " more";
  return engine::error{errc::invalid_input,
                       "campaign.output " + folder.string() +
                           " holds something other than a kernelskill output (" + listed +
                           "); a campaign writes results.json, report.md, best/, state/ and "
                           "cache/ there. Name a new or empty folder, or pass --overwrite to use "
                           "it anyway (nothing else in it is touched)"};
}

engine::expected<output_folder> open_output_folder(const fs::path& folder, foreign_output foreign,
                                                   std::string_view owner) {
  std::error_code ec;
  if (fs::exists(folder, ec) && !fs::is_directory(folder, ec))
    return fail(errc::invalid_input,
                "campaign.output " + folder.string() + " is a file, not a folder");
  if (auto refused = refuse_foreign(folder, foreign))
    return tl::unexpected(*refused);
  fs::create_directories(folder, ec);
  if (ec)
    return fail(errc::io,
                "cannot create the output folder " + folder.string() + ": " + ec.message());
  auto lock = base::folder_lock::acquire(folder, output_lock_file, owner);
  if (!lock)
    return tl::unexpected(lock.error());
  return output_folder{folder, std::move(*lock)};
}

} // namespace ks::report
