#pragma once

// gpu_stability.json: what the card-stability monitor (engine/card_stability.hpp) saw of each
// GPU, for people and programs. The bench dispatcher writes it into the output folder when it
// first probes a card, whenever a card's trust changes, and every 30 probes; results.json
// carries it ("gpu_stability", and its lines in "warnings"), report.md and report.html show the
// warnings, and `kernelskill status` prints them. A resumed campaign keeps the runs before it.
//
//   file    := {"format": "kernelskill-gpu-stability", "version": 1, "unreliable": BOOL,
//               "runs": [RUN...]}                  unreliable: any run's is
//   RUN     := {"run": INT, "started_unix_s": REAL, "unreliable": BOOL,
//               "bounds": {"probe_interval_s": REAL, "drift": REAL, "split": REAL,
//                          "pause_s": REAL, "limit_s": REAL, "max_retimes": INT},
//               "gpus": [CARD...], "warnings": [STR...]}
//   CARD    := {"gpu": INT, "name": STR, "state": "quiet"|"suspect"|"unstable"|"unreliable"
//               |"off", "off_reason": STR, "probes": INT, "quiet_ms": REAL,
//               "last": {"at_s": REAL, "bytes": INT, "median_ms": REAL, "p10_ms": REAL,
//                        "p90_ms": REAL, "ratio": REAL, "spread": REAL} | null,
//               "episodes": [EPISODE...], "retimed": INT, "flagged": INT,
//               "flagged_labels": [STR...]}
//   EPISODE := {"condition": "drifting"|"split", "start_s": REAL, "end_s": REAL|null,
//               "worst_ratio": REAL, "worst_spread": REAL, "quiet_ms": REAL, "probes": INT,
//               "gave_up": BOOL}
//
// Times (at_s, start_s, end_s) are seconds since the run's dispatcher started; started_unix_s
// puts them on the calendar. "warnings" are the sentences the reports show, written with the
// file so that every reader says the same.

#include "engine/card_stability.hpp"
#include "engine/error.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ks::report {

/// The file's name in a campaign's output folder.
inline constexpr std::string_view gpu_stability_file = "gpu_stability.json";

/// Holds what one run saw of one card.
struct card_stability_record {
  int32_t gpu = 0;
  std::string name; ///< the device's name
  engine::card_monitor monitor;
  int64_t retimed = 0; ///< timing jobs sent back to the queue by a probe out of bounds
  int64_t flagged = 0; ///< timings handed on from a card unstable past the limit
  std::vector<std::string> flagged_labels; ///< the labels of the first 50 of them
};

/// Holds one run of a campaign as the monitor saw it.
struct stability_run {
  int64_t number = 1;        ///< 1 for the campaign's first run, 2 after its first resume, ...
  double started_unix_s = 0; ///< when the dispatcher started (its clock's zero)
  std::vector<card_stability_record> cards;

  /// Checks whether a card stayed unstable past its limit (its results are unreliable).
  bool unreliable() const;
};

/// Returns the sentences the reports show about `run`: each episode of instability (which GPU,
/// how much, when), probes that could not run, timings re-timed or flagged, and whether the
/// run's results are unreliable; none when every card stayed quiet.
std::vector<std::string> stability_warnings(const stability_run& run);

/// Returns what is wrong with `card` now, for the progress display ("unstable for 12s: its
/// probe took 1.84x its quiet time ..."); empty while it is quiet or not probed. `now_s` is on
/// the run's clock.
std::string card_stability_status(const card_stability_record& card, double now_s);

/// Returns the runs of the file at `file` as JSON texts, oldest first, to be kept by a resume;
/// none when it is absent or does not read.
std::vector<std::string> prior_stability_runs(const std::filesystem::path& file);

/// Writes the file at `file`: the `prior` runs (as prior_stability_runs read them), then
/// `run`; atomically (report/atomic_file.hpp).
[[nodiscard]] engine::expected<void> write_gpu_stability(const std::filesystem::path& file,
                                                         const std::vector<std::string>& prior,
                                                         const stability_run& run);

/// Holds what the reports need of a campaign's gpu_stability.json.
struct gpu_stability_notes {
  bool present = false;              ///< the file exists and reads
  bool unreliable = false;           ///< a run's results are unreliable
  std::vector<std::string> warnings; ///< every run's, in order
  std::string json_text;             ///< the document, as read
};

/// Reads the gpu_stability.json of the output folder `output_dir`; an absent file or one that
/// does not read gives notes that are not present.
gpu_stability_notes read_gpu_stability(const std::filesystem::path& output_dir);

/// Returns report.md's section on GPU stability: empty when there is nothing to warn of.
std::string gpu_stability_markdown(const gpu_stability_notes& notes);

} // namespace ks::report
