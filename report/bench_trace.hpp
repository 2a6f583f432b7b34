#pragma once

// The bench trace: one JSON line per bench job, written by the bench dispatcher into the
// output folder (bench_trace_file) and, with KS_BENCH_TRACE=FILE, into that file too, for
// people and for report.html's timeline. A campaign run (a start or a resume) appends a header
// line, then a line per job as it ends:
//
//   header := {"run_started_unix_s": REAL, "gpus": INT}
//   job    := {"gpu": INT, "kind": "verify"|"time"|"profile", "purpose": bench_purpose name,
//              "task": STR, "label": STR, "start_s": REAL, "end_s": REAL, "queued_ms": REAL,
//              "ok": BOOL, ["median_ms": REAL, "p10_ms": REAL, "p90_ms": REAL, "trials": INT]}
//
// A label is the supervisor's TASK#NODE, "TASK#NODE (final)" for a round of the finals, from
// which report.html reads the finalist (final_rounds_of; the test "cli: html_report" checks a
// campaign's rounds reach its report). start_s and end_s are seconds since the run's dispatcher
// started. A line that does not parse (the last one of a campaign killed while writing it) is
// skipped by the reader.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ks::report {

/// The trace's file name in a campaign's output folder.
inline constexpr std::string_view bench_trace_file = "bench-trace.jsonl";

/// One bench job of the trace.
struct trace_job {
  int32_t gpu = 0;
  std::string kind;
  std::string purpose;
  std::string task;
  std::string label;
  double start_s = 0; ///< since the run's start
  double end_s = 0;
  bool ok = true;
  double median_ms = 0; ///< a timing's median; 0 for other jobs and failed ones
};

/// The jobs of one run of a campaign.
struct trace_run {
  double started_unix_s = 0; ///< 0: the trace has no header for it (written before headers)
  int32_t gpus = 0;          ///< as the header says; 0 when it says nothing
  std::vector<trace_job> jobs;
};

/// Returns the header line of a run started at `unix_s` (seconds since the epoch) on `gpus`.
std::string trace_run_header(double unix_s, int64_t gpus);

/// Returns the runs of the trace in `path`, oldest first; none when the file does not exist.
std::vector<trace_run> read_bench_trace(const std::filesystem::path& path);

} // namespace ks::report
