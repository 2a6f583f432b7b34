#pragma once

// The messages of the language-model side of a campaign: the gateway actor's (one model
// request, its answer, its counters), the distiller's (a task whose winner may teach a skill)
// and the store's writes of a request's transcript and of a learned skill. Included by
// messages.hpp, whose one type-ID block lists them; the inspect() overloads of agents/'s types live
// here, found by ADL, because agents/ knows nothing of CAF.

#include "agents/model_protocol.hpp"
#include "agents/model_service.hpp"
#include "memory/skill_store.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace ks::agents {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_message& x) {
  return f(caf::meta::type_name("chat_message"), x.role, x.content);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_request& x) {
  return f(caf::meta::type_name("model_request"), x.role, x.task, x.node, x.messages, x.max_tokens,
           x.temperature);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_reply& x) {
  return f(caf::meta::type_name("model_reply"), x.text, x.model, x.finish_reason, x.input_tokens,
           x.output_tokens, x.cost, x.latency_ms, x.attempts, x.transcript);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, usage_totals& x) {
  return f(caf::meta::type_name("usage_totals"), x.requests, x.input_tokens, x.output_tokens,
           x.cost);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gateway_stats& x) {
  return f(caf::meta::type_name("gateway_stats"), x.submitted, x.succeeded, x.failed, x.cancelled,
           x.refused, x.attempts, x.retries, x.in_flight, x.queued, x.total, x.by_task,
           x.budget_spent);
}

} // namespace ks::agents

namespace ks::memory {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stored_skill& x) {
  return f(caf::meta::type_name("stored_skill"), x.id, x.origin, x.version, x.content_hash,
           x.added_at, x.provenance, x.files);
}

} // namespace ks::memory

namespace ks::actors {

// -- the model gateway (llm_gateway_actor) ------------------------------------------------------

/// Asks the gateway for one model request.
struct llm_call {
  agents::model_request request;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, llm_call& x) {
  return f(caf::meta::type_name("llm_call"), x.request);
}

/// Answers llm_call: the reply, or why none came (the engine::errc number and its message).
struct llm_answer {
  bool ok = false;
  agents::model_reply reply;
  int32_t code = 0; ///< engine::errc's number when !ok
  std::string message;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, llm_answer& x) {
  return f(caf::meta::type_name("llm_answer"), x.ok, x.reply, x.code, x.message);
}

/// Tells the gateway actor, from its service's thread, that request `ticket` ended.
struct llm_done {
  int64_t ticket = 0;
  llm_answer answer;
  std::string transcript_json; ///< the request's transcript, redacted of the API key
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, llm_done& x) {
  return f(caf::meta::type_name("llm_done"), x.ticket, x.answer, x.transcript_json);
}

/// Keeps one model request's transcript in the campaign's store (store::put_transcript): its
/// JSON text, redacted of the API key, as the gateway wrote its file.
struct put_transcript {
  std::string json;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_transcript& x) {
  return f(caf::meta::type_name("put_transcript"), x.json);
}

/// Asks the gateway for its counters.
struct llm_stats_request {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, llm_stats_request&) {
  return f(caf::meta::type_name("llm_stats_request"));
}

/// Answers llm_stats_request.
struct llm_stats {
  agents::gateway_stats stats;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, llm_stats& x) {
  return f(caf::meta::type_name("llm_stats"), x.stats);
}

// -- skill distillation (distiller_actor) -------------------------------------------------------

/// Asks the distiller for a skill from the winning lineage of a task that ended.
struct distill_task {
  std::string task;
  std::string gpu_name; ///< the task's home GPU, for the prompt and the provenance
  double peak_gbps = 0;
  double peak_gflops = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, distill_task& x) {
  return f(caf::meta::type_name("distill_task"), x.task, x.gpu_name, x.peak_gbps, x.peak_gflops);
}

/// Answers distill_task: whether a skill was learned, and why (not).
struct distill_result {
  bool stored = false;
  std::string skill;  ///< the learned skill's id, when stored
  std::string reason; ///< one line for people
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, distill_result& x) {
  return f(caf::meta::type_name("distill_result"), x.stored, x.skill, x.reason);
}

/// Writes a learned skill to the long-term skill memory (memory::skill_store::import_skills).
struct put_learned_skill {
  memory::stored_skill skill;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_learned_skill& x) {
  return f(caf::meta::type_name("put_learned_skill"), x.skill);
}

} // namespace ks::actors
