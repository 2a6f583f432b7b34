#include "actors/planner_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "engine/agent_backend.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <fstream>
#include <iterator>

namespace ks::actors {

namespace {

struct planner_state {
  std::shared_ptr<engine::agent_backend> backend;
  task_table_ptr tasks;
  engine::skill_library_ptr skills;
  engine::retrieval_rules rules;

  caf::result<plan_reply> propose(plan_request& m) {
    auto t = tasks->find(m.task);
    if (t == tasks->end())
      return make_actor_error(actor_errc::task, "the planner knows no task '" + m.task + "'");
    engine::planning_request request;
    request.subject = &t->second;
    request.parent = m.parent;
    request.parent_lineage = std::move(m.parent_lineage);
    request.parent_source = std::move(m.parent_source);
    request.reference_source = std::move(m.reference_source);
    // The reference gives the defaults of the task's tunables: read it when not sent.
    if (request.reference_source.empty())
      if (auto source = engine::read_reference(t->second))
        request.reference_source = std::move(*source);
    request.tried = std::move(m.tried);
    request.branch = std::move(m.branch);
    request.in_tree = std::move(m.in_tree);
    request.diagnosis = std::move(m.diagnosis);
    request.skills = std::move(m.skills);
    if (request.skills.empty() && skills)
      request.skills = engine::retrieve(*skills, t->second, &request.diagnosis,
                                        request.reference_source, m.stats, rules);
    request.parent_fraction_of_roofline = m.parent_fraction_of_roofline;
    request.count = m.count;
    request.parent_time = std::move(m.parent_time);
    request.gpu_name = std::move(m.gpu_name);
    request.peak_gbps = m.peak_gbps;
    request.peak_gflops = m.peak_gflops;
    auto plans = backend->propose(request);
    if (!plans)
      return to_caf_error(backend_errc(plans.error().code()), plans.error());
    return plan_reply{std::move(*plans)};
  }
};

planner_actor::behavior_type planner(planner_actor::stateful_pointer<planner_state> self,
                                     std::shared_ptr<engine::agent_backend> backend,
                                     task_table_ptr tasks, engine::skill_library_ptr skills,
                                     engine::retrieval_rules rules) {
  self->state.backend = std::move(backend);
  self->state.tasks = std::move(tasks);
  self->state.skills = std::move(skills);
  self->state.rules = rules;
  return {
      [self](plan_request& m) { return self->state.propose(m); },
  };
}

} // namespace

planner_actor spawn_planner(caf::actor_system& sys, std::shared_ptr<engine::agent_backend> backend,
                            task_table_ptr tasks, spawn_mode mode, engine::skill_library_ptr skills,
                            engine::retrieval_rules rules) {
  if (mode == spawn_mode::detached)
    return sys.spawn<caf::detached>(planner, std::move(backend), std::move(tasks),
                                    std::move(skills), rules);
  return sys.spawn(planner, std::move(backend), std::move(tasks), std::move(skills), rules);
}

} // namespace ks::actors
