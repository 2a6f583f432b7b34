#include "engine/node_action.hpp"

namespace ks::engine {

const char* to_string(node_action a) noexcept {
  switch (a) {
  case node_action::code:
    return "code";
  case node_action::compile:
    return "compile";
  case node_action::verify:
    return "verify";
  case node_action::time:
    return "time";
  case node_action::judge:
    return "judge";
  case node_action::none:
    return "none";
  }
  return "unknown";
}

node_action next_action(const node_record& n, const node_run_state& run) noexcept {
  if (is_final(n))
    return node_action::none;
  // A timed node needs its time, not its source: it is judged, or timed again where its
  // card is gone.
  if (n.status == node_status::timed) {
    if (run.card_available)
      return node_action::judge;
    return run.compiled ? node_action::time : node_action::compile;
  }
  if (n.status == node_status::planned || !run.source_known)
    return node_action::code;
  if (!run.compiled)
    return node_action::compile;
  // Compiled this run: verified once, then timed.
  bool passed = n.status == node_status::verified && n.disposition == disposition::passed;
  return passed ? node_action::time : node_action::verify;
}

} // namespace ks::engine
