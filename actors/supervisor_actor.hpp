#pragma once

#include "actors/fwd.hpp"
#include "actors/team.hpp"
#include "engine/search_limits.hpp"
#include "engine/search_policy.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ks::actors {

/// Runs the tree search of one task (see supervisor_actor.cpp): answers run_task with a
/// task_report once the task has ended (its winner declared, or it failed) or, after an
/// interrupt, once its work in flight has been recorded.
using supervisor_actor =
    caf::typed_actor<caf::replies_to<run_task>::with<task_report>, caf::reacts_to<stop_msg>,
                     caf::replies_to<progress_request>::with<task_progress>,
                     caf::reacts_to<retry_plan>, caf::reacts_to<retry_node>>;

/// One GPU of the campaign as a supervisor needs it once it is the task's home.
struct gpu_peaks {
  std::string name;     ///< for skill statistics
  double peak_gbps = 0; ///< its calibration; 0 = unknown
  double peak_gflops = 0;
};

/// Everything a supervisor starts with.
struct supervisor_setup {
  std::string task;     ///< its name in `tasks`
  int32_t home_gpu = 0; ///< the GPU index the reference prefers (the card that times it
                        ///< becomes the home); with team.homes set, only a fallback: the
                        ///< dispatcher suggests one lazily
  std::string gpu_name; ///< the home GPU's name, for skill statistics
  double peak_gbps = 0; ///< the home GPU's calibration; 0 = unknown
  double peak_gflops = 0;
  std::vector<gpu_peaks> gpus; ///< every GPU by index: the chosen home's name and peaks
  engine::search_limits limits;
  std::string policy = "best_first";
  engine::policy_options policy_options;
  int64_t repair_rounds = 2; ///< repairs of one branch, at most
  int64_t finalists = 3;     ///< finalists re-timed interleaved
  int64_t final_rounds = 5;  ///< rounds of the interleaved final (A B C A B C ...)
  /// Parents this slow (median, ms) or slower are re-timed on other GPUs while their children
  /// verify. Each re-timing is a timing job of the parent; it pays off where the children's
  /// timings are long enough to hold up the task (ten trials of 20 ms take as long as a
  /// verification); faster tasks keep their children on their parents' cards or re-time on
  /// demand.
  double spread_min_median_ms = 20;
  /// The GPU architecture its kernels are compiled for ("sm_90a"): long-term memory keeps a
  /// skill's statistics per (skill, op family, architecture).
  std::string arch;
  /// A plan request the backend could not answer for now (errc::transient) is asked again
  /// after this many seconds, doubling each time, at most plan_retries times in a row.
  double plan_retry_s = 2;
  int64_t plan_retries = 6;
  /// A step of a node that failed by a fault of the host (gpu::failure_kind::host_fault) runs
  /// again after this many seconds, doubling each time, at most host_fault_retries times for
  /// that node; then the task stops (task_report::stop_reason "host_fault") and the node is
  /// left as it was for the resume.
  double host_fault_retry_s = 10;
  int64_t host_fault_retries = 3;
  /// Which nodes are profiled (hardware counters and every kernel, the bench's profile job):
  /// "none", "parents" (a node when it is chosen for expansion), "improving" (a node when the
  /// judge accepts it) or "all" (every timed node). A profiled node is diagnosed from its
  /// counters; the others from their timing.
  std::string profile = "none";
  /// A node at or above this fraction of the roofline, or diagnosed at the roofline by its
  /// counters, is not expanded; 0 expands every node.
  double expand_max_fraction = 0;
  task_table_ptr tasks;
  actors::team team;
};

/// Spawns the supervisor of `setup.task`; it waits for run_task.
supervisor_actor spawn_supervisor(caf::actor_system& sys, supervisor_setup setup);

} // namespace ks::actors
