#pragma once

#include "actors/fwd.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

namespace ks::actors {

/// Diagnoses what limits a timed kernel (engine/analyst.hpp: memory, compute or latency bound,
/// spills), for the planner's next expansion. Pure and quick: runs on the scheduler. Without
/// known peaks the diagnosis is empty, not an error: planning goes on without it.
using analyst_actor = caf::typed_actor<caf::replies_to<analyze_request>::with<analysis>>;

/// Spawns an analyst; `tasks` gives each task's cost.
analyst_actor spawn_analyst(caf::actor_system& sys, task_table_ptr tasks);

} // namespace ks::actors
