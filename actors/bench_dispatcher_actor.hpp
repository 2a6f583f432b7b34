#pragma once

#include "actors/fwd.hpp"
#include "actors/gpu_bench_actor.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <vector>

namespace ks::actors {

/// Shares the bench actors among all supervisors: takes bench jobs, queues them, and hands each
/// to an idle bench actor, so that no GPU idles while a job it may run waits. A job pinned to a
/// GPU (gpu >= 0) waits for that GPU; a job with preferred GPUs (prefer: where its task was
/// verified or its parent timed) takes the first idle one of them, and another idle GPU only
/// when no job can start on its own cards; any other job takes any idle GPU. The queued job of
/// highest priority starts first, its priority growing by the milliseconds it has waited
/// (aging), so no job starves and equals go in the order they came; a job never waits behind
/// one pinned to a busy GPU. A bench actor that dies takes no more jobs; jobs pinned to it go
/// to another GPU, and when none is left every queued job fails.
/// It also picks each task's home GPU (assign_home): the one with the least load assigned so
/// far, so that a task 30x heavier than the others does not share its card with half of them.
/// An interrupt (stop_msg of kind interrupt) drops every queued job and every job that comes
/// later with actor_errc::interrupted, so that Ctrl-C waits only for the jobs running.
using bench_dispatcher_actor =
    bench_actor::extend<caf::replies_to<bench_stats_request>::with<bench_stats>,
                        caf::replies_to<assign_home>::with<int32_t>, caf::reacts_to<stop_msg>>;

/// The dispatcher as supervisors see it when they choose their home GPU.
using home_actor = caf::typed_actor<caf::replies_to<assign_home>::with<int32_t>>;

/// Spawns a dispatcher over `gpus`, indexed by GPU index (gpus[i] runs jobs for GPU i).
bench_dispatcher_actor spawn_bench_dispatcher(caf::actor_system& sys,
                                              std::vector<bench_actor> gpus);

} // namespace ks::actors
