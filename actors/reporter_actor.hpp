#pragma once

#include "actors/bench_dispatcher_actor.hpp"
#include "actors/fwd.hpp"
#include "actors/messages.hpp"
#include "actors/store_actor.hpp"
#include "actors/supervisor_actor.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

namespace ks::actors {

/// Shows a campaign's progress and keeps its outputs fresh. It asks each supervisor where its
/// task stands and the dispatcher how busy each GPU is, then, on a terminal, redraws a block at
/// the bottom of stderr every second (a headline with the tasks done, the candidates planned,
/// compiled, verified and timed, the bench jobs queued and an ETA from the budget; a line per
/// task; a line per GPU); off a terminal it writes one such headline every `interval_s` when
/// it changed. A task_report (sent by the campaign when a task ends) prints that task's result
/// at once. Every `write_interval_s`, and when a task ends, it has the store write results.json,
/// best/, report.md and report.html.
/// report_now prints and writes at once (the campaign's last report) and answers once written.
using reporter_actor = caf::typed_actor<caf::reacts_to<tick_atom>, caf::reacts_to<task_report>,
                                        caf::replies_to<report_now>::with<ack>>;

/// Everything a reporter starts with.
struct reporter_setup {
  std::vector<supervisor_actor> supervisors;
  std::vector<std::string> tasks;     ///< the supervisors' task names, in the same order
  bench_dispatcher_actor dispatcher;  ///< null in a dry run
  std::vector<std::string> gpu_names; ///< by GPU index
  store_actor store;                  ///< null in a dry run: nothing is written
  std::string output_dir;
  double interval_s = 5;        ///< progress lines off a terminal (on one: every second); 0 = none
  double write_interval_s = 30; ///< outputs; 0 = only at the end
  double wall_time_s = 0;       ///< the campaign's wall-time budget, for the ETA; 0 = none
  bool dry_run = false;         ///< the tasks are dry runs: they print their own results
};

/// Spawns a reporter; its first tick comes after one interval.
reporter_actor spawn_reporter(caf::actor_system& sys, reporter_setup setup);

} // namespace ks::actors
