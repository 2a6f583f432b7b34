#pragma once

// The dry run of one task: everything a campaign does before it needs a GPU, once. It
// compiles the reference, asks the planner for the first expansion's plans, has the coder
// write each and compiles it, writes each candidate's source to its folder, and prints a line
// per step to stdout as it happens, the manifest's warnings first (engine/task_warnings.hpp).
// It answers run_task with a task_report whose phase is
// "failed" (with the reason in stop_text) when the task could not run: the reference does not
// compile, or the planner or the coder fails on it. A candidate that does not compile is no
// failure: the search would hand it to the repairer. A stop_msg ends it at once: nothing it
// does needs finishing, since a dry run keeps nothing but the compile cache and its folder.

#include "actors/supervisor_actor.hpp"
#include "actors/team.hpp"
#include "engine/bench_memory.hpp"

#include <caf/fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace ks::actors {

/// Everything the dry run of one task starts with.
struct dry_run_setup {
  std::string task; ///< its name in `tasks`
  task_table_ptr tasks;
  actors::team team;            ///< planners, coders and the compile pool; nothing else is used
  int64_t count = 4;            ///< plans asked for: the first expansion's branches
  std::string arch;             ///< what the compile pool compiles for, for the lines printed
  std::filesystem::path folder; ///< where the candidates' sources are written (created)
  engine::gpu_memory gpu = engine::assumed_gpu_memory(); ///< what the tensors must fit
};

/// Spawns the dry run of `setup.task`; it answers the supervisor's interface (run_task,
/// stop_msg, progress_request), so that the reporter shows it like any task.
supervisor_actor spawn_dry_run(caf::actor_system& sys, dry_run_setup setup);

} // namespace ks::actors
