#include "actors/repairer_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "engine/agent_backend.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace ks::actors {

namespace {

struct repairer_state {
  std::shared_ptr<engine::agent_backend> backend;
  task_table_ptr tasks;

  caf::result<fix_reply> repair(fix_request& m) {
    auto t = tasks->find(m.task);
    if (t == tasks->end())
      return make_actor_error(actor_errc::task, "the repairer knows no task '" + m.task + "'");
    engine::repair_request request;
    request.subject = &t->second;
    request.plan = std::move(m.plan);
    request.source = std::move(m.source);
    request.failure_kind = std::move(m.failure_kind);
    request.error_text = std::move(m.error_text);
    request.history = std::move(m.history);
    request.node = m.node;
    auto reply = backend->repair(request);
    if (!reply)
      return to_caf_error(backend_errc(reply.error().code()), reply.error());
    return fix_reply{reply->gave_up, std::move(reply->source), std::move(reply->diagnosis),
                     std::move(reply->fix_summary)};
  }
};

repairer_actor::behavior_type repairer(repairer_actor::stateful_pointer<repairer_state> self,
                                       std::shared_ptr<engine::agent_backend> backend,
                                       task_table_ptr tasks) {
  self->state.backend = std::move(backend);
  self->state.tasks = std::move(tasks);
  return {
      [self](fix_request& m) { return self->state.repair(m); },
  };
}

} // namespace

repairer_actor spawn_repairer(caf::actor_system& sys,
                              std::shared_ptr<engine::agent_backend> backend, task_table_ptr tasks,
                              spawn_mode mode) {
  if (mode == spawn_mode::detached)
    return sys.spawn<caf::detached>(repairer, std::move(backend), std::move(tasks));
  return sys.spawn(repairer, std::move(backend), std::move(tasks));
}

} // namespace ks::actors
