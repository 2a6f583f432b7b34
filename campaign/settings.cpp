#include "campaign/settings.hpp"

namespace ks::campaign {

engine::search_limits search_limits_of(const config::campaign_config& config) {
  engine::search_limits limits{config.search.branches,
                               config.search.depth,
                               config.campaign.candidates_per_task,
                               config.search.stop_roofline_fraction,
                               config.search.stop_patience,
                               config.search.min_gain};
  limits.torch_min_gain = config.search.torch_min_gain;
  return limits;
}

engine::policy_options policy_options_for(const config::campaign_config& config) {
  engine::policy_options out;
  for (const engine::policy_info& info : engine::policy_registry())
    if (info.name == config.search.policy)
      for (const engine::policy_option& o : info.options)
        if (o.name == "exploration")
          out.emplace("exploration", config.search.exploration);
  return out;
}

engine::expected<void> check_search(const config::campaign_config& config) {
  if (auto ok = engine::validate(search_limits_of(config)); !ok)
    return ok;
  if (auto ok = engine::make_policy(config.search.policy, policy_options_for(config)); !ok)
    return tl::unexpected(ok.error());
  return {};
}

// The worker runs candidates: it gets no secret of ours, and a sandbox when asked for.
tl::expected<gpu::worker_boundary, campaign_error>
worker_boundary_for(const config::campaign_config& config, const run_options& options) {
  gpu::worker_boundary boundary;
  boundary.sandbox = config.bench.sandbox ? gpu::sandbox_mode::bubblewrap : gpu::sandbox_mode::off;
  boundary.secret_env = config.bench.secret_env;
  if (!config.agents.api_key_env.empty())
    boundary.secret_env.push_back(config.agents.api_key_env);
  boundary.readable = {options.cache_dir.empty() ? config.output_dir() / "cache"
                                                 : options.cache_dir};
  if (config.bench.sandbox) {
    if (auto sandbox = gpu::probe_sandbox(boundary); !sandbox) {
      campaign_error e{sandbox.error()};
      e.environment = true;
      return tl::unexpected(std::move(e));
    }
  }
  return boundary;
}

} // namespace ks::campaign
