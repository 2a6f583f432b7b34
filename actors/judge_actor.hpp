#pragma once

#include "actors/fwd.hpp"
#include "engine/judge.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

namespace ks::actors {

/// Decides with engine/judge.hpp's noise-aware statistics: whether a child beats its parent,
/// and who wins an interleaved final. Cheap and pure: runs on the scheduler.
using judge_actor = caf::typed_actor<caf::replies_to<judge_request>::with<judge_reply>,
                                     caf::replies_to<final_request>::with<final_reply>>;

/// Spawns a judge that asks for the evidence `options` sets.
judge_actor spawn_judge(caf::actor_system& sys, const engine::judge_options& options);

} // namespace ks::actors
