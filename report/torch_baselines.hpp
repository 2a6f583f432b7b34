#pragma once

// The torch baselines of a campaign: each task's `torch` expression timed eagerly and under
// torch.compile on a GPU host by tools/torch_baselines.py, with the bench worker's method, so
// that results say how the best kernel compares with what a PyTorch user already has.
//
// The file (JSON, written by the tool; `<output>/torch-baselines.json` is a campaign's checked
// copy in the same form):
//
//   { "format": "kernelskill-torch-baselines", "version": 1,
//     "device": "NVIDIA H100 80GB HBM3",      the GPU it was measured on (cudaDeviceProp.name)
//     "torch_version": "2.11.0+cu130", "date": "2026-11-20T10:00:00Z",
//     "method": { "compile_mode": "default", ... },           how it was measured (optional)
//     "source": "/path/of/the/file/read",     only in a campaign's copy
//     "tasks": { "<task name>": {
//         "inputs": "x:f32[4096,393216]",     names, dtypes, shapes timed (optional)
//         "torch": "torch.relu(x)",           (optional)
//         "eager":   { "median_ms": 4.32, "p10_ms": 4.30, "p90_ms": 4.35, "trials": 10 }
//                  | { "error": "..." },
//         "compile": likewise,
//         "max_abs_diff_eager_compile": 0.0,  (optional; null when not comparable)
//         "error": "..."                      the task could not be timed at all (optional)
//     } } }
//
// Unknown keys are ignored (the tool records more than the engine reads). A task whose entry
// has an error, or whose `inputs` differ from the task's own (timed at other shapes), has no
// baseline: its columns show "-".
//
// A baselines file measured on another GPU than the campaign's is shown, flagged: a warning
// when the campaign starts, a note in report.md, results.json and under the final table.
// Refusing it would stop a user who compares an H200 campaign with H100 numbers on purpose;
// silently showing it would let a cross-GPU ratio pass for a same-GPU one.

#include "engine/error.hpp"
#include "engine/task.hpp"
#include "engine/timing.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::report {

/// The name of a campaign's checked copy of its baselines file, in its output folder.
inline constexpr std::string_view campaign_baselines_file = "torch-baselines.json";

/// One torch function's timing, in ms, or why there is none.
struct torch_timing {
  double median_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
  int64_t trials = 0;
  std::string error; ///< non-empty: it was not timed (the expression failed, out of memory)

  /// Checks whether there is a time to compare with.
  bool measured() const noexcept { return error.empty() && median_ms > 0; }
};

/// One task's baselines.
struct torch_baseline {
  std::string inputs; ///< "x:f32[4096,393216]": what was timed; empty when the file says not
  std::string torch;  ///< the expression timed
  torch_timing eager;
  torch_timing compiled;
  std::optional<double> max_abs_diff; ///< max |eager - compile| over the outputs
  std::string error;                  ///< non-empty: the task has no baseline (and this says why)
};

/// A whole baselines file.
struct torch_baselines {
  std::filesystem::path source; ///< the file the user named
  std::string device;           ///< the GPU it was measured on
  std::string torch_version;
  std::string date;
  std::string compile_mode; ///< torch.compile's mode; "default" when the file does not say
  std::map<std::string, torch_baseline> tasks;
};

/// Parses baselines `text` as read from `file` (named in errors, kept as `source` unless the
/// text holds one). Fails with errc::invalid_input: "FILE:LINE:COL: not valid JSON: ..." for
/// a syntax error, else one "FILE: WHERE: problem" line per problem (WHERE such as
/// tasks.relu.eager.median_ms).
[[nodiscard]] engine::expected<torch_baselines>
parse_torch_baselines(std::string_view text, const std::filesystem::path& file);

/// Reads and parses the baselines file at `file`. Fails with errc::not_found when it does not
/// exist, errc::io when it cannot be read, else as parse_torch_baselines.
[[nodiscard]] engine::expected<torch_baselines>
read_torch_baselines(const std::filesystem::path& file);

/// Reads the checked copy in a campaign's `output_dir`; nullopt when the campaign has none.
[[nodiscard]] engine::expected<std::optional<torch_baselines>>
read_campaign_baselines(const std::filesystem::path& output_dir);

/// Writes `b` into `output_dir` as the campaign's checked copy (a temporary file renamed over
/// the old one), or removes the copy when `b` is nullptr: a campaign compares with the file
/// its latest run named, never with one its config no longer names.
[[nodiscard]] engine::expected<void>
write_campaign_baselines(const std::filesystem::path& output_dir, const torch_baselines* b);

/// Returns `b` as the file's JSON text (its `source` included), which parses back to `b`.
std::string torch_baselines_json(const torch_baselines& b);

/// Returns "x:f32[4096,393216],y:f32[...]" for `specs`: the form the file's "inputs" uses.
std::string tensor_signature(const std::vector<engine::tensor_spec>& specs);

/// Drops the baseline of every task in `tasks` whose timed inputs differ from the task's,
/// turning it into an error that says so. Returns one warning line per task dropped.
std::vector<std::string> check_shapes(torch_baselines& b, const std::vector<engine::task>& tasks);

/// Returns a warning when `b` was measured on another GPU than one of `gpu_names` (the
/// campaign's), or "" when every one of them matches it (or there are none to compare).
std::string device_mismatch(const torch_baselines& b, const std::vector<std::string>& gpu_names);

/// A task's best time against its torch baselines.
struct torch_comparison {
  double eager_ms = 0;           ///< 0: no eager baseline
  double compile_ms = 0;         ///< 0: no compile baseline
  double speedup_vs_eager = 0;   ///< eager_ms / best_ms; 0: not comparable
  double speedup_vs_compile = 0; ///< compile_ms / best_ms; 0: not comparable
  /// The best kernel is slower than torch beyond the noise of both timings: its p10 (its
  /// spread scaled to best_ms) above torch's p90, the spread rule of the judge. A task that
  /// trails within the noise is not flagged: a quiet re-run could put it either side.
  bool trails_eager_beyond_noise = false;
  bool trails_compile_beyond_noise = false;
  std::string note; ///< why a column is empty: absent from the file, its error, other shapes
};

/// Compares `best_ms` (0: nothing timed yet) with task `task`'s baselines in `b` (nullptr:
/// no file, every field 0 and no note). `best_spread`, the best node's own timing, gives the
/// relative p10 of best_ms for the noise test; without it best_ms stands for its own p10.
torch_comparison compare_with_torch(const torch_baselines* b, const std::string& task,
                                    double best_ms, const engine::timing* best_spread = nullptr);

/// Returns the geometric mean of the positive values of `ratios`, or 0 when there are none.
double geometric_mean(const std::vector<double>& ratios);

} // namespace ks::report
