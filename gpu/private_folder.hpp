#pragma once

// A folder that belongs to one child process (the bench worker): its working directory and
// TMPDIR, so that whatever a candidate writes lands in a place that is removed with the
// worker. The folder is named `<prefix><owner pid>-XXXXXX` and locked (flock on the folder)
// by the process that made it for as long as it exists; a folder that is unlocked and whose
// owner pid is dead is a leftover of an engine that was killed, and sweep_private_folders
// removes it. Both tests are needed: the lock alone would let a sweep remove a folder in the
// instant between its mkdtemp and its flock, and the pid alone is wrong across pid namespaces
// (containers sharing /tmp) and after pid reuse.

#include "engine/error.hpp"

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace ks::gpu {

/// Owns a fresh folder and removes it, with everything in it, when dropped. Move-only.
class private_folder {
public:
  private_folder() = default;
  private_folder(const private_folder&) = delete;
  private_folder& operator=(const private_folder&) = delete;
  private_folder(private_folder&& other) noexcept;
  private_folder& operator=(private_folder&& other) noexcept;

  /// Removes the folder, if it still exists.
  ~private_folder();

  /// Makes `<parent>/<prefix><getpid()>-XXXXXX` (mode 0700) and locks it. Fails with
  /// errc::io naming `parent` when it cannot be made.
  [[nodiscard]] static engine::expected<private_folder> create(const std::filesystem::path& parent,
                                                               std::string_view prefix);

  /// Returns the folder's path, or an empty path once removed (or never made).
  const std::filesystem::path& path() const noexcept { return path_; }

  /// Checks whether this object owns a folder.
  explicit operator bool() const noexcept { return !path_.empty(); }

  /// Removes the folder and everything in it now; does nothing when it owns none. Symbolic
  /// links inside are removed, never followed.
  void remove() noexcept;

private:
  std::filesystem::path path_;
  int lock_fd_ = -1;
};

/// Removes the folders `<parent>/<prefix><pid>-*` of our user whose pid is dead and that no
/// process holds locked: what engines that were killed left behind. Returns how many were
/// removed. Never fails: a folder it cannot remove is left for the next sweep.
int64_t sweep_private_folders(const std::filesystem::path& parent, std::string_view prefix);

/// Returns $TMPDIR when it names an existing folder, else /tmp.
std::filesystem::path default_temp_root();

} // namespace ks::gpu
