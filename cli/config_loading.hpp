#pragma once

// Loading a campaign config the way every command does (`run`, `config --check`): the same
// checks, the same exit codes, the same messages.

#include "cli/command_result.hpp"
#include "config/campaign_config.hpp"

#include <tl/expected.hpp>

#include <filesystem>

namespace ks::cli {

/// Loads the campaign config at `path`. Fails with a usage error (1) when the file does not
/// exist or cannot be read (it was named on the command line), and with a task error (2) whose
/// message holds one FILE:LINE:COL line per problem when it is invalid, or when it does not
/// set campaign.tasks: a campaign must say which tasks it optimizes (the default suite is no
/// sensible guess for a config written elsewhere).
[[nodiscard]] tl::expected<config::campaign_config, command_error>
load_config_for_command(const std::filesystem::path& path);

/// Returns a hint for a TOML file given where the other kind was expected: "`path` looks like a
/// task manifest ..." when `expected` is "config" and the file sets a task's keys (name,
/// reference, inputs), or the reverse for `expected` == "task"; empty otherwise.
std::string other_kind_hint(const std::filesystem::path& path, const std::string& expected);

} // namespace ks::cli
