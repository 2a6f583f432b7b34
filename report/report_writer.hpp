#pragma once

// Writes a campaign's outputs from its store: results.json (every task, its winner, every
// node's measurements, the environment), best/<task>.cu, and report.md (per task: reference
// time, best time, speedup, fraction of the roofline, the winning lineage of plans). With
// torch baselines (torch_baselines.hpp), each task's best time also against torch eager and
// torch.compile, and the geomeans of the speedups. Pure file writing over memory::store
// reads; no actors, so `kernelskill status` uses it too. Files are written to a temporary
// name and renamed, so a reader never sees half a file.

#include "engine/error.hpp"
#include "memory/store.hpp"
#include "report/torch_baselines.hpp"

#include <filesystem>
#include <string>

namespace ks::report {

/// Writes results.json, best/<task>.cu and report.md into `output_dir` from `store`, each
/// task compared with `baselines` too unless it is nullptr.
[[nodiscard]] engine::expected<void>
write_campaign_outputs(const memory::store& store, const std::filesystem::path& output_dir,
                       const torch_baselines* baselines = nullptr);

/// Returns the text of results.json as `store` stands now (what `kernelskill status --json`
/// prints): the campaign record (null when none was written) and every task with its nodes,
/// compared with `baselines` unless it is nullptr.
[[nodiscard]] engine::expected<std::string>
campaign_results_json(const memory::store& store, const torch_baselines* baselines = nullptr);

/// Returns a short human-readable status of the campaign in `store` (for `kernelskill
/// status`), with the vs eager and vs compile columns when `baselines` is not nullptr.
[[nodiscard]] engine::expected<std::string>
describe_campaign(const memory::store& store, const torch_baselines* baselines = nullptr);

} // namespace ks::report
