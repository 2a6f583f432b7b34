#pragma once

// What `kernelskill task new NAME --family F` writes: a manifest to start an op from, which
// `task check` accepts as it is.
//
// For a family of docs/tasks.md (op_family.hpp's table) it is a family manifest: its tensors
// made from --shape as the family reads them (the axis families act along the last dim, pool
// takes [N, C, H, W], matvec [m, k], matmul m, k, n), every param set or commented out at its
// default with what it means, and no `reference`: the reference is rendered from the
// family's template and the same params the skills write their candidates from. For
// `custom`, an op no family states, it is a manifest without a family's params beside a
// hand-written elementwise reference (a copy, y = x) with the launch parameters the offline
// planner tunes.
//
// Every family of the table needs its entry here (task_skeleton.cpp): `task new` refuses a
// family without one, naming this file, and the test "every family of the engine's table has
// a skeleton that loads" fails for it.

#include "engine/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// The family of an op that no family of docs/tasks.md states: it brings its own reference and
/// cost, and only family-independent skills (launch parameters) or a model work on it.
inline constexpr std::string_view custom_family = "custom";

/// One file of a skeleton, named relative to the folder it goes into.
struct skeleton_file {
  std::string name; ///< "gelu.toml", "gelu_ref.cu"
  std::string text;
};

/// What `task new` writes for one task.
struct task_skeleton {
  std::vector<skeleton_file> files; ///< the manifest first
  std::string what;                 ///< for people: "softmax along the last dim of x [1024, 1024]"
};

/// Lists what `task new --family` takes: every family of family_names(), then custom_family.
std::vector<std::string> skeleton_families();

/// What --shape means for one family, and the shape it takes without one.
struct skeleton_shape {
  std::string meaning; ///< "x; the op acts along its last dim"
  std::vector<int64_t> fallback;
};

/// Returns what --shape means for `family`; nullopt for a family with no skeleton.
std::optional<skeleton_shape> skeleton_shape_of(std::string_view family);

/// Returns the skeleton of the task `name` of `family` for `shape` (empty: the family's own
/// default). Fails with errc::invalid_input when `family` is neither a family of
/// family_names() nor custom_family (with the closest name), when the family has no skeleton
/// here, and when `shape` does not suit it (its rank, or a pool window that does not fit).
[[nodiscard]] expected<task_skeleton> make_task_skeleton(std::string_view name,
                                                         std::string_view family,
                                                         const std::vector<int64_t>& shape);

} // namespace ks::engine
