#pragma once

// Bounds on rendering a Mustache template (kainjow's library), whose templates come from
// outside: skills a model distilled or `skills import` brought in, a user's prompt folder.
// See mustache_limits.cpp for the method and why it bounds memory and time.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ks::engine {

/// The largest template (or partial) that is parsed, in bytes; the largest of ours is 27 KB.
inline constexpr size_t max_template_bytes = size_t{256} * 1024;

/// The deepest nesting of sections ({{#a}} and {{^a}}) in one template; ours reach 3.
inline constexpr int32_t max_section_depth = 32;

/// The most a render may produce and walk, in bytes (see render_budget).
inline constexpr int64_t max_render_bytes = int64_t{64} * 1024 * 1024;

/// The most partials one render may expand (a partial that includes itself stops here).
inline constexpr int32_t max_partial_expansions = 256;

/// Checks `text` against the limits above before Mustache parses it, following its tags and
/// delimiter changes as kainjow's parser does: nullopt when within them, else the byte offset
/// of the problem and what is wrong.
std::optional<std::pair<size_t, std::string>> template_limit_error(std::string_view text);

/// Thrown by render_budget when a render goes past a limit; the renderer that owns the budget
/// catches it (it never leaves that renderer: docs/coding-guidelines.md).
struct render_limit_reached {
  std::string what;
};

/// Counts what one render may still produce. A Mustache context calls it from its hooks: each
/// lookup (get), each list item or object entered (push), each partial expanded.
class render_budget {
public:
  /// Starts the budget of a render of a template of `template_bytes` bytes.
  explicit render_budget(size_t template_bytes, int64_t limit = max_render_bytes) noexcept;

  /// Charges one hook, plus `value_bytes` for the string it found (0: none); throws
  /// render_limit_reached once the budget is spent.
  void charge(size_t value_bytes = 0);

  /// Charges a partial about to be expanded: checks `text` with template_limit_error and the
  /// count of expansions; throws render_limit_reached when either fails.
  void charge_partial(std::string_view name, std::string_view text);

  /// Returns the bytes charged so far.
  int64_t spent() const noexcept { return spent_; }

private:
  int64_t unit_;
  int64_t limit_;
  int64_t spent_ = 0;
  int32_t partials_ = 0;
};

} // namespace ks::engine
