#pragma once

// What the parts of a campaign get from its config beyond their own sections: the search's
// limits and policy options, and the boundary every bench worker (and nvcc with bench.sandbox)
// starts in. run_campaign's steps and preflight both call these, so that a check made before
// the run is the one the run makes.

#include "campaign/campaign_error.hpp"
#include "campaign/run_options.hpp"
#include "config/campaign_config.hpp"
#include "engine/error.hpp"
#include "engine/search_limits.hpp"
#include "engine/search_policy.hpp"
#include "gpu/worker_sandbox.hpp"

namespace ks::campaign {

/// Returns the search limits `config` sets.
engine::search_limits search_limits_of(const config::campaign_config& config);

/// Returns the search policy's options that `config` sets.
engine::policy_options policy_options_for(const config::campaign_config& config);

/// Checks the search limits and the policy (with its options) of `config`.
[[nodiscard]] engine::expected<void> check_search(const config::campaign_config& config);

/// Returns the boundary every worker starts in: no secret of ours in its environment, and the
/// bubblewrap sandbox when bench.sandbox asks for it, probed here (a sandbox that cannot be made
/// is an environment error, before any worker runs without it).
tl::expected<gpu::worker_boundary, campaign_error>
worker_boundary_for(const config::campaign_config& config, const run_options& options);

} // namespace ks::campaign
