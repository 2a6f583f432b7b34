#pragma once

// One process at a time in a folder: an exclusive flock(2) on a lock file inside it, held for
// the life of a folder_lock. See folder_lock.cpp.

#include "base/error.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ks::base {

/// Holds an exclusive lock on a folder until it is destroyed or its process dies.
class folder_lock {
public:
  /// Takes the lock of `folder` through its file `name` (created if missing), then writes
  /// `owner` into that file (who holds it: a pid, a command, a start time). Fails with
  /// errc::io when another process holds the lock, the message naming the folder and what the
  /// holder wrote, or when the file cannot be opened.
  [[nodiscard]] static expected<folder_lock> acquire(const std::filesystem::path& folder,
                                                     std::string_view name, std::string_view owner);

  /// Returns what the process holding the lock of `folder` (file `name`) wrote into it, when
  /// one holds it ("" when it has not written yet); nullopt when none does. Takes no lock
  /// that outlives the call and writes nothing.
  static std::optional<std::string> holder(const std::filesystem::path& folder,
                                           std::string_view name);

  /// Returns the message acquire() fails with when `holder` (what holder() returned) holds
  /// the lock of `folder`.
  static std::string busy_message(const std::filesystem::path& folder, std::string_view holder);

  folder_lock(folder_lock&& other) noexcept;
  folder_lock& operator=(folder_lock&& other) noexcept;
  folder_lock(const folder_lock&) = delete;
  folder_lock& operator=(const folder_lock&) = delete;

  /// Releases the lock (the file stays, naming its last holder).
  ~folder_lock();

private:
  explicit folder_lock(int fd) noexcept : fd_(fd) {}

  int fd_ = -1;
};

} // namespace ks::base
