#include "engine/plan.hpp"

#include "base/text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>
#include <system_error>

namespace ks::engine {

namespace {

// A value that parses completely as a number is rewritten in its shortest round-trip form, so
// that a planner writing "16.0" cannot sneak a repeat of "16" past short-term memory.
std::string canonical_value(std::string_view text) {
  text = base::trim(text);
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '+')
    digits.remove_prefix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size())
    return std::string{text};
  if (value == 0)
    value = 0; // folds -0 into 0
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

} // namespace

plan reference_plan() {
  return plan{"reference", "the task's reference kernel", {}, 0, {}};
}

std::string plan_key(const plan& p) {
  std::string key{base::trim(p.skill)};
  std::transform(key.begin(), key.end(), key.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (std::string_view name = base::trim(p.template_name); !name.empty())
    key.append("/").append(name);
  // Trimming can make two keys equal; the map keeps the last, as a later assignment would.
  std::map<std::string, std::string> canonical;
  for (const auto& [name, value] : p.params)
    canonical[std::string{base::trim(name)}] = canonical_value(value);
  key += '(';
  bool first = true;
  for (const auto& [name, value] : canonical) {
    if (!first)
      key += ',';
    first = false;
    key += name;
    key += '=';
    key += value;
  }
  key += ')';
  return key;
}

bool same_plan(const plan& a, const plan& b) {
  return plan_key(a) == plan_key(b);
}

} // namespace ks::engine
