#pragma once

// A campaign's output folder: which entries are a kernelskill output's, and the lock that
// keeps a second campaign (or dry run) out of it while one runs. See output_folder.cpp.

#include "base/folder_lock.hpp"
#include "engine/error.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::report {

/// Names the lock file inside an output folder.
inline constexpr std::string_view output_lock_file = ".kernelskill.lock";

/// Says whether an output folder that holds something else may be used.
enum class foreign_output { refuse, overwrite };

/// The output folder of a campaign, locked for this process.
struct output_folder {
  std::filesystem::path path;
  base::folder_lock lock;
};

/// Returns the entries of `folder` (names, sorted) that no kernelskill campaign or dry run
/// writes; empty when it holds none, or holds the lock file (a kernelskill output, whatever
/// else was put in it), or does not exist.
std::vector<std::string> foreign_entries(const std::filesystem::path& folder);

/// Returns the error that refuses `folder` when it holds entries of something else
/// (foreign_entries, a few of them named) and `foreign` is refuse; nullopt otherwise.
std::optional<engine::error> refuse_foreign(const std::filesystem::path& folder,
                                            foreign_output foreign);

/// Creates `folder` if missing and locks it for this process; `owner` goes into the lock file
/// (who holds it). Fails with invalid_input when it holds entries of something else
/// (foreign_entries) and `foreign` is refuse, naming a few; with errc::io when another process
/// holds its lock (naming that process) or it cannot be created.
[[nodiscard]] engine::expected<output_folder>
open_output_folder(const std::filesystem::path& folder, foreign_output foreign,
                   std::string_view owner);

} // namespace ks::report
