#pragma once

// The model usage of a campaign, kept beside its results as <output>/llm_usage.json so that it
// adds up across runs (a resumed campaign's budgets count what the earlier runs spent) and the
// reports can show it (results.json's "llm", report.md). Written by the model service after
// every request, to a temporary name and renamed.
//
//   { "v": 1, "type": "llm_usage", "backend": str, "model": str,
//     "submitted": int, "succeeded": int, "failed": int, "cancelled": int, "refused": int,
//     "attempts": int, "retries": int, "requests": int, "input_tokens": int,
//     "output_tokens": int, "cost": real, "budget_spent": str,
//     "tasks": { <task>: { "requests", "input_tokens", "output_tokens", "cost" } } }

#include "agents/model_service.hpp"
#include "engine/error.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ks::agents {

/// What llm_usage.json holds.
struct usage_record {
  gateway_stats stats; ///< in_flight and queued are not kept
  std::string backend;
  std::string model;
};

/// Returns `stats` as llm_usage.json's text (in_flight and queued are not kept).
std::string usage_json(const gateway_stats& stats, std::string_view backend,
                       std::string_view model);

/// Reads llm_usage.json's text; fails with invalid_input naming what is malformed.
[[nodiscard]] engine::expected<usage_record> parse_usage(std::string_view text);

/// Writes `stats` to `path` (a temporary name, then renamed).
[[nodiscard]] engine::expected<void> write_usage(const std::filesystem::path& path,
                                                 const gateway_stats& stats,
                                                 std::string_view backend, std::string_view model);

/// Reads `path`; nullopt when there is no such file.
[[nodiscard]] engine::expected<std::optional<usage_record>>
read_usage(const std::filesystem::path& path);

} // namespace ks::agents
