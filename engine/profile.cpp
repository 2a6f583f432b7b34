// The metric list of a profile and the arithmetic on it: which metrics the worker asks for,
// how per-launch values combine into a kernel's and a call's, and the theoretical occupancy
// from a kernel's launch configuration.
//
// Combining: a count (`.sum`: bytes, instructions, nanoseconds) adds up over launches; a rate
// or ratio (throughput in percent of peak, hit rates, stall shares) is averaged with each
// launch's duration as its weight, which is what the same metric measured over the whole
// span of those launches would read, but for the gaps between them.
//
// Occupancy follows CUDA's occupancy calculator: a warp's registers are allocated in units
// of 256, warps' register files in groups of 4 warps, and the runtime reserves 1 KB of
// shared memory per block; the fewest blocks any of registers, shared memory, the block's
// warps and the per-SM block limit allow is what fits, and the one that allows it names the
// limiter.

#include "engine/profile.hpp"

#include <algorithm>
#include <cmath>

namespace ks::engine {

namespace {

const std::vector<std::string_view> reasons = {
    "long_scoreboard", "short_scoreboard",   "barrier",        "membar",       "mio_throttle",
    "lg_throttle",     "math_pipe_throttle", "wait",           "not_selected", "no_instruction",
    "drain",           "tex_throttle",       "dispatch_stall", "imc_miss",     "branch_resolving",
    "sleeping"};

std::vector<std::string> strings(std::initializer_list<std::string_view> names) {
  std::vector<std::string> out;
  for (std::string_view n : names)
    out.emplace_back(n);
  return out;
}

int64_t round_up(int64_t value, int64_t unit) {
  return unit <= 1 ? value : (value + unit - 1) / unit * unit;
}

} // namespace

const std::vector<std::string_view>& stall_reasons() {
  return reasons;
}

std::string stall_metric(std::string_view reason) {
  return std::string(metric::stall_prefix) + std::string(reason) +
         std::string(metric::stall_suffix);
}

std::vector<std::string> core_metrics() {
  using namespace metric;
  return strings({dram_read_bytes, dram_write_bytes, dram_throughput, l2_hit_rate, l2_throughput,
                  l1_hit_rate, l1_throughput, sm_throughput, achieved_occupancy, duration});
}

std::vector<std::string> profile_metrics() {
  using namespace metric;
  std::vector<std::string> out = core_metrics();
  for (std::string_view m :
       {issue_active, fma_pipe, tensor_pipe, tensor_gmma_pipe, branch_uniformity, load_efficiency,
        store_efficiency, local_load_bytes, local_store_bytes, ffma, fadd, fmul})
    out.emplace_back(m);
  for (std::string_view r : reasons)
    out.push_back(stall_metric(r));
  return out;
}

bool is_additive(std::string_view name) noexcept {
  return name.size() >= 4 && name.substr(name.size() - 4) == ".sum";
}

double profile::value(std::string_view name, double fallback) const {
  auto it = metrics.find(std::string(name));
  return it == metrics.end() ? fallback : it->second;
}

bool profile::has(std::string_view name) const {
  return metrics.count(std::string(name)) > 0;
}

occupancy_limit theoretical_occupancy(const kernel_profile& k, const device_limits& d) {
  occupancy_limit o;
  int64_t threads = k.threads_per_block();
  if (threads <= 0 || d.max_warps_per_sm <= 0)
    return o;
  int64_t warps_per_block = (threads + 31) / 32;
  o.by_blocks = d.max_blocks_per_sm;
  o.by_warps = static_cast<int32_t>(d.max_warps_per_sm / warps_per_block);

  o.by_registers = o.by_blocks;
  if (k.registers > 0) {
    if (int64_t{k.registers} * threads > d.max_registers_per_block) {
      o.by_registers = 0;
    } else {
      int64_t per_warp = round_up(int64_t{k.registers} * 32, d.register_allocation_unit);
      int64_t warps = d.registers_per_sm / per_warp;
      int64_t granularity = std::max(d.warp_allocation_granularity, 1);
      warps = warps / granularity * granularity;
      o.by_registers = static_cast<int32_t>(warps / warps_per_block);
    }
  }

  int64_t shared = k.static_shared_bytes + k.dynamic_shared_bytes;
  o.by_shared_memory = o.by_blocks;
  if (shared > d.shared_bytes_per_block_optin)
    o.by_shared_memory = 0;
  else if (shared > 0)
    o.by_shared_memory =
        static_cast<int32_t>(d.shared_bytes_per_sm / (shared + d.reserved_shared_bytes_per_block));

  o.blocks_per_sm = std::min({o.by_registers, o.by_shared_memory, o.by_warps, o.by_blocks});
  o.theoretical_pct = 100.0 * static_cast<double>(o.blocks_per_sm * warps_per_block) /
                      static_cast<double>(d.max_warps_per_sm);
  if (o.blocks_per_sm * warps_per_block >= d.max_warps_per_sm)
    o.limiter = "none";
  else if (k.registers > 0 && o.blocks_per_sm == o.by_registers)
    o.limiter = "registers";
  else if (shared > 0 && o.blocks_per_sm == o.by_shared_memory)
    o.limiter = "shared_memory";
  else if (o.blocks_per_sm == o.by_warps)
    o.limiter = "block_size";
  else
    o.limiter = "blocks";
  return o;
}

std::map<std::string, double>
combine_metrics(const std::vector<std::map<std::string, double>>& sets,
                const std::vector<double>& weights) {
  std::map<std::string, double> sums, weight_sums;
  for (size_t i = 0; i < sets.size(); ++i) {
    double w = i < weights.size() && weights[i] > 0 ? weights[i] : 0;
    for (const auto& [name, value] : sets[i]) {
      if (!std::isfinite(value))
        continue;
      if (is_additive(name)) {
        sums[name] += value;
        weight_sums[name] = 1;
      } else {
        sums[name] += w * value;
        weight_sums[name] += w;
      }
    }
  }
  std::map<std::string, double> out;
  for (const auto& [name, sum] : sums) {
    if (is_additive(name))
      out[name] = sum;
    else if (weight_sums[name] > 0)
      out[name] = sum / weight_sums[name];
  }
  // Rates of launches without a weight (no duration known): a plain mean.
  for (const auto& set : sets)
    for (const auto& [name, value] : set)
      if (!out.count(name) && !is_additive(name) && std::isfinite(value)) {
        double total = 0;
        int64_t n = 0;
        for (const auto& other : sets)
          if (auto it = other.find(name); it != other.end() && std::isfinite(it->second)) {
            total += it->second;
            ++n;
          }
        out[name] = total / static_cast<double>(n);
      }
  return out;
}

} // namespace ks::engine
