#pragma once

// Shared pieces of skill templates. A template may include a partial, `{{> name}}`, whose text
// is skills/common/name.cu.mustache beside the skill's folder (the 3xTF32 helpers of the matmul
// and conv skills, a whole template that two skills share). Reading a skill's folder brings the
// partials its templates include (and theirs) into its files, as "common/name.cu.mustache", so
// a skill keeps what it renders wherever it travels (the skill memory, an export) and its
// content hash changes with them; loading it expands them in place, so that a template's text
// is whole from then on.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// The folder, beside the skills' folders, that holds the partials.
inline constexpr std::string_view partial_folder = "common";

/// Partials include partials no deeper than this (one that includes itself stops here).
inline constexpr int partial_depth = 8;

/// Checks a partial's name: letters, digits and underscores (no path).
bool is_partial_name(std::string_view name);

/// Returns the file name under which a skill's files hold partial `name`.
std::string partial_key(std::string_view name);

/// Returns the names of the partials `text` includes, in the order of first use.
std::vector<std::string> partial_names(std::string_view text);

/// What expanding a template's partials gives: the text, or where and why it could not.
struct expanded_template {
  std::string text;
  std::optional<std::pair<size_t, std::string>> problem; ///< offset in the template, message
};

/// Returns `text` with every `{{> name}}` replaced by the text of files[partial_key(name)],
/// itself expanded. A tag alone on its line replaces the line (its indentation put before each
/// line of the partial, as mustache does); any other is replaced where it stands. A missing
/// partial, a bad name, partials nested deeper than partial_depth, more than
/// max_partial_expansions of them, or an expansion past max_template_bytes
/// (mustache_limits.hpp) is a problem at the tag.
expanded_template expand_partials(std::string_view text,
                                  const std::map<std::string, std::string>& files);

} // namespace ks::engine
