#pragma once

// The campaign's one model gateway (DESIGN.md's "llm gateway"): an event-based actor that
// holds the model service (agents/model_service.hpp) and answers every role's requests
// through it. It never blocks: a request is handed to the service, whose own thread does the
// HTTP (curl's multi interface), and the outcome comes back as a message (llm_done) from that
// thread; the actor then answers the request it kept a promise for. So 64 requests in flight
// cost the scheduler nothing but two messages each, and other actors' messages are not held
// up (benchmarks/llm_gateway_bench.cpp measures it).
//
// A stop_msg (Ctrl-C) cancels every request queued or in flight: each is answered at once
// with errc::cancelled. Budgets, retries, the concurrency limit and transcripts are the
// service's; llm_stats_request reads its counters (the campaign's budget check, the reports).
//
// Transcripts: the service writes each request's file and hands its text (redacted of the
// API key) back with the outcome; given the campaign's store actor, the gateway sends that
// text there (put_transcript) before it answers the request, so every request, answered,
// failed, cancelled or refused, is kept in the store too, and before anything its answer
// leads to is written. A transcript the store cannot keep costs a warning, never the campaign.

#include "actors/fwd.hpp"
#include "actors/llm_messages.hpp"
#include "actors/store_actor.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>

namespace ks::agents {
class model_client;
class model_service;
} // namespace ks::agents

namespace ks::actors {

struct stop_msg;

/// Sends model requests through the campaign's model service; see the top of the file.
using llm_gateway_actor =
    caf::typed_actor<caf::replies_to<llm_call>::with<llm_answer>, caf::reacts_to<llm_done>,
                     caf::reacts_to<stop_msg>, caf::replies_to<llm_stats_request>::with<llm_stats>>;

/// Spawns the gateway around `service` (event-based: it never blocks); it keeps every
/// request's transcript in `store` unless that is a null handle (a dry run keeps no state).
llm_gateway_actor spawn_llm_gateway(caf::actor_system& sys,
                                    std::shared_ptr<agents::model_service> service,
                                    store_actor store = {});

/// Returns a model client that asks `gateway` and waits for the answer on the caller's
/// thread: for the agents' backends, which run in detached role actors. A gateway that is
/// gone answers errc::cancelled.
std::shared_ptr<agents::model_client> gateway_client(caf::actor_system& sys,
                                                     llm_gateway_actor gateway);

} // namespace ks::actors
