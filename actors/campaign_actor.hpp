#pragma once

#include "actors/bench_dispatcher_actor.hpp"
#include "actors/fwd.hpp"
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
/// campaign's budgets: once the wall time or the GPU time runs out it tells every supervisor
/// to stop (stop_kind::budget: no new expansion, then the finals). A stop_msg from outside
/// (Ctrl-C) is passed to every supervisor. It leaves the shared actors (store, bench, compile
/// pool, roles) to whoever made them.
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
};

/// Spawns a campaign; it starts on run_all.
campaign_actor spawn_campaign(caf::actor_system& sys, campaign_setup setup);

} // namespace ks::actors
