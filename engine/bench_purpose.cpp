#include "engine/bench_purpose.hpp"

#include <array>
#include <cstddef>

namespace ks::engine {

namespace {

constexpr std::array<const char*, 8> purpose_names{"device",      "verify",       "reference_time",
                                                   "branch_time", "retime",       "final_round",
                                                   "profile",     "learned_skill"};

} // namespace

const char* to_string(bench_purpose p) noexcept {
  auto index = static_cast<size_t>(p);
  return index < purpose_names.size() ? purpose_names[index] : "unknown";
}

} // namespace ks::engine
