// When the search profiles a node, and what the profile changes. A profile is a bench job of
// its own (gpu/worker/profiler.cpp): it never runs inside a timing, and it is asked for only
// where the config's [search] profile says so, since it costs a GPU about a second:
//
//   - "parents":   a node when the policy chooses it for expansion, just before planning;
//   - "improving": a node when the judge accepts it (and the reference before it is expanded);
//   - "all":       every node once it is timed;
//   - "none":      none; diagnoses come from the timing alone.
//
// The profile and the diagnosis the analyst draws from it are written beside the node's
// record (node_detail), so results.json carries them and a resumed campaign diagnoses the
// node again from the kept profile without a GPU. A profile that fails (the job, not the
// counters: counters the GPU refuses still give the kernels' activity records) leaves the
// timing's diagnosis and a warning; the branch goes on.
//
// The roofline: a node at or above setup.expand_max_fraction of its roofline, by its timing,
// or diagnosed at the roofline by its counters, is not expanded (exhausted, with the reason),
// unless the task's torch baseline is faster than it (engine::torch_beats).

#include "actors/actor_error.hpp"
#include "actors/supervisor_state.hpp"
#include "engine/stop_rule.hpp"
#include "gpu/profile_report.hpp"

#include <cstdio>

namespace ks::actors {

bool supervisor_state::wants_profile(engine::node_id id, profile_moment moment) const {
  const std::string& policy = setup.profile;
  if (policy.empty() || policy == "none" || profiled.count(id) > 0 || setup.team.analyst == nullptr)
    return false;
  if (!tree.contains(id) || !tree.node(id).time.measured())
    return false;
  switch (moment) {
  case profile_moment::timed:
    return policy == "all";
  case profile_moment::accepted:
    return policy == "improving";
  case profile_moment::expanding:
    // Whatever the policy, a parent not profiled yet (the reference, or a node of an earlier
    // run) is profiled before it is expanded.
    return true;
  }
  return false;
}

void supervisor_state::profile_then(engine::node_id id, std::function<void()> next) {
  profiled.insert(id);
  // Diagnoses from the profile, writes it and the diagnosis beside the record, goes on.
  auto diagnose_and_write = [this, id, next] {
    analyze_then(id, [this, id, next] { put_node_then(id, next); });
  };
  // A profile kept by an earlier run of this campaign needs no GPU.
  if (!details[id].profile_json.empty()) {
    diagnose_and_write();
    return;
  }
  std::string object = id == 0 && !reference_so.empty() ? reference_so : shared_objects[id];
  if (object.empty()) {
    // Not compiled this run (a parent of an earlier run): compile it again, a cache hit, so
    // that a resumed campaign diagnoses it as an uninterrupted one would.
    const std::string& source = source_of(tree.node(id).source_hash);
    if (source.empty()) {
      analyze_then(id, next);
      return;
    }
    request_then(
        setup.team.compiler, compile_job{label(id), source},
        [this, id, next](compile_done& r) {
          if (!r.ok) {
            analyze_then(id, next);
            return;
          }
          shared_objects[id] = r.shared_object;
          profiled.erase(id);
          profile_then(id, next);
        },
        [this](caf::error& e) { fail_task("the compile pool failed: " + describe(e)); });
    return;
  }
  base::step_timer step(id == 0 ? "reference/profile" : "branch/profile");
  engine::placement_facts facts;
  facts.timed_cards = timed_cards(id);
  bench_job job = bench_job_for(engine::bench_purpose::profile, bench_kind::profile, object,
                                label(id) + " (profile)", std::move(facts));
  request_then(
      setup.team.bench, std::move(job),
      [this, id, next, step, diagnose_and_write](bench_result& r) {
        step.done(perf);
        if (r.ok) {
          details[id].profile_json = gpu::encode_profile(r.profile());
          diagnose_and_write();
          return;
        }
        warn("cannot profile " + label(id) + " (" + r.message +
             "); its diagnosis rests on its timing");
        analyze_then(id, next);
      },
      [this, id, next](caf::error& e) {
        if (is_interrupted(e))
          interrupted = true;
        else
          warn("cannot profile " + label(id) + " (" + describe(e) +
               "); its diagnosis rests on its timing");
        analyze_then(id, next);
      });
}

std::optional<std::string> supervisor_state::roofline_reached(engine::node_id id) const {
  if (setup.expand_max_fraction <= 0)
    return std::nullopt;
  const engine::node_record& n = tree.node(id);
  auto d = diagnoses.find(id);
  bool diagnosed_at = d != diagnoses.end() && d->second.diagnosed &&
                      d->second.bound == engine::bound_kind::at_roofline;
  double fraction = n.fraction_of_roofline;
  if (d != diagnoses.end() && d->second.fraction_of_roofline > fraction)
    fraction = d->second.fraction_of_roofline;
  if (!diagnosed_at && fraction < setup.expand_max_fraction)
    return std::nullopt;
  // Torch runs the task faster: whatever the roofline says, this kernel is not at the limit.
  if (engine::torch_beats(setup.limits, n.time.median_ms))
    return std::nullopt;
  char text[160];
  if (diagnosed_at)
    std::snprintf(text, sizeof text, "%s is diagnosed at the roofline by its counters",
                  label(id).c_str());
  else
    std::snprintf(text, sizeof text, "%s reaches %.0f%% of the roofline (expand_max_fraction %.2f)",
                  label(id).c_str(), 100 * fraction, setup.expand_max_fraction);
  return std::string(text);
}

} // namespace ks::actors
