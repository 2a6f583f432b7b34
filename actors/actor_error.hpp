#pragma once

#include "engine/error.hpp"

#include <caf/error.hpp>
#include <caf/make_message.hpp>

#include <cstdint>
#include <string>

namespace ks::actors {

/// Classifies why a request to an actor of the campaign failed; the context of the caf::error
/// holds the message. The numbers are stable.
enum class actor_errc : uint8_t {
  store = 1,       ///< the store could not read or write a record
  backend = 2,     ///< an agent backend failed (planner, coder, repairer)
  task = 3,        ///< a task is unknown to the actor's task table, or its files are unreadable
  tree = 4,        ///< the search tree refused a mutation (a broken invariant of ours)
  bench = 5,       ///< no bench actor can run the job
  internal = 6,    ///< anything else of ours
  transient = 7,   ///< an agent backend cannot answer now (rate limited, unavailable): ask later
  interrupted = 8, ///< the campaign was interrupted before the job started: redo it on resume
  bad_reply = 9,   ///< a language model's reply could not be used, even when asked again
  budget = 10,     ///< a campaign budget (model tokens, cost) is spent: no new request starts
};

/// Returns the actor_errc an agent backend's failure of `code` becomes: transient, cancelled
/// (interrupted), budget_spent and bad_reply keep their meaning; anything else is backend.
actor_errc backend_errc(engine::errc code) noexcept;

/// Checks whether `e` is of `code` (one of ours).
bool is(const caf::error& e, actor_errc code);

/// Returns a caf::error of `code` whose context holds `e`'s message, prefixed by its engine
/// code ("io: cannot open ...").
caf::error to_caf_error(actor_errc code, const engine::error& e);

/// Returns a caf::error of `code` whose context holds `message`.
caf::error make_actor_error(actor_errc code, std::string message);

/// Returns a one-line description of `e` for people: the message it carries, or its code.
std::string describe(const caf::error& e);

/// Checks whether `e` is actor_errc::interrupted: a job dropped because the campaign stopped,
/// not a failure of anything.
bool is_interrupted(const caf::error& e);

} // namespace ks::actors

CAF_ERROR_CODE_ENUM(ks::actors::actor_errc, "kernelskl")
