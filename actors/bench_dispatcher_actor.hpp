#pragma once

#include "actors/bench_stability.hpp"
#include "actors/fwd.hpp"
#include "actors/gpu_bench_actor.hpp"
#include "actors/messages.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

namespace ks::actors {

/// Shares the bench actors among all supervisors: takes bench jobs, queues them, and hands each
/// to an idle bench actor. Which queued jobs start, and on which GPUs, is engine::schedule's
/// answer (engine/bench_schedule.hpp: highest priority first, aged by the wait) over the
/// placement each job carries (engine/bench_placement.hpp: pinned or preferred GPUs); the
/// dispatcher keeps the queue and the GPUs' state and asks it whenever a job comes or a GPU
/// frees. A bench actor that dies takes no more jobs; jobs pinned to it go to another GPU, and
/// when none is left every queued job fails.
/// It also answers each task's home GPU (assign_home, engine::home_for: the GPU with the least
/// load assigned so far, so that a task 30x heavier than the others does not share its card
/// with half of them).
/// An interrupt (stop_msg of kind interrupt) drops every queued job and every job that comes
/// later with actor_errc::interrupted, so that Ctrl-C waits only for the jobs running.
/// With a stability setup that is on, it probes each card through the campaign and trusts a
/// timing only once a probe within bounds follows it (engine/card_stability.hpp): a timing
/// result waits for the card's next probe; a card whose probes go out of bounds takes no timing
/// job until one is within bounds again (its held timings go back to the queue), and past
/// its limit its timings run, flagged. A tick wakes it for an idle unstable card's next probe.
using bench_dispatcher_actor =
    bench_actor::extend<caf::replies_to<bench_stats_request>::with<bench_stats>,
                        caf::replies_to<assign_home>::with<int32_t>, caf::reacts_to<stop_msg>,
                        caf::reacts_to<tick_atom>>;

/// The dispatcher as supervisors see it when they choose their home GPU.
using home_actor = caf::typed_actor<caf::replies_to<assign_home>::with<int32_t>>;

/// Returns milliseconds on a monotonic clock: the time a dispatcher ages its queue by.
using bench_clock = std::function<double()>;

/// Returns a bench_clock that reads std::chrono::steady_clock.
bench_clock steady_bench_clock();

/// Spawns a dispatcher over `gpus`, indexed by GPU index (gpus[i] runs jobs for GPU i), that
/// reads the time from `clock` and appends the bench trace (report/bench_trace.hpp) to `trace`
/// unless it is empty, and to the file KS_BENCH_TRACE names too; it watches the cards'
/// stability as `stability` says (by default it does not).
bench_dispatcher_actor spawn_bench_dispatcher(caf::actor_system& sys, std::vector<bench_actor> gpus,
                                              bench_clock clock = steady_bench_clock(),
                                              std::filesystem::path trace = {},
                                              stability_setup stability = {});

} // namespace ks::actors
