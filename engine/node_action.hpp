#pragma once

// The next step of a node's life, as one table. A supervisor asks it whenever a step of a
// branch ends (the forward path) and for every unfinished node of a resumed task (the resume):
// both read the same table, so a node resumed after a kill goes on exactly as it would have.
//
// A node's record says how far its life got (node_status: planned -> coded -> compiled ->
// verified -> timed -> accepted | rejected, or a failure end). The record alone does not say
// what may go on, because some of what a step made lives only in the process that made it:
// the shared object (rebuilt from the saved source, a cache hit), and the card that took the
// timing (a resumed campaign may have fewer cards). node_run_state holds those facts, and the
// table reads them beside the record:
//
//   record                       this run                          next step
//   final (is_final)             -                                 none
//   timed                        its card is here                  judge
//   timed                        its card is not, compiled         time (again)
//   timed                        its card is not, not compiled     compile
//   planned                      -                                 code
//   coded, compiled, verified    its source is not at hand         code
//   coded, compiled, verified    not compiled this run             compile
//   coded, compiled              compiled this run                 verify
//   verified (passed)            compiled this run                 time (never verified twice)
//
// So a planned node is coded; a coded, compiled or verified one is compiled again from its
// saved source and goes on from there; a timed one is only judged. Nothing final is redone.
// The table decides what comes next, not when: a supervisor that was interrupted starts no
// new job, whatever the table says.

#include "engine/search_tree.hpp"

namespace ks::engine {

/// Names a step of a node's life.
enum class node_action {
  code,    ///< ask the coder for its source
  compile, ///< build its shared object from its source
  verify,  ///< check its outputs against the reference's
  time,    ///< time it
  judge,   ///< compare its time with its parent's
  none,    ///< final: nothing more happens to it
};

/// Returns the name of `a` ("code", "compile", ...), for messages and tests.
const char* to_string(node_action a) noexcept;

/// Holds what the running process knows of a node beyond its record.
struct node_run_state {
  bool source_known = false;  ///< its source text is at hand
  bool compiled = false;      ///< its shared object was built by this process from its source
  bool card_available = true; ///< the card that gave its record's time is one this run has
};

/// Returns the next step of the node recorded as `n`, given what this run holds of it (the
/// table at the top of this file).
node_action next_action(const node_record& n, const node_run_state& run) noexcept;

} // namespace ks::engine
