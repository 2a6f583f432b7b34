#include "actors/coder_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "engine/agent_backend.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace ks::actors {

namespace {

struct coder_state {
  std::shared_ptr<engine::agent_backend> backend;
  task_table_ptr tasks;

  caf::result<code_reply> write(code_request& m) {
    auto t = tasks->find(m.task);
    if (t == tasks->end())
      return make_actor_error(actor_errc::task, "the coder knows no task '" + m.task + "'");
    engine::coding_request request;
    request.subject = &t->second;
    request.plan = std::move(m.plan);
    request.lineage = std::move(m.lineage);
    request.parent_source = std::move(m.parent_source);
    request.reference_source = std::move(m.reference_source);
    request.node = m.node;
    auto source = backend->write_code(request);
    if (!source)
      return to_caf_error(backend_errc(source.error().code()), source.error());
    return code_reply{std::move(*source)};
  }
};

coder_actor::behavior_type coder(coder_actor::stateful_pointer<coder_state> self,
                                 std::shared_ptr<engine::agent_backend> backend,
                                 task_table_ptr tasks) {
  self->state.backend = std::move(backend);
  self->state.tasks = std::move(tasks);
  return {
      [self](code_request& m) { return self->state.write(m); },
  };
}

} // namespace

coder_actor spawn_coder(caf::actor_system& sys, std::shared_ptr<engine::agent_backend> backend,
                        task_table_ptr tasks, spawn_mode mode) {
  if (mode == spawn_mode::detached)
    return sys.spawn<caf::detached>(coder, std::move(backend), std::move(tasks));
  return sys.spawn(coder, std::move(backend), std::move(tasks));
}

} // namespace ks::actors
