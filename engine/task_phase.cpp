#include "engine/task_phase.hpp"

#include <array>
#include <cstddef>

namespace ks::engine {

namespace {

constexpr std::array<const char*, task_phase_count> phase_names{"pending", "searching", "finals",
                                                                "done", "failed"};

} // namespace

const char* to_string(task_phase p) noexcept {
  auto index = static_cast<size_t>(p);
  return index < phase_names.size() ? phase_names[index] : "unknown";
}

std::optional<task_phase> parse_task_phase(std::string_view name) noexcept {
  for (size_t i = 0; i < phase_names.size(); ++i)
    if (name == phase_names[i])
      return static_cast<task_phase>(i);
  return std::nullopt;
}

std::optional<task_phase> task_phase_from_number(int64_t number) noexcept {
  if (number < 0 || number >= task_phase_count)
    return std::nullopt;
  return static_cast<task_phase>(number);
}

} // namespace ks::engine
