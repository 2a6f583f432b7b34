#pragma once

// Skill distillation, which no peer does: after a task found a faster kernel, the model is
// shown the winning lineage and asked for one reusable skill in the skill format (skill.toml
// with guidance, anti-patterns and a template). It joins the long-term skill memory, marked
// learned with its provenance (task, GPU, gain), only once validated:
//
//   schema     it loads as a skill (engine::load_skill), with an id the memory lacks, and has
//              a template (a skill that cannot be re-applied cannot be checked);
//   compiles   its template, rendered for the task with its first valid parameters, compiles;
//   helped     re-applied to the task, it passes verification and beats the reference by more
//              than search.min_gain, both timed on one GPU now.
//
// Anything else is answered as not stored, with the reason; nothing is retried. The actor is
// detached: the model call blocks its thread (through the gateway actor), never the scheduler.

#include "actors/fwd.hpp"
#include "actors/llm_messages.hpp"
#include "actors/team.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>
#include <string>

namespace ks::agents {
class llm_backend;
} // namespace ks::agents

namespace ks::actors {

/// Distills a skill from a task's winning lineage; see the top of the file.
using distiller_actor = caf::typed_actor<caf::replies_to<distill_task>::with<distill_result>>;

/// Everything the distiller works with.
struct distiller_setup {
  std::shared_ptr<agents::llm_backend> backend;
  task_table_ptr tasks;
  store_actor store; ///< reads the task (get_task), writes the skill (put_learned_skill)
  compiler_actor compiler;
  bench_actor bench;
  engine::skill_library_ptr skills; ///< the ids a new skill must not take
  std::string arch;                 ///< for the provenance
  std::string run;                  ///< the campaign (output folder and start), for the provenance
  double min_gain = 0.02;           ///< the gain over the reference a re-applied skill must beat
};

/// Spawns the distiller (detached).
distiller_actor spawn_distiller(caf::actor_system& sys, distiller_setup setup);

} // namespace ks::actors
