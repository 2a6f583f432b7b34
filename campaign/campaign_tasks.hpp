#pragma once

#include "config/campaign_config.hpp"
#include "engine/error.hpp"
#include "engine/task.hpp"

#include <vector>

namespace ks::campaign {

/// Loads the tasks of `config`: each pattern of campaign.tasks (resolved against the config's
/// folder) is expanded with glob(3), its matches in glob's (sorted) order, patterns in the
/// order written; a folder loads as a suite (every *.toml in it); a file matched twice loads
/// once. Applies the [bench] tolerance overrides. Fails with every problem at once: a pattern
/// matching nothing (not_found), manifest errors (FILE:LINE:COL lines), duplicate task names
/// (invalid_input); and with invalid_input when no task is left.
[[nodiscard]] engine::expected<std::vector<engine::task>>
load_campaign_tasks(const config::campaign_config& config);

} // namespace ks::campaign
