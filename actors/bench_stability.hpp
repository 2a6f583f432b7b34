#pragma once

// The bench dispatcher's side of the card-stability monitor (engine/card_stability.hpp): one
// card_monitor per GPU with what the run did about it (timings sent back to the queue,
// timings flagged), the console lines that say at once when a card turns unstable, gives up
// or is stable again, gpu_stability.json (report/gpu_stability.hpp) and the lines the
// progress display and the final summary show. No CAF here: the held results and the queue
// are the dispatcher's.

#include "actors/fwd.hpp"
#include "engine/card_stability.hpp"
#include "report/gpu_stability.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ks::actors {

/// Says how the bench dispatcher watches its cards.
struct stability_setup {
  engine::stability_options options = engine::stability_options::off(); ///< off: no probe
  std::filesystem::path file;         ///< where gpu_stability.json goes; empty: nowhere
  std::vector<std::string> gpu_names; ///< by GPU index, for people
  bool keep_prior_runs = false;       ///< a resume: the file's earlier runs stay in it
};

/// Keeps every card's monitor and says what it sees.
class stability_watch {
public:
  /// Watches `cards` cards as `setup` says, the run's clock starting at `started_unix_s`.
  stability_watch(stability_setup setup, size_t cards, double started_unix_s);

  /// Checks whether cards are probed at all.
  bool enabled() const noexcept { return setup_.options.enabled(); }

  /// Returns card `gpu`'s monitor.
  engine::card_monitor& monitor(size_t gpu) { return run_.cards[gpu].monitor; }

  /// Records what probe `event` of card `gpu` changed at `now_s`, `requeued` timing jobs
  /// having been sent back to the queue by it: says it on the console when people must know,
  /// and writes the file when it changed.
  void announce(size_t gpu, engine::stability_event event, double now_s, int64_t requeued);

  /// Records that card `gpu`'s probe failed (`why`): its monitor is off from now on.
  void probe_failed(size_t gpu, const std::string& why);

  /// Records that a timing job labelled `label` was handed on flagged from card `gpu`.
  void flag(size_t gpu, const std::string& label);

  /// Adds what the watch knows at `now_s` to `stats`: each card's trouble, the warnings and
  /// whether the results are unreliable.
  void fill(bench_stats& stats, double now_s) const;

  /// Writes gpu_stability.json as it stands (nowhere when the setup names no file).
  void write();

private:
  stability_setup setup_;
  report::stability_run run_;
  std::vector<std::string> prior_; ///< the file's earlier runs, kept by a resume
  int64_t probes_since_write_ = 0;
};

} // namespace ks::actors
