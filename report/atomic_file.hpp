#pragma once

#include "engine/error.hpp"

#include <filesystem>
#include <string>

namespace ks::report {

/// Writes `text` to `path` through a hidden temporary sibling renamed over it (rename is atomic
/// within a file system), so that a reader, or a process killed while writing, never sees half
/// a file; fails with errc::io naming the file.
[[nodiscard]] engine::expected<void> write_atomically(const std::filesystem::path& path,
                                                      const std::string& text);

} // namespace ks::report
