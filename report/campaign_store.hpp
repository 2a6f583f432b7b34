#pragma once

// The campaign's store in its output folder (<output>/state): when `run` may open it, resume
// from it or start over. See campaign_store.cpp.

#include "engine/error.hpp"
#include "memory/store.hpp"
#include "report/output_folder.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::report {

/// Names the folder inside an output folder that holds the campaign's store.
inline constexpr std::string_view state_folder = "state";

/// Names the folder a damaged store is moved to when `run --overwrite` starts over.
inline constexpr std::string_view damaged_state_folder = "state.damaged";

/// Returns what `output` holds of a campaign's results (the files results.json, report.md,
/// report.html and the folder best/), by name; empty when none.
std::vector<std::string> campaign_results(const std::filesystem::path& output);

/// Returns the error that keeps `run` from starting in `output` without --overwrite (`foreign`
/// refuse), checked without opening the store: its data file is damaged (errc::damaged: cut
/// short), or it is missing or empty while the folder holds a campaign's results, which a new
/// campaign would overwrite (errc::invalid_input). Each message names the flag that lifts it.
/// nullopt when `run` may go on, and always with `foreign` overwrite.
std::optional<engine::error> refuse_lost_store(const std::filesystem::path& output,
                                               foreign_output foreign);

/// Opens the store of `output` for `run`, after refuse_lost_store: every record is checked
/// (memory::store::check) before a campaign resumes from it. A damaged store, or one that holds
/// no campaign while the folder holds results, is refused unless `foreign` is overwrite; with
/// overwrite, a damaged store is moved to <output>/state.damaged (replacing an earlier one) and
/// a new one is opened, and `moved_aside` (when given) says so.
[[nodiscard]] engine::expected<memory::store>
open_campaign_store(const std::filesystem::path& output, foreign_output foreign,
                    std::string* moved_aside = nullptr);

/// Says whether advice about a damaged store points to `kernelskill inspect`: not where the
/// store cannot be opened (its data file cut short), nor from inspect itself.
enum class mention_inspect { yes, no };

/// Returns the lines that say what to do about the damaged store of `output`: inspect lists
/// its records (`inspect` yes), the results hold the campaign as last reported, --overwrite
/// starts over.
std::string damaged_store_advice(const std::filesystem::path& output,
                                 mention_inspect inspect = mention_inspect::yes);

/// Checks every record of `db`, the store of `output` (memory::store::check): fails with
/// errc::damaged listing the damaged ones and what to do (damaged_store_advice), or with the
/// error that kept the check from reading the store.
[[nodiscard]] engine::expected<void> check_records(const memory::store& db,
                                                   const std::filesystem::path& output,
                                                   mention_inspect inspect = mention_inspect::yes);

/// Returns `check`'s damaged records as one line each ("  nodes/relu/3: damaged: ..."), at most
/// `most` of them, then how many more; no final newline.
std::string list_damaged(const memory::store_check& check, size_t most = 5);

} // namespace ks::report
