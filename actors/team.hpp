#pragma once

#include "actors/analyst_actor.hpp"
#include "actors/bench_dispatcher_actor.hpp"
#include "actors/coder_actor.hpp"
#include "actors/compile_pool_actor.hpp"
#include "actors/gpu_bench_actor.hpp"
#include "actors/judge_actor.hpp"
#include "actors/planner_actor.hpp"
#include "actors/repairer_actor.hpp"
#include "actors/store_actor.hpp"

#include <vector>

namespace ks::actors {

/// The actors a supervisor works with, shared by every supervisor of a campaign. A role with
/// several members (an agent backend may allow several calls at once) is used round robin.
/// In a dry run the store and the bench are null handles: nothing is written or measured.
struct team {
  store_actor store;
  bench_actor bench; ///< the dispatcher, seen as one bench actor
  home_actor homes;  ///< the dispatcher, which picks each task's home GPU; null: the setup's home
  compiler_actor compiler;
  std::vector<planner_actor> planners;
  std::vector<coder_actor> coders;
  std::vector<repairer_actor> repairers;
  analyst_actor analyst;
  judge_actor judge;
};

} // namespace ks::actors
