#pragma once

// A family task's reference, rendered from its family's template: families/<family>/
// reference.cu.mustache sees the same `task.*` values as a skill's template (template_context
// .hpp), plus the partials of families/common/ ({{> abi_checks}} is common/abi_checks.cu
// .mustache). The folder is data, installed beside the skills.

#include "engine/error.hpp"
#include "engine/task.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace ks::engine {

/// Returns the folder of the families' templates: $KS_FAMILIES_DIR when set, else
/// <exe>/../share/kernelskill/families when it exists (an installed tree), else the source
/// tree's families/.
std::filesystem::path default_families_dir();

/// Returns the reference template of `family` in `dir`: dir/<family>/reference.cu.mustache.
std::filesystem::path reference_template(const std::filesystem::path& dir, std::string_view family);

/// Renders the reference of `subject`, whose derived values are set, from `dir`. Fails with
/// errc::not_found (naming the file) when the template or a partial cannot be read, with
/// errc::invalid_input on a Mustache error or a name that nothing provides.
[[nodiscard]] expected<std::string> render_family_reference(const task& subject,
                                                            const std::filesystem::path& dir);

/// Renders the partial families/common/<name>.cu.mustache of `dir` for `subject` (a graph task's
/// own argument checks are `abi_checks` rendered for the graph); fails as
/// render_family_reference does.
[[nodiscard]] expected<std::string>
render_family_partial(const task& subject, const std::filesystem::path& dir, std::string_view name);

} // namespace ks::engine
