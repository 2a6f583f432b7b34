#pragma once

#include "actors/fwd.hpp"
#include "engine/retrieval.hpp"
#include "engine/skill.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>

namespace ks::engine {
class agent_backend;
} // namespace ks::engine

namespace ks::actors {

/// Proposes K distinct plans for a parent node through its agent backend (propose). The
/// backend may block (an LLM backend waits on HTTP): in a campaign the planner is detached.
/// A request that brings no retrieved skills gets them here: the skills of the library that
/// apply to the parent, ranked by the request's statistics (engine::retrieve).
using planner_actor = caf::typed_actor<caf::replies_to<plan_request>::with<plan_reply>>;

/// Spawns a planner thinking with `backend` (its own: a backend is used by one actor), that
/// retrieves from `skills` (null: none) by `rules`.
planner_actor spawn_planner(caf::actor_system& sys, std::shared_ptr<engine::agent_backend> backend,
                            task_table_ptr tasks, spawn_mode mode = spawn_mode::detached,
                            engine::skill_library_ptr skills = nullptr,
                            engine::retrieval_rules rules = {});

} // namespace ks::actors
