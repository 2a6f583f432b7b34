#pragma once

#include <string>

namespace ks::cli {

/// Returns what `kernelskill --version` prints: the version and commit it was built from, the
/// CUDA toolkit it was built with, the nvcc it would compile with here, and the default
/// architecture, one per line.
std::string version_text();

/// Returns the first line of version_text(): "kernelskill VERSION (commit COMMIT)".
std::string version_line();

} // namespace ks::cli
