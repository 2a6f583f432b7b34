#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace ks::engine {

/// Describes what one expansion intends to change in its parent: the skill applied, a one-line
/// description for people and prompts, and the skill's parameters; with the skill's version
/// and the template it instantiates, a plan is the genotype of the node it makes (with the
/// node's parent: see genotype.hpp). Two plans are the same plan when their canonical keys
/// are equal (see plan_key): the description and the skill's version never count.
struct plan {
  std::string skill;                         ///< skill id, e.g. "elementwise_vectorized"
  std::string description;                   ///< one line, e.g. "load 16 bytes per thread"
  std::map<std::string, std::string> params; ///< template parameters, e.g. {"items": "4"}
  int64_t skill_version = 0;                 ///< the skill's version; 0 when unknown
  std::string template_name;                 ///< the template instantiated; empty for none

  friend bool operator==(const plan&, const plan&) = default;
};

/// Returns the plan of a search tree's root: the task's reference kernel (skill "reference").
plan reference_plan();

/// Returns the canonical key of `p`: `skill(k1=v1,k2=v2)`, or `skill/template(k1=v1,...)` when
/// it names a template, with the skill, template, keys and values
/// trimmed of surrounding blanks, the skill lowercased, params in key order, and every value
/// that reads wholly as a number written in its shortest round-trip form ("16.0", "016" and
/// "1.6e1" all become "16"). Equal keys mean the same plan, whatever the description says.
std::string plan_key(const plan& p);

/// Checks whether `a` and `b` are the same plan (equal canonical keys).
bool same_plan(const plan& a, const plan& b);

} // namespace ks::engine
