#include "engine/bench_memory.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ks::engine {

namespace {

int64_t bytes_of(const std::vector<tensor_spec>& tensors) {
  int64_t sum = 0;
  for (const tensor_spec& t : tensors)
    sum += t.bytes();
  return sum;
}

} // namespace

int64_t bench_memory::total() const noexcept {
  return inputs + outputs + timing_references + reference_cache + flush;
}

bench_memory bench_memory_of(const task& subject, int64_t l2_bytes) noexcept {
  int64_t in = bytes_of(subject.inputs);
  int64_t out = bytes_of(subject.outputs);
  bench_memory m;
  m.inputs = bench_input_sets * in;
  m.outputs = 2 * out;
  bool fresh =
      subject.cost.bytes > 0 && subject.cost.flops > bench_fresh_intensity * subject.cost.bytes;
  m.timing_references = fresh ? 0 : bench_input_sets * out;
  // The cache takes a whole output set while the sum stays within its budget.
  m.reference_cache = out > 0 ? (bench_reference_cache_bytes / out) * out : 0;
  m.flush = std::max(4 * l2_bytes, bench_min_flush_bytes);
  return m;
}

gpu_memory assumed_gpu_memory() {
  gpu_memory g;
  g.bytes = 80'000'000'000;
  g.l2_bytes = int64_t{50} << 20;
  g.name = "the GPU";
  g.origin = "assumed: no GPU is known here";
  g.assumed = true;
  return g;
}

std::string memory_text(int64_t bytes) {
  static constexpr const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  auto value = static_cast<double>(bytes);
  size_t unit = 0;
  while (std::abs(value) >= 999.5 && unit + 1 < std::size(units)) {
    value /= 1000;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(text, sizeof text, "%.3g %s", value, units[unit]);
  return text;
}

std::optional<std::string> memory_problem(const task& subject, const gpu_memory& gpu) {
  bench_memory m = bench_memory_of(subject, gpu.l2_bytes);
  int64_t needed = m.total() + bench_context_reserve_bytes;
  if (needed <= gpu.bytes)
    return std::nullopt;
  auto times = [](int64_t count, int64_t all) {
    return std::to_string(count) + " x " + memory_text(count > 0 ? all / count : 0);
  };
  std::string parts = "inputs " + times(bench_input_sets, m.inputs) + ", outputs " +
                      times(2, m.outputs) + " (the candidate's and the reference's)";
  if (m.timing_references > 0)
    parts += ", the reference's outputs for timing " + times(bench_input_sets, m.timing_references);
  if (m.reference_cache > 0)
    parts += ", cached reference outputs " + memory_text(m.reference_cache);
  parts += ", the L2 flush buffer " + memory_text(m.flush) + ", the CUDA context about " +
           memory_text(bench_context_reserve_bytes);
  return "the bench worker needs about " + memory_text(needed) + " of GPU memory for this task, " +
         "more than " + gpu.name + " has (" + memory_text(gpu.bytes) + ", " + gpu.origin +
         "): " + parts + ". Make the shapes smaller, or run it on a GPU with more memory";
}

} // namespace ks::engine
