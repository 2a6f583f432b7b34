#pragma once

// Small text helpers every component uses: reading a whole file, trimming white space.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ks::base {

/// Returns the bytes of the regular file `path`; nullopt when it is not one or cannot be read.
std::optional<std::string> read_text(const std::filesystem::path& path);

/// Returns `text` without leading and trailing white space (std::isspace in the C locale).
std::string_view trim(std::string_view text) noexcept;

} // namespace ks::base
