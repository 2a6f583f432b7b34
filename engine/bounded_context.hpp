#pragma once

// The Mustache context every renderer of ours uses (a skill's template, a family's reference,
// a prompt): strict, since it records every name it could not resolve so that the caller can
// refuse the render, and bounded, since it charges every hook to a render_budget
// (mustache_limits.hpp), which throws render_limit_reached once the render is too large. Only
// for files that may include kainjow's Mustache (engine/, agents/).

#include "engine/mustache_limits.hpp"

#include <kainjow/mustache.hpp>
#include <set>
#include <string>

namespace ks::engine {

/// A strict, bounded Mustache context over a data tree; see the top of the file.
class bounded_context : public kainjow::mustache::context<std::string> {
public:
  using data = kainjow::mustache::data;

  /// Starts at `root`, charging `budget`, which must outlive the context.
  bounded_context(const data* root, render_budget& budget)
    : kainjow::mustache::context<std::string>(root), budget_(budget) {}

  /// Enters a list item or an object; charges one hook.
  void push(const data* d) override {
    budget_.charge();
    kainjow::mustache::context<std::string>::push(d);
  }

  /// Looks `name` up, remembering it when missing; charges one hook and the value's size.
  const data* get(const std::string& name) const override {
    const data* found = kainjow::mustache::context<std::string>::get(name);
    if (found == nullptr)
      missing_.insert(name);
    budget_.charge(found != nullptr && found->is_string() ? found->string_value().size() : 0);
    return found;
  }

  /// Looks partial `name` up, remembering "> name" when missing; checks and charges its text.
  const data* get_partial(const std::string& name) const override {
    const data* found = kainjow::mustache::context<std::string>::get_partial(name);
    if (found == nullptr)
      missing_.insert("> " + name);
    else if (found->is_partial())
      budget_.charge_partial(name, found->partial_value()());
    else if (found->is_string())
      budget_.charge_partial(name, found->string_value());
    return found;
  }

  /// Returns the names looked up and not found ("> name" for a partial).
  const std::set<std::string>& missing() const noexcept { return missing_; }

private:
  render_budget& budget_;
  mutable std::set<std::string> missing_;
};

} // namespace ks::engine
