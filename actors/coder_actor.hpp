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

/// Turns a plan into CUDA source through its agent backend (write_code). The backend may
/// block (an LLM backend waits on HTTP): in a campaign the coder is detached.
using coder_actor = caf::typed_actor<caf::replies_to<code_request>::with<code_reply>>;

/// Spawns a coder thinking with `backend` (its own: a backend is used by one actor).
coder_actor spawn_coder(caf::actor_system& sys, std::shared_ptr<engine::agent_backend> backend,
                        task_table_ptr tasks, spawn_mode mode = spawn_mode::detached);

} // namespace ks::actors
