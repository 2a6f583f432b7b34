#pragma once

// Where a task's search stands, from the supervisor's first look at it to its end:
//
//   pending -> searching -> finals -> done
//                  |           |
//                  +-----------+----> failed
//
// A task goes to done through finals when it has two finalists or more, straight from
// searching when it has one. The store keeps the phase in the task's record (task_state), so
// a campaign run again leaves a task that is done or failed as it ended and searches the
// others from where they stood; a task stopped in its finals runs them again.

#include <cstdint>
#include <optional>
#include <string_view>

namespace ks::engine {

/// Says where a task's search stands. The numbers are stable ("storage order"): the store
/// keeps a task's phase by number.
enum class task_phase : int32_t {
  pending = 0,   ///< no supervisor has started it yet
  searching = 1, ///< the tree search: expansions and their branches
  finals = 2,    ///< the search stopped; the finalists are re-timed interleaved
  done = 3,      ///< a winner is declared (an end)
  failed = 4,    ///< the task cannot go on: its reference failed, the store failed... (an end)
};

/// Counts the phases; they are numbered 0 .. task_phase_count - 1.
inline constexpr int32_t task_phase_count = 5;

/// Returns the stable name of `p` ("pending", "searching", "finals", "done", "failed").
const char* to_string(task_phase p) noexcept;

/// Parses a stable name back; nullopt if unknown.
std::optional<task_phase> parse_task_phase(std::string_view name) noexcept;

/// Returns the phase numbered `number`; nullopt outside 0 .. task_phase_count - 1.
std::optional<task_phase> task_phase_from_number(int64_t number) noexcept;

/// Checks whether `p` is an end (done or failed): a campaign run again leaves the task as it is.
constexpr bool is_end(task_phase p) noexcept {
  return p == task_phase::done || p == task_phase::failed;
}

} // namespace ks::engine
