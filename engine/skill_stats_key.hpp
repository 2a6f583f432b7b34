#pragma once

// The key long-term memory files a skill's statistics under, besides the skill and the GPU:
// the search target's op family, and for the families whose best skill depends on the shape, its
// shape class. A matmul whose output fills the GPU with tiles and one that does not (M = N =
// 256, K = 524288: four 128 x 128 tiles for 132 SMs) want different skills: under one key, what
// wgmma wins on 8192-wide products would start a long-K product on wgmma, which runs it at 0.14x
// of torch (docs/benchmarks.md).

#include "engine/task.hpp"

#include <string>

namespace ks::engine {

/// Returns the statistics key of `subject` (a graph task: its search target's): its family, or
/// "FAMILY:CLASS" for matmul and conv, CLASS "small" when the output holds fewer 128 x 128
/// tiles than an H100 has SMs (132) and "large" otherwise.
std::string skill_stats_key(const task& subject);

} // namespace ks::engine
