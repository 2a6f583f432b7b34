#pragma once

// A bench that answers from recorded measurements instead of a GPU (kernel_tuner's simulation
// runner), so that search policies, the stop rule and, later, whole campaigns through the
// actors can be tested in milliseconds on any machine. A recording maps a lineage (the plans
// from the reference down to a node, as search_tree::lineage returns them, the reference's
// plan first) to what measuring that node gives: a true median time and a noise level, or a
// failure (compile error, wrong result, crash, hang).
//
// Timed answers draw `trials` samples median * exp(noise * z), z standard normal, so their
// median scatters around the recorded one as a real GPU's would. The noise is deterministic:
// the generator is seeded from the bench's seed, the lineage's canonical key and how many
// times that lineage was measured before, so a test run is reproducible, a re-timing (a
// final) gets fresh samples, and the answers for one lineage do not depend on the order in
// which other lineages were asked for.

#include "engine/error.hpp"
#include "engine/plan.hpp"
#include "engine/search_tree.hpp"
#include "engine/timing.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ks::engine {

/// Names what measuring a recorded node gives. The numbers are stable ("storage order").
enum class replay_outcome : int32_t {
  timed = 0,          ///< correct, timed
  compile_failed = 1, ///< nvcc rejects it
  incorrect = 2,      ///< it runs, but its outputs are wrong
  crashed = 3,        ///< the worker dies
  timed_out = 4,      ///< it hangs past the watchdog
};

/// Records what measuring one node gives.
struct recorded_result {
  replay_outcome outcome = replay_outcome::timed;
  double median_ms = 0; ///< the true median (timed only)
  double noise = 0.01;  ///< spread: sigma of the log of a sample (0.01 = about 1%)
};

/// Holds a replayed measurement, in the terms a node_record uses.
struct replay_answer {
  node_status status = node_status::timed; ///< timed, compile_failed, verified, crashed or
                                           ///< timed_out
  engine::disposition disposition = engine::disposition::not_verified;
  std::string failure_kind; ///< gpu::failure_kind's stable name; empty when timed
  timing time;              ///< with its samples; trials == 0 unless timed
  double fraction_of_roofline = 0;
};

/// Answers measurements from a recorded table; see the top of the file.
class replay_bench {
public:
  /// Creates an empty bench whose noise derives from `seed`, that draws `trials` samples per
  /// measurement, and that reports fraction_of_roofline = roofline_floor_ms / median (0 if the
  /// floor is 0).
  explicit replay_bench(uint64_t seed, int64_t trials = 30, double roofline_floor_ms = 0);

  /// Records `result` for the node reached by `lineage` (the reference's plan first),
  /// replacing an earlier recording of the same lineage (by plan_key).
  void record(std::vector<plan> lineage, recorded_result result);

  /// Returns the plans recorded one step below `parent_lineage`, in the order recorded.
  std::vector<plan> recorded_plans(const std::vector<plan>& parent_lineage) const;

  /// Returns the measurement of the node reached by `lineage`. Fails with not_found if that
  /// lineage was not recorded.
  [[nodiscard]] expected<replay_answer> measure(const std::vector<plan>& lineage);

  /// Returns `count` fresh timing samples in ms of the node reached by `lineage`, as one slot
  /// of an interleaved final gives. Fails with not_found if it was not recorded, and with
  /// invalid_input if it was recorded as a failure.
  [[nodiscard]] expected<std::vector<double>> samples(const std::vector<plan>& lineage,
                                                      int64_t count);

  /// Returns the lineage recorded with the smallest median among timed recordings; nullopt if
  /// none is timed.
  std::optional<std::vector<plan>> recorded_best() const;

  /// Returns how many times measure() and samples() answered.
  int64_t requests() const noexcept { return requests_; }

private:
  struct entry {
    std::vector<plan> lineage;
    recorded_result result;
    int64_t times_asked = 0;
  };

  entry* find(const std::vector<plan>& lineage);
  std::vector<double> draw(entry& e, int64_t count);

  uint64_t seed_;
  int64_t trials_;
  double roofline_floor_ms_;
  std::vector<entry> entries_;
  std::map<std::string, size_t> index_; // lineage key -> entries_ index
  int64_t requests_ = 0;
};

/// Returns the canonical key of `lineage`: its plan_keys joined by " / ".
std::string lineage_key(const std::vector<plan>& lineage);

} // namespace ks::engine
