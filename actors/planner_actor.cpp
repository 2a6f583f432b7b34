#include "actors/planner_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "engine/agent_backend.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace ks::actors {

namespace {

struct planner_state {
  std::shared_ptr<engine::agent_backend> backend;
  task_table_ptr tasks;

  caf::result<plan_reply> propose(plan_request& m) {
    auto t = tasks->find(m.task);
    if (t == tasks->end())
      return make_actor_error(actor_errc::task, "the planner knows no task '" + m.task + "'");
    engine::planning_request request;
    request.subject = &t->second;
    request.parent = m.parent;
    request.parent_lineage = std::move(m.parent_lineage);
    request.parent_source = std::move(m.parent_source);
    request.tried = std::move(m.tried);
    request.diagnosis = std::move(m.diagnosis);
    request.parent_fraction_of_roofline = m.parent_fraction_of_roofline;
    request.count = m.count;
    auto plans = backend->propose(request);
    if (!plans)
      return to_caf_error(actor_errc::backend, plans.error());
    return plan_reply{std::move(*plans)};
  }
};

planner_actor::behavior_type planner(planner_actor::stateful_pointer<planner_state> self,
                                     std::shared_ptr<engine::agent_backend> backend,
                                     task_table_ptr tasks) {
  self->state.backend = std::move(backend);
  self->state.tasks = std::move(tasks);
  return {
      [self](plan_request& m) { return self->state.propose(m); },
  };
}

} // namespace

planner_actor spawn_planner(caf::actor_system& sys, std::shared_ptr<engine::agent_backend> backend,
                            task_table_ptr tasks, spawn_mode mode) {
  if (mode == spawn_mode::detached)
    return sys.spawn<caf::detached>(planner, std::move(backend), std::move(tasks));
  return sys.spawn(planner, std::move(backend), std::move(tasks));
}

} // namespace ks::actors
