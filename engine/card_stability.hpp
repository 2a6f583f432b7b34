#pragma once

// Whether a GPU's timings can be trusted right now: the card-stability monitor. Users run on
// shared, throttling, busy cards, where another process's kernels take time slices from ours or
// the clocks drop for seconds at a time; on one H100 a kernel's median moved by up to 2.6x
// between consecutive rounds of its finals without a word. A timing alone cannot tell: a slow
// candidate and a slowed card look the same. So every card is probed through the campaign with
// a kernel whose cost is known and does not change, and its timings are trusted only while the
// probe says the card is as it was.
//
// The probe (the bench worker's "probe" job, gpu/worker/calibration.cu): a float4 grid-stride
// copy between two buffers of four times the L2 (64 to 256 MiB each), 32 copies queued back to
// back after a warm-up of at least 10 ms, in four windows of eight between CUDA events (a window
// holds another context's ~2.5 ms time slice; one copy rarely does). A copy, not the reference:
// the same on every card and task, no compile, a known cost; and a copy barely depends on the
// SM clock, so a quiet card's own load (a hot matmul just before) does not move it; on a
// quiet H100 its median moves by about 1% between probes. What does move it is what makes other
// timings wrong: another context's time slices (the samples wait for them), bandwidth taken by
// another process, a card throttled hard enough to slow its memory system.
//
// The rules (assess_probe), each bound ten times the quiet noise:
//
//   drifting  the probe's median is more than drift_bound (10%) above the card's quiet level:
//             the lowest median of the card's earlier probes of the same size (a disturbed card
//             only makes a copy slower, so the fastest probe is the quiet one);
//   split     the probe's p90 is more than split_bound (10%) above its p10: its samples fell
//             into two levels (some waited for another context's time slice, some did not).
//
// A card's trust (card_monitor) moves through four states on each probe:
//
//   quiet -> suspect      one probe out of bounds: the next probe runs at once, before any job
//   suspect -> quiet      it was within bounds: a false alarm (a cold clock), nothing is said
//   suspect -> unstable   two probes in a row out of bounds: said at once; timing jobs on the
//                         card wait, and it is probed again every pause_s
//   unstable -> quiet     a probe within bounds: the card is stable again, said
//   unstable -> unreliable  still unstable limit_s after the episode began: said; its timings
//                         run again, each flagged, and the campaign's results are unreliable
//   unreliable -> quiet   a probe within bounds
//
// A timing is trusted only when a quiet probe follows it: while a card is quiet, the result
// of each timing job waits (held by the dispatcher) for the card's next probe; a probe within
// bounds hands the held results on, one out of bounds sends their jobs back to the queue, to
// be timed again once the card is quiet (at most max_retimes times; then flagged). When a probe
// is due (probe_due) bounds the cost: a working card is probed before a timing job when the last
// probe is older than probe_interval_s, and after timing jobs when it runs out of work or the
// interval has passed; an unstable card every pause_s. At 2 s and about 15 ms a probe (the
// worker's round trip included), that is under 1% of a busy card's time.
//
// Everything here is a pure function of the readings and the caller's clock (seconds on any
// monotonic clock), tested without a GPU; the bench dispatcher owns one card_monitor per card.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ks::engine {

/// Sets when a card counts as unstable and how its monitor reacts (bench.stability_* in the
/// campaign config).
struct stability_options {
  double probe_interval_s = 2; ///< a working card is probed at most this often; 0: never
  double drift_bound = 0.10;   ///< a probe median this far above the card's quiet level
  double split_bound = 0.10;   ///< a probe's p90 this far above its p10
  double pause_s = 5;          ///< an unstable card is probed again after this many seconds
  double limit_s = 60;         ///< unstable this long in one stretch: its timings run, flagged
  int64_t max_retimes = 3;     ///< a job re-timed this often is handed on flagged

  /// Returns options with the monitor turned off (no probe ever runs).
  static stability_options off() noexcept {
    stability_options o;
    o.probe_interval_s = 0;
    return o;
  }

  /// Checks whether cards are probed at all.
  bool enabled() const noexcept { return probe_interval_s > 0; }

  friend bool operator==(const stability_options&, const stability_options&) = default;
};

/// Holds one probe's timing, in milliseconds.
struct probe_reading {
  double at_s = 0;   ///< when it ended, in seconds on the monitor's clock
  int64_t bytes = 0; ///< the size of each buffer copied: only probes of one size compare
  double median_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;

  friend bool operator==(const probe_reading&, const probe_reading&) = default;
};

/// Names what a probe says of its card. The numbers are stable ("storage order").
enum class card_condition : int32_t {
  stable = 0,   ///< within both bounds
  drifting = 1, ///< its median is beyond drift_bound above the card's quiet level
  split = 2,    ///< its p90 is beyond split_bound above its p10
};

/// The names of card_condition, by number.
inline constexpr std::array<const char*, 3> card_condition_names{"stable", "drifting", "split"};

/// Returns the stable name of `c` ("stable", "drifting", "split").
const char* to_string(card_condition c) noexcept;

/// Holds what a probe says, and by how much.
struct probe_assessment {
  card_condition condition = card_condition::stable;
  double quiet_ms = 0; ///< the card's quiet level for the probe's size (its own median if lower)
  double ratio = 1;    ///< the probe's median over quiet_ms
  double spread = 1;   ///< the probe's p90 over its p10
  std::string text;    ///< for people: "its probe took 1.84x its quiet time (0.312 ms against
                       ///< 0.170 ms)"; empty when stable
};

