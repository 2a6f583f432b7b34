#pragma once

#include <cstdint>

namespace ks::engine {

/// Says why a bench job runs; the placement rules (bench_placement.hpp) choose its cards by
/// it. What the worker does is the job's kind (verify, time, profile...); one kind serves
/// several purposes (a time job times the reference, a branch, a parent again or a finalist).
enum class bench_purpose : int32_t {
  device = 0,         ///< start-up: a card's device info or calibration, on that card
  verify = 1,         ///< a candidate's outputs (or the reference's own) checked against the
                      ///< reference's
  reference_time = 2, ///< the reference timed: the card that times it is the task's home
  branch_time = 3,    ///< a branch's candidate timed, to be judged against its parent
  retime = 4,         ///< a parent timed again on a card a child of it is timed on
  final_round = 5,    ///< a slot of the finals' interleaved rounds
  profile = 6,        ///< a node's kernels profiled (hardware counters)
  learned_skill = 7,  ///< the distiller's check of a learned skill re-applied to its task
};

/// Returns the stable name of `p` ("device", "verify", "reference_time", ...).
const char* to_string(bench_purpose p) noexcept;

} // namespace ks::engine
