#pragma once

#include "actors/fwd.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>

namespace ks::engine {
class agent_backend;
} // namespace ks::engine

namespace ks::actors {

/// Proposes a fix for a source that failed to build or verify, or gives up, through its agent
/// backend (repair). The backend may block: in a campaign the repairer is detached.
using repairer_actor = caf::typed_actor<caf::replies_to<fix_request>::with<fix_reply>>;

/// Spawns a repairer thinking with `backend` (its own: a backend is used by one actor).
repairer_actor spawn_repairer(caf::actor_system& sys,
                              std::shared_ptr<engine::agent_backend> backend, task_table_ptr tasks,
                              spawn_mode mode = spawn_mode::detached);

} // namespace ks::actors
