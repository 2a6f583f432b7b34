#pragma once

#include "cli/command_result.hpp"

#include <string>

namespace ks::cli {

/// Checks that `arch` (an --arch value) names an architecture nvcc compiles for: sm_<digits>
/// with an optional 'a' or 'f' suffix, whose base nvcc lists in `--list-gpu-code` (when the
/// nvcc found here can list them). Returns a usage error that says what is accepted.
[[nodiscard]] command_result check_arch(const std::string& arch);

} // namespace ks::cli