/// Returns what `probe` says of its card, given `quiet_ms`, the lowest median of the card's
/// earlier probes of the same size (0 or less: none). A probe that is both is `split` (the
/// more specific); one without a positive median is stable (nothing to judge).
probe_assessment assess_probe(const probe_reading& probe, double quiet_ms,
                              const stability_options& options);

/// Names how far a card's timings are trusted. The numbers are stable ("storage order").
enum class card_trust : int32_t {
  quiet = 0,      ///< timings trusted once a probe within bounds follows them
  suspect = 1,    ///< one probe out of bounds: a second one runs at once
  unstable = 2,   ///< two in a row: timing jobs wait for a quiet probe
  unreliable = 3, ///< unstable past limit_s: timings run, flagged
};

/// The names of card_trust, by number.
inline constexpr std::array<const char*, 4> card_trust_names{"quiet", "suspect", "unstable",
                                                             "unreliable"};

/// Returns the stable name of `t` ("quiet", "suspect", "unstable", "unreliable").
const char* to_string(card_trust t) noexcept;

/// Names what a probe changed (card_monitor::record).
enum class stability_event : int32_t {
  none = 0,           ///< quiet and within bounds: held timings stand
  suspect = 1,        ///< one probe out of bounds: held timings wait for the next probe
  false_alarm = 2,    ///< the next was within bounds: held timings are timed again, nothing said
  unstable = 3,       ///< two in a row: said; held timings are timed again later
  still_unstable = 4, ///< still out of bounds
  gave_up = 5,        ///< unstable past limit_s: said; timings now run, flagged
  recovered = 6,      ///< within bounds after an episode: said
};

/// Holds one stretch of instability of a card.
struct instability_episode {
  card_condition condition = card_condition::drifting; ///< what its first probe said
  double start_s = 0;      ///< its first probe out of bounds, on the monitor's clock
  double end_s = -1;       ///< the probe within bounds that ended it; -1: still going on
  double worst_ratio = 1;  ///< the highest probe median over the quiet level in it
  double worst_spread = 1; ///< the highest p90 over p10 in it
  double quiet_ms = 0;     ///< the quiet level it was measured against
  int64_t probes = 0;      ///< its probes out of bounds
  bool gave_up = false;    ///< it lasted past limit_s

  friend bool operator==(const instability_episode&, const instability_episode&) = default;
};

/// Says what would run next on a card, for probe_due.
enum class card_next : int32_t {
  idle = 0,   ///< nothing: the card would idle
  timing = 1, ///< a timing job
  other = 2,  ///< another job (verify, profile, ...)
};

/// Keeps one card's probes and decides, from them, when to probe it and how far to trust its
/// timings (see the top of the file).
class card_monitor {
public:
  /// Makes the monitor of a card never probed yet.
  explicit card_monitor(stability_options options = {});

  // -- decisions -----------------------------------------------------------------------------

  /// Checks whether a probe must run on the card now, at `now_s`, before what would run next
  /// (`next`), while `holding` timing results wait for a probe.
  bool probe_due(double now_s, bool holding, card_next next) const noexcept;

  /// Takes a probe's reading, and returns what it changed.
  stability_event record(const probe_reading& probe);

  /// Turns the monitor off for good (the probe could not run: `why`): nothing is held, paused
  /// or flagged on the card any more.
  void turn_off(std::string why);

  // -- properties ----------------------------------------------------------------------------

  /// Returns how far the card's timings are trusted now.
  card_trust trust() const noexcept { return trust_; }

  /// Checks whether the monitor was turned off, and why.
  bool off() const noexcept { return off_ || !options_.enabled(); }
  const std::string& off_reason() const noexcept { return off_reason_; }

  /// Checks whether a timing job may not start on the card now (suspect or unstable).
  bool pauses_timing() const noexcept {
    return !off() && (trust_ == card_trust::suspect || trust_ == card_trust::unstable);
  }

  /// Checks whether a timing result must wait for the card's next probe (quiet).
  bool holds_results() const noexcept { return !off() && trust_ == card_trust::quiet; }

  /// Checks whether a timing result is handed on flagged (unreliable).
  bool flags_results() const noexcept { return !off() && trust_ == card_trust::unreliable; }

  /// Returns the options it decides by.
  const stability_options& options() const noexcept { return options_; }

  /// Returns how many probes it took, the last one and what it said.
  int64_t probes() const noexcept { return probes_; }
  const probe_reading& last() const noexcept { return last_; }
  const probe_assessment& last_assessment() const noexcept { return assessment_; }

  /// Returns the card's quiet level for probes of `bytes` (0 when none was taken).
  double quiet_ms(int64_t bytes) const;

  /// Returns its episodes of instability, oldest first (the last one may go on).
  const std::vector<instability_episode>& episodes() const noexcept { return episodes_; }

private:
  stability_options options_;
  card_trust trust_ = card_trust::quiet;
  bool off_ = false;
  std::string off_reason_;
  int64_t probes_ = 0;
  probe_reading last_;
  probe_assessment assessment_;
  probe_reading suspect_;           ///< the probe that made the card suspect
  probe_assessment suspect_as_;     ///< what it said
  std::map<int64_t, double> quiet_; ///< the lowest median, by probe size
  std::vector<instability_episode> episodes_;
};

} // namespace ks::engine
