#pragma once

#include "actors/bench_dispatcher_actor.hpp"
#include "actors/distiller_actor.hpp"
#include "actors/fwd.hpp"
#include "actors/llm_gateway_actor.hpp"
#include "actors/messages.hpp"
#include "actors/store_actor.hpp"
#include "actors/supervisor_actor.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

namespace ks::actors {

/// Runs every task of a campaign: spawns one supervisor per task and the reporter, answers
/// run_all with a campaign_report once every supervisor has reported, and enforces the
/// campaign's budgets: once the wall time, the GPU time or the model's tokens or cost (the
/// gateway's counters) run out it tells every supervisor to stop (stop_kind::budget: no new
/// expansion, then the finals). A stop_msg from outside (Ctrl-C) is passed to every
/// supervisor. With a distiller, a task that ended with a winner faster than its reference is
/// offered to it before the task counts as done. It leaves the shared actors (store, bench,
/// compile pool, roles, gateway) to whoever made them.
using campaign_actor = caf::typed_actor<caf::replies_to<run_all>::with<campaign_report>,
                                        caf::reacts_to<stop_msg>, caf::reacts_to<tick_atom>>;

/// Everything a campaign starts with.
struct campaign_setup {
  std::vector<supervisor_setup> tasks; ///< one supervisor each, in this order
  bench_dispatcher_actor dispatcher;   ///< null in a dry run
  std::vector<std::string> gpu_names;  ///< by GPU index
  store_actor store;                   ///< null in a dry run
  std::string output_dir;
  double wall_time_s = 0;         ///< 0 = unlimited
  double gpu_seconds = 0;         ///< over all GPUs; 0 = unlimited
  double progress_interval_s = 5; ///< 0 = no progress lines
  double write_interval_s = 30;   ///< outputs rewritten this often; 0 = at the end only
  double budget_check_s = 1;      ///< how often the budgets are checked
  llm_gateway_actor llm;          ///< the model gateway; null: the agents use no model
  bool model_budget = false;      ///< campaign.token_budget or cost_budget is set
  distiller_actor distiller;      ///< null: no skill distillation
  double min_gain = 0.02;         ///< a winner must beat its reference by this to be distilled
};

/// Spawns a campaign; it starts on run_all.
campaign_actor spawn_campaign(caf::actor_system& sys, campaign_setup setup);

} // namespace ks::actors
