#include "engine/skill_stats_key.hpp"

#include <cstdint>
#include <variant>

namespace ks::engine {

namespace {

/// Returns derived integer `name` of `t`, or 0 when it has none.
int64_t derived_integer(const task& t, const std::string& name) {
  auto it = t.derived.scalars.find(name);
  const auto* v = it == t.derived.scalars.end() ? nullptr : std::get_if<int64_t>(&it->second);
  return v == nullptr ? 0 : *v;
}

/// The tiles of the output, viewed as a [rows, cols] product, that one wave of an H100 fills.
constexpr double wave_tiles = 132;
constexpr double tile = 128.0 * 128.0;

} // namespace

std::string skill_stats_key(const task& subject) {
  const task& t = search_target(subject);
  double rows = 0, cols = 0;
  if (t.family == "matmul") {
    rows = static_cast<double>(derived_integer(t, "batch")) *
           static_cast<double>(derived_integer(t, "m"));
    cols = static_cast<double>(derived_integer(t, "n"));
  } else if (t.family == "conv") {
    // The implicit GEMM's output: batch x out_spatial rows by out_channels columns.
    rows = static_cast<double>(derived_integer(t, "batch")) *
           static_cast<double>(derived_integer(t, "out_spatial"));
    cols = static_cast<double>(derived_integer(t, "out_channels"));
  } else {
    return t.family;
  }
  return t.family + (rows * cols < wave_tiles * tile ? ":small" : ":large");
}

} // namespace ks::engine
