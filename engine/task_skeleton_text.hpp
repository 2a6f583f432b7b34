#pragma once

// Internal to task_skeleton*.cpp: the text helpers the skeletons are written with, and the
// custom skeleton (task_skeleton_custom.cpp).

#include "engine/task_skeleton.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine::skeleton_detail {

/// The tunables of a reference with a block size only, and with a grid cap too.
inline constexpr std::string_view threads = "KS_BLOCK_THREADS = [64, 128, 256, 512, 1024]";
inline constexpr std::string_view threads_and_blocks =
    "KS_BLOCK_THREADS = [64, 128, 256, 512, 1024], KS_MAX_BLOCKS = [1024, 4096, 16384, 1048576]";

/// Returns `values` as TOML writes an array: "[1024, 1024]".
std::string list_text(const std::vector<int64_t>& values);

/// Returns `x` as a TOML float, the shorter of two forms: "1e-5", "5e-4", "0.25", "1048576.0".
std::string toml_real(double x);

/// Returns `text` as comment lines of at most 96 columns, each starting with `lead`.
std::string comment(const std::string& text, const std::string& lead = "# ");

/// Returns the skeleton of the custom task `name` of `shape`: a manifest without a family's
/// params and a hand-written elementwise reference that copies x to y.
task_skeleton custom_skeleton(const std::string& name, const std::vector<int64_t>& shape);

} // namespace ks::engine::skeleton_detail
