#pragma once

// Small text helpers every component uses: reading a whole file, within a size limit, and
// trimming white space.

#include "base/error.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ks::base {

/// The most read_text() reads unless told otherwise, in bytes: far above any file of ours
/// (results.json of a large campaign is a few MB), far below what would exhaust memory.
inline constexpr int64_t default_max_read_bytes = int64_t{256} << 20;

/// Returns the bytes of the regular file `path`; nullopt when it is not one, cannot be read,
/// or holds more than `max_bytes`.
std::optional<std::string> read_text(const std::filesystem::path& path,
                                     int64_t max_bytes = default_max_read_bytes);

/// Returns the bytes of the file `path`, called `what` in messages ("config file"): a regular
/// file, or a pipe or a device read to its end (`run <(generate)` works; a named pipe that no
/// one writes to reads as empty instead of waiting; /dev/zero is cut at `max_bytes`). Fails
/// with errc::not_found when nothing is at `path`, errc::io when it is a folder or cannot be
/// read, errc::invalid_input when it holds more than `max_bytes`; each message starts with
/// `path`.
[[nodiscard]] expected<std::string> read_file(const std::filesystem::path& path, int64_t max_bytes,
                                              std::string_view what);

/// Returns `bytes` as a person reads a size: "4 MiB", "512 KiB", "100 bytes".
std::string describe_size(int64_t bytes);

/// Returns `text` without leading and trailing white space (std::isspace in the C locale).
std::string_view trim(std::string_view text) noexcept;

} // namespace ks::base
