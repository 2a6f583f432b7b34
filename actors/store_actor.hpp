#pragma once

#include "actors/fwd.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>
#include <string>

namespace ks::memory {
class store;
class skill_store;
} // namespace ks::memory

namespace ks::actors {

/// The only writer of the campaign's memory::store. Every write is answered with ack once it
/// is committed (LMDB, fsync), so a supervisor that waits for the ack before its next step
/// never loses a transition it acted on; a failed write is answered with an error. LMDB
/// writes may block on the disk, so in a campaign the store actor is detached. It also reads
/// (a task's snapshot on start or resume, calibrations) and writes the campaign's outputs,
/// since a store folder can be open only once in a process. With a long-term skill memory, it
/// is that memory's writer too: a skill's try is counted there once its node's outcome is
/// committed in the campaign's store (the ack waits for both), and get_skill_stats reads it.
/// The model gateway actor sends it every request's transcript (put_transcript).
using store_actor = caf::typed_actor<
    caf::replies_to<put_node>::with<ack>, caf::replies_to<put_source>::with<ack>,
    caf::replies_to<put_outcome>::with<ack>, caf::replies_to<put_repair>::with<ack>,
    caf::replies_to<put_task>::with<ack>, caf::replies_to<put_campaign>::with<ack>,
    caf::replies_to<put_calibration>::with<ack>, caf::replies_to<put_skill_result>::with<ack>,
    caf::replies_to<put_batch>::with<ack>, caf::replies_to<get_task>::with<task_snapshot>,
    caf::replies_to<get_campaign>::with<campaign_reply>,
    caf::replies_to<get_calibration>::with<calibration_reply>,
    caf::replies_to<write_outputs>::with<ack>,
    caf::replies_to<get_skill_stats>::with<skill_stats_reply>,
    caf::replies_to<reconcile_tries>::with<ack>, caf::replies_to<put_learned_skill>::with<ack>,
    caf::replies_to<put_transcript>::with<ack>>;

/// Spawns the store actor, which takes over `store` and `skills` (no one else may use them
/// afterwards; `skills` may be null: no long-term memory). `run` names the campaign in the
/// skill memory's ledger of tries.
store_actor spawn_store(caf::actor_system& sys, std::shared_ptr<memory::store> store,
                        spawn_mode mode = spawn_mode::detached,
                        std::shared_ptr<memory::skill_store> skills = nullptr,
                        std::string run = {});

} // namespace ks::actors
