#include "actors/analyst_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "engine/analyst.hpp"
#include "engine/diagnosis.hpp"
#include "engine/profile_analyst.hpp"
#include "gpu/worker_protocol.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace ks::actors {

namespace {

struct analyst_state {
  task_table_ptr tasks;

  caf::result<analysis> analyze(const analyze_request& m) const {
    auto t = tasks->find(m.task);
    if (t == tasks->end())
      return make_actor_error(actor_errc::task, "the analyst knows no task '" + m.task + "'");
    std::optional<engine::kernel_usage> usage;
    if (m.usage.known)
      usage = engine::kernel_usage{m.usage.registers, m.usage.shared_bytes, m.usage.spill_stores,
                                   m.usage.spill_loads};
    engine::device_peaks peaks{m.peak_gbps, m.peak_gflops};
    // A profiled node is diagnosed from its counters (and its activity records); a profile
    // that does not decode is said in the text and the timing decides.
    std::string note;
    if (!m.profile_json.empty()) {
      auto profile = gpu::decode_profile(m.profile_json);
      if (profile)
        return analysis{
            engine::diagnose_profile(*profile, t->second.cost, peaks, m.median_ms, usage)};
      note = " (its profile was unreadable: " + profile.error().message() + ")";
    }
    auto b = engine::diagnose_bottleneck(t->second.cost, m.median_ms, peaks, usage);
    if (!b)
      return analysis{};
    engine::diagnosis d = engine::make_diagnosis(*b, usage);
    d.text += note;
    return analysis{std::move(d)};
  }
};

analyst_actor::behavior_type analyst(analyst_actor::stateful_pointer<analyst_state> self,
                                     task_table_ptr tasks) {
  self->state.tasks = std::move(tasks);
  return {
      [self](const analyze_request& m) { return self->state.analyze(m); },
  };
}

} // namespace

analyst_actor spawn_analyst(caf::actor_system& sys, task_table_ptr tasks) {
  return sys.spawn(analyst, std::move(tasks));
}

} // namespace ks::actors
