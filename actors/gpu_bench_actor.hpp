#pragma once

#include "actors/fwd.hpp"
#include "gpu/worker_client.hpp"
#include "gpu/worker_protocol.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>

namespace ks::actors {

/// Runs bench jobs (info, calibrate, verify, time, profile, probe) on one GPU, one at a time,
/// through the gpu::worker_client it owns. Its handler blocks for the whole job, so in a campaign
/// it is spawned detached: one thread per GPU. A failure comes back as a bench_result with ok ==
/// false; after one that killed the worker, the client starts a fresh worker for the next job.
using bench_actor = caf::typed_actor<caf::replies_to<bench_job>::with<bench_result>>;

/// How a bench actor runs its jobs.
struct bench_settings {
  gpu::verify_options verify;
  gpu::timing_options timing;
  gpu::profile_options profile;
  gpu::probe_options probe; ///< the stability probe (engine/card_stability.hpp)
};

/// Spawns the bench actor of GPU index `gpu` (the campaign's numbering, 0..n-1) whose worker
/// runs with `worker` (worker.device is the CUDA device number); `tasks` resolves job.task.
bench_actor spawn_gpu_bench(caf::actor_system& sys, int32_t gpu, gpu::worker_options worker,
                            bench_settings settings, task_table_ptr tasks,
                            spawn_mode mode = spawn_mode::detached);

} // namespace ks::actors
