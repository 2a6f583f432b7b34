#pragma once

// The entry point of a campaign: builds the actor system, wires the actors of DESIGN.md,
// runs until every task stops (or a budget, or Ctrl-C), and returns a summary. Running it
// again on the same output folder resumes: finished nodes are read back from the store and
// never redone; work that was in flight when the campaign died is redone.

#include "campaign/campaign_error.hpp"
#include "campaign/campaign_summary.hpp"
#include "campaign/run_options.hpp"
#include "config/campaign_config.hpp"

namespace ks::actors {

/// Runs (or resumes) the campaign `config` describes; with options.dry_run, one round of
/// planning, coding and compiling per task instead.
[[nodiscard]] tl::expected<campaign::campaign_summary, campaign::campaign_error>
run_campaign(const config::campaign_config& config, const campaign::run_options& options);

} // namespace ks::actors
