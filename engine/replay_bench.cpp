#include "engine/replay_bench.hpp"

#include <cmath>
#include <numbers>
#include <utility>

namespace ks::engine {

namespace {

// FNV-1a: std::hash may differ between standard libraries, and recorded tests must not.
uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

// splitmix64: small, fast, and good enough to drive test noise.
uint64_t next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A uniform double in (0, 1): never 0, so that log() below is finite.
double uniform(uint64_t& state) {
  return (static_cast<double>(next(state) >> 11) + 0.5) * 0x1.0p-53;
}

double standard_normal(uint64_t& state) {
  double u1 = uniform(state);
  double u2 = uniform(state);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

} // namespace

std::string lineage_key(const std::vector<plan>& lineage) {
  std::string key;
  for (const plan& p : lineage) {
    if (!key.empty())
      key += " / ";
    key += plan_key(p);
  }
  return key;
}

replay_bench::replay_bench(uint64_t seed, int64_t trials, double roofline_floor_ms)
  : seed_(seed), trials_(trials < 1 ? 1 : trials), roofline_floor_ms_(roofline_floor_ms) {}

void replay_bench::record(std::vector<plan> lineage, recorded_result result) {
  std::string key = lineage_key(lineage);
  if (auto found = index_.find(key); found != index_.end()) {
    entries_[found->second] = entry{std::move(lineage), result, 0};
    return;
  }
  index_.emplace(std::move(key), entries_.size());
  entries_.push_back(entry{std::move(lineage), result, 0});
}

std::vector<plan> replay_bench::recorded_plans(const std::vector<plan>& parent_lineage) const {
  std::string parent = lineage_key(parent_lineage);
  std::vector<plan> plans;
  for (const entry& e : entries_) {
    if (e.lineage.size() != parent_lineage.size() + 1)
      continue;
    std::vector<plan> prefix(e.lineage.begin(), e.lineage.end() - 1);
    if (lineage_key(prefix) == parent)
      plans.push_back(e.lineage.back());
  }
  return plans;
}

replay_bench::entry* replay_bench::find(const std::vector<plan>& lineage) {
  auto found = index_.find(lineage_key(lineage));
  return found == index_.end() ? nullptr : &entries_[found->second];
}

std::vector<double> replay_bench::draw(entry& e, int64_t count) {
  uint64_t state = seed_ ^ fnv1a(lineage_key(e.lineage)) ^
                   (static_cast<uint64_t>(e.times_asked++) * 0xd1b54a32d192ed03ull);
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    samples.push_back(e.result.median_ms * std::exp(e.result.noise * standard_normal(state)));
  return samples;
}

expected<replay_answer> replay_bench::measure(const std::vector<plan>& lineage) {
  entry* e = find(lineage);
  if (e == nullptr)
    return fail(errc::not_found, "no recording for " + lineage_key(lineage));
  ++requests_;
  replay_answer answer;
  switch (e->result.outcome) {
  case replay_outcome::timed:
    answer.status = node_status::timed;
    answer.disposition = disposition::passed;
    answer.time = summarize(draw(*e, trials_));
    if (roofline_floor_ms_ > 0)
      answer.fraction_of_roofline = roofline_floor_ms_ / answer.time.median_ms;
    break;
  case replay_outcome::compile_failed:
    answer.status = node_status::compile_failed;
    answer.failure_kind = "compile_error";
    break;
  case replay_outcome::incorrect:
    answer.status = node_status::verified;
    answer.disposition = disposition::incorrect;
    answer.failure_kind = "wrong_result";
    break;
  case replay_outcome::crashed:
    answer.status = node_status::crashed;
    answer.failure_kind = "crash";
    break;
  case replay_outcome::timed_out:
    answer.status = node_status::timed_out;
    answer.failure_kind = "timeout";
    break;
  }
  return answer;
}

expected<std::vector<double>> replay_bench::samples(const std::vector<plan>& lineage,
                                                    int64_t count) {
  entry* e = find(lineage);
  if (e == nullptr)
    return fail(errc::not_found, "no recording for " + lineage_key(lineage));
  if (e->result.outcome != replay_outcome::timed)
    return fail(errc::invalid_input, lineage_key(lineage) + " was recorded as a failure");
  ++requests_;
  return draw(*e, count < 1 ? 1 : count);
}

std::optional<std::vector<plan>> replay_bench::recorded_best() const {
  const entry* best = nullptr;
  for (const entry& e : entries_)
    if (e.result.outcome == replay_outcome::timed &&
        (best == nullptr || e.result.median_ms < best->result.median_ms))
      best = &e;
  if (best == nullptr)
    return std::nullopt;
  return best->lineage;
}

} // namespace ks::engine
