#include "actors/actor_error.hpp"

#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace ks::actors {

caf::error to_caf_error(actor_errc code, const engine::error& e) {
  return make_actor_error(code, std::string(engine::to_string(e.code())) + ": " + e.message());
}

caf::error make_actor_error(actor_errc code, std::string message) {
  return caf::error(code, std::move(message));
}

actor_errc backend_errc(engine::errc code) noexcept {
  switch (code) {
  case engine::errc::transient:
    return actor_errc::transient;
  case engine::errc::cancelled:
    return actor_errc::interrupted;
  case engine::errc::budget_spent:
    return actor_errc::budget;
  case engine::errc::bad_reply:
    return actor_errc::bad_reply;
  default:
    return actor_errc::backend;
  }
}

bool is(const caf::error& e, actor_errc code) {
  return e.category() == caf::atom("kernelskl") && e.code() == static_cast<uint8_t>(code);
}

bool is_interrupted(const caf::error& e) {
  return e.category() == caf::atom("kernelskl") &&
         e.code() == static_cast<uint8_t>(actor_errc::interrupted);
}

std::string describe(const caf::error& e) {
  if (!e)
    return "no error";
  const caf::message& context = e.context();
  for (size_t i = 0; i < context.size(); ++i)
    if (context.match_element<std::string>(i))
      return context.get_as<std::string>(i);
  if (e.category() == caf::atom("system"))
    return "actor system: " + caf::to_string(static_cast<caf::sec>(e.code()));
  return caf::to_string(e);
}

} // namespace ks::actors
