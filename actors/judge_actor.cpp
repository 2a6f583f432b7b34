#include "actors/judge_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace ks::actors {

namespace {

struct judge_state {
  engine::judge_options options;

  judge_reply decide(const judge_request& request) const {
    engine::verdict v = engine::accept(request.parent, request.child, options, request.torch_ms);
    return judge_reply{v.accepted(), static_cast<int32_t>(v.evidence), v.gain, v.p_value,
                       std::move(v.reason)};
  }

  caf::result<final_reply> final(const final_request& request) const {
    auto result =
        engine::pick_winner(request.samples_ms, options, request.torch_ms, request.reference);
    if (!result)
      return to_caf_error(actor_errc::internal, result.error());
    return final_reply{result->winner, result->fastest, result->kind == engine::final_kind::tie,
                       std::move(result->timings), std::move(result->reason)};
  }
};

judge_actor::behavior_type judge(judge_actor::stateful_pointer<judge_state> self,
                                 engine::judge_options options) {
  self->state.options = options;
  return {
      [self](const judge_request& request) { return self->state.decide(request); },
      [self](const final_request& request) { return self->state.final(request); },
  };
}

} // namespace

judge_actor spawn_judge(caf::actor_system& sys, const engine::judge_options& options) {
  return sys.spawn(judge, options);
}

} // namespace ks::actors
