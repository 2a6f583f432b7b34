#pragma once

#include "actors/fwd.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <memory>

namespace ks::gpu {
class compiler;
} // namespace ks::gpu

namespace ks::actors {

/// Compiles candidate sources into shared objects (gpu::compiler: nvcc behind the
/// content-addressed cache). The pool queues jobs and hands each to an idle worker; each worker
/// blocks in nvcc, so in a campaign the workers are detached (one thread each) and their
/// number is the CPU cores. A compile error is a compile_done with ok == false, not an error.
using compiler_actor = caf::typed_actor<caf::replies_to<compile_job>::with<compile_done>>;

/// Spawns a pool of `workers` (at least 1) compile workers sharing `compiler`.
compiler_actor spawn_compile_pool(caf::actor_system& sys,
                                  std::shared_ptr<const gpu::compiler> compiler, int64_t workers,
                                  spawn_mode mode = spawn_mode::detached);

} // namespace ks::actors
