#pragma once

// Whether a folder can take our files, asked by trying: access(2) answers for the permission
// bits, which root passes whatever they say, and not for what refuses root too (a read-only
// mount, an immutable folder, a file system such as /proc that makes no files).

#include <filesystem>
#include <optional>
#include <string>

namespace ks::base {

/// Checks that a file can be created in `folder`, or where `folder` does not exist yet, in the
/// nearest folder above it that does (where it would be made): creates an unnamed temporary
/// file there and drops it, so that nothing is left behind, even when the process is killed
/// (a named one, created and removed at once, where the file system has no unnamed ones).
/// Returns why not ("/x is not a folder", "cannot create a file in /x: Read-only file
/// system"), or nullopt when it can.
std::optional<std::string> cannot_create_in(const std::filesystem::path& folder);

} // namespace ks::base
