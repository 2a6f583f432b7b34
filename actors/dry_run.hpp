#pragma once

// The dry run of a campaign: everything a campaign does before it needs a GPU, once per task,
// with no store, no worker and no state. run_campaign hands over to it once the tasks are
// loaded and the output folder exists. It opens the built-in skills, the compile service for
// run_options.arch, the agents (and the model gateway, whose transcripts and llm_usage.json
// go to <output>/dry-run/), then runs a dry_run_actor per task (dry_run_actor.hpp: compile the
// reference, plan one round, code and compile it) with the reporter showing them. Each prints
// its lines as they come and writes its candidates to <output>/dry-run/<task>/;
// <output>/dry-run/summary.txt keeps every line. An interrupted dry run stops at once: it
// keeps nothing worth finishing, so the nvcc processes still running are killed rather than
// waited for.

#include "actors/campaign_steps.hpp"
#include "actors/run_campaign.hpp"

#include <filesystem>

namespace ks::actors {

/// Runs the dry run of `tasks` with the output folder `output` (created); the summary's tasks
/// say, each, whether the task could run.
[[nodiscard]] tl::expected<campaign::campaign_summary, campaign::campaign_error>
run_dry_campaign(const config::campaign_config& config, const campaign::run_options& options,
                 const campaign_tasks& tasks, const std::filesystem::path& output);

} // namespace ks::actors
