#include "actors/llm_gateway_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"
#include "agents/model_client.hpp"
#include "agents/model_service.hpp"
#include "report/console.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <map>
#include <string>
#include <utility>

namespace ks::actors {

namespace console = report::console;

namespace {

struct gateway_state {
  std::shared_ptr<agents::model_service> service;
  store_actor store;          ///< keeps the transcripts; null: none kept but the files
  bool store_refused = false; ///< a transcript the store could not keep was reported
  std::map<int64_t, caf::typed_response_promise<llm_answer>> pending;
  int64_t next_ticket = 1;
};

using gateway_pointer = llm_gateway_actor::stateful_pointer<gateway_state>;

// Sends `json` to the store. The store actor takes messages in the order they came, so the
// transcript is committed before any write its answer leads to; a failure is said once (the
// file holds the transcript all the same) and the campaign goes on.
void keep_transcript(gateway_pointer self, std::string json) {
  if (self->state.store == nullptr || json.empty())
    return;
  self->request(self->state.store, caf::infinite, put_transcript{std::move(json)})
      .then([](ack) {},
            [self](caf::error& e) {
              if (std::exchange(self->state.store_refused, true))
                return;
              console::line(console::stream::err,
                            "kernelskill: warning: the store did not keep a model transcript "
                            "(its file in transcripts/ has it; the campaign goes on): " +
                                describe(e));
            });
}

llm_answer answer_of(engine::expected<agents::model_reply> r) {
  llm_answer a;
  if (r) {
    a.ok = true;
    a.reply = std::move(*r);
  } else {
    a.code = static_cast<int32_t>(r.error().code());
    a.message = r.error().message();
  }
  return a;
}

llm_gateway_actor::behavior_type
gateway(gateway_pointer self, std::shared_ptr<agents::model_service> service, store_actor store) {
  self->state.service = std::move(service);
  self->state.store = std::move(store);
  return {
      [self](llm_call& m) -> caf::result<llm_answer> {
        auto& st = self->state;
        int64_t ticket = st.next_ticket++;
        auto promise = self->make_response_promise<llm_answer>();
        st.pending.emplace(ticket, promise);
        // The service calls back on its own thread: only a message may cross to the actor,
        // and only while the actor lives (a weak address, never a strong handle, so that a
        // request left in flight does not keep a finished campaign's gateway alive).
        caf::actor_addr address = self->address();
        st.service->submit(std::move(m.request), [address, ticket](agents::request_outcome o) {
          if (auto me = caf::actor_cast<caf::actor>(address))
            caf::anon_send(
                me, llm_done{ticket, answer_of(std::move(o.result)), std::move(o.transcript_json)});
        });
        return promise;
      },
      [self](llm_done& m) {
        // Before the answer: whatever the answer leads the campaign to write comes after.
        keep_transcript(self, std::move(m.transcript_json));
        auto found = self->state.pending.find(m.ticket);
        if (found == self->state.pending.end())
          return;
        found->second.deliver(std::move(m.answer));
        self->state.pending.erase(found);
      },
      [self](const stop_msg& m) {
        self->state.service->cancel(m.reason.empty() ? "interrupted" : m.reason);
      },
      [self](const llm_stats_request&) { return llm_stats{self->state.service->stats()}; },
  };
}

/// Asks the gateway actor from a thread that may wait: a detached role actor's.
class actor_client final : public agents::model_client {
public:
  actor_client(caf::actor_system& sys, llm_gateway_actor gateway)
    : sys_(sys), gateway_(std::move(gateway)) {}

  engine::expected<agents::model_reply> complete(const agents::model_request& request) override {
    engine::expected<agents::model_reply> out =
        engine::fail(engine::errc::cancelled, "the model gateway did not answer");
    caf::scoped_actor self(sys_);
    self->request(gateway_, caf::infinite, llm_call{request})
        .receive(
            [&](llm_answer& a) {
              if (a.ok)
                out = std::move(a.reply);
              else
                out = engine::fail(static_cast<engine::errc>(a.code), std::move(a.message));
            },
            [&](caf::error& e) {
              out = engine::fail(engine::errc::cancelled,
                                 "the model gateway is gone (" + describe(e) + ")");
            });
    return out;
  }

private:
  caf::actor_system& sys_;
  llm_gateway_actor gateway_;
};

} // namespace

llm_gateway_actor spawn_llm_gateway(caf::actor_system& sys,
                                    std::shared_ptr<agents::model_service> service,
                                    store_actor store) {
  return sys.spawn(gateway, std::move(service), std::move(store));
}

std::shared_ptr<agents::model_client> gateway_client(caf::actor_system& sys,
                                                     llm_gateway_actor gateway) {
  return std::make_shared<actor_client>(sys, std::move(gateway));
}

} // namespace ks::actors
