#pragma once

#include <map>
#include <string>

namespace ks::engine {

/// Describes what one expansion intends to change in its parent: the skill applied, a one-line
/// description for people and prompts, and the skill's parameters. Two plans are the same plan
/// when their canonical keys are equal (see plan_key): the description never counts.
struct plan {
  std::string skill;                         ///< skill name, e.g. "vectorize_loads"
  std::string description;                   ///< one line, e.g. "load 16 bytes per thread"
  std::map<std::string, std::string> params;  ///< skill parameters, e.g. {"width": "16"}

  friend bool operator==(const plan&, const plan&) = default;
};

/// Returns the plan of a search tree's root: the task's reference kernel (skill "reference").
plan reference_plan();

/// Returns the canonical key of `p`: `skill(k1=v1,k2=v2)` with the skill, keys and values
/// trimmed of surrounding blanks, the skill lowercased, params in key order, and every value
/// that reads wholly as a number written in its shortest round-trip form ("16.0", "016" and
/// "1.6e1" all become "16"). Equal keys mean the same plan, whatever the description says.
std::string plan_key(const plan& p);

/// Checks whether `a` and `b` are the same plan (equal canonical keys).
bool same_plan(const plan& a, const plan& b);

} // namespace ks::engine
