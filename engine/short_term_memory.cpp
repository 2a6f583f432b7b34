#include "engine/short_term_memory.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace ks::engine {

namespace {

constexpr std::array<const char*, 4> outcome_names{"pending", "accepted", "rejected", "failed"};

} // namespace

const char* to_string(outcome_kind k) noexcept {
  auto index = static_cast<size_t>(k);
  return index < outcome_names.size() ? outcome_names[index] : "unknown";
}

std::optional<outcome_kind> parse_outcome_kind(std::string_view name) noexcept {
  for (size_t i = 0; i < outcome_names.size(); ++i)
    if (name == outcome_names[i])
      return static_cast<outcome_kind>(i);
  return std::nullopt;
}

short_term_memory::short_term_memory(outcome_map outcomes, repair_map repairs)
  : outcomes_(std::move(outcomes)), repairs_(std::move(repairs)) {}

void short_term_memory::record_outcome(node_id parent, plan_outcome outcome) {
  std::vector<plan_outcome>& tried = outcomes_[parent];
  std::string key = plan_key(outcome.plan);
  auto same = std::find_if(tried.begin(), tried.end(),
                           [&](const plan_outcome& o) { return plan_key(o.plan) == key; });
  if (same != tried.end())
    *same = std::move(outcome);
  else
    tried.push_back(std::move(outcome));
}

int64_t short_term_memory::record_repair(node_id branch, repair_round round) {
  std::vector<repair_round>& rounds = repairs_[branch];
  if (round.round == 0)
    round.round = rounds.empty() ? 1 : rounds.back().round + 1;
  rounds.push_back(std::move(round));
  return rounds.back().round;
}

bool short_term_memory::was_tried(node_id parent, const plan& p) const {
  return outcome_of(parent, p).has_value();
}

std::vector<plan_outcome> short_term_memory::tried_plans(node_id parent) const {
  auto found = outcomes_.find(parent);
  return found == outcomes_.end() ? std::vector<plan_outcome>{} : found->second;
}

std::optional<plan_outcome> short_term_memory::outcome_of(node_id parent, const plan& p) const {
  auto found = outcomes_.find(parent);
  if (found == outcomes_.end())
    return std::nullopt;
  std::string key = plan_key(p);
  for (const plan_outcome& o : found->second)
    if (plan_key(o.plan) == key)
      return o;
  return std::nullopt;
}

std::optional<int64_t> repeated_fix(const std::vector<repair_round>& rounds,
                                    std::string_view failing_hash, std::string_view hash) {
  for (const repair_round& r : rounds)
    if (!r.source_hash.empty() && r.source_hash == hash)
      return r.round;
  if (hash == failing_hash)
    return 0;
  for (const repair_round& r : rounds)
    if (!r.repaired_hash.empty() && r.repaired_hash == hash)
      return 0;
  return std::nullopt;
}

std::vector<repair_round> short_term_memory::repairs(node_id branch) const {
  auto found = repairs_.find(branch);
  return found == repairs_.end() ? std::vector<repair_round>{} : found->second;
}

} // namespace ks::engine
