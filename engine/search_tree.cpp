#include "engine/search_tree.hpp"

#include <algorithm>
#include <utility>

namespace ks::engine {

namespace {

constexpr std::array<const char*, status_count> status_names{
    "planned", "coded",   "compiled",  "compile_failed", "verified", "failed",
    "timed",   "crashed", "timed_out", "rejected",       "accepted"};

constexpr std::array<const char*, 3> disposition_names{"not_verified", "passed", "incorrect"};

bool says_timed(node_status s) {
  return s == node_status::timed || s == node_status::rejected || s == node_status::accepted;
}

std::string where(node_id id) {
  return "node " + std::to_string(id);
}

} // namespace

const char* to_string(node_status s) noexcept {
  auto index = static_cast<size_t>(s);
  return index < status_names.size() ? status_names[index] : "unknown";
}

std::optional<node_status> parse_node_status(std::string_view name) noexcept {
  for (size_t i = 0; i < status_names.size(); ++i)
    if (name == status_names[i])
      return static_cast<node_status>(i);
  return std::nullopt;
}

const char* to_string(disposition d) noexcept {
  auto index = static_cast<size_t>(d);
  return index < disposition_names.size() ? disposition_names[index] : "unknown";
}

std::optional<disposition> parse_disposition(std::string_view name) noexcept {
  for (size_t i = 0; i < disposition_names.size(); ++i)
    if (name == disposition_names[i])
      return static_cast<disposition>(i);
  return std::nullopt;
}

bool is_final(const node_record& n) noexcept {
  switch (n.status) {
  case node_status::compile_failed:
  case node_status::failed:
  case node_status::crashed:
  case node_status::timed_out:
  case node_status::rejected:
  case node_status::accepted:
    return true;
  case node_status::verified:
    return n.disposition == disposition::incorrect;
  default:
    return false;
  }
}

// -- constructors ------------------------------------------------------------------------------

search_tree::search_tree() {
  node_record root;
  root.plan = reference_plan();
  nodes_.push_back(std::move(root));
  links_.emplace_back();
}

expected<search_tree> search_tree::from_records(std::vector<node_record> records) {
  if (records.empty())
    return fail(errc::invalid_input, "a search tree needs at least its root (node 0)");
  search_tree tree;
  tree.nodes_.clear();
  tree.links_.clear();
  for (size_t i = 0; i < records.size(); ++i) {
    node_record& record = records[i];
    auto id = static_cast<node_id>(i);
    if (record.id != id)
      return fail(errc::invalid_input, "record " + std::to_string(i) + " has id " +
                                           std::to_string(record.id) + ": ids must be dense");
    if (id == 0) {
      if (record.parent != no_node || record.depth != 0 || record.expansion != 0)
        return fail(errc::invalid_input, "node 0 must be the root: no parent, depth 0");
    } else {
      if (record.parent < 0 || record.parent >= id)
        return fail(errc::invalid_input, where(id) + " names parent " +
                                             std::to_string(record.parent) +
                                             ", which is not an earlier node");
      const node_record& parent = tree.nodes_[static_cast<size_t>(record.parent)];
      if (record.depth != parent.depth + 1)
        return fail(errc::invalid_input, where(id) + " has depth " + std::to_string(record.depth) +
                                             ", its parent " + std::to_string(parent.depth));
      if (record.expansion < 1)
        return fail(errc::invalid_input, where(id) + " has no expansion number");
      if (record.plan.skill.empty())
        return fail(errc::invalid_input, where(id) + " has a plan without a skill");
      for (node_id sibling : tree.links_[static_cast<size_t>(record.parent)].children)
        if (same_plan(tree.nodes_[static_cast<size_t>(sibling)].plan, record.plan))
          return fail(errc::invalid_input, where(id) + " repeats the plan " +
                                               plan_key(record.plan) + " of " + where(sibling));
    }
    if (expected<void> ok = tree.check_progress(record); !ok)
      return tl::unexpected(ok.error());
    tree.total_expansions_ = std::max(tree.total_expansions_, record.expansion);
    tree.nodes_.push_back(std::move(record));
    tree.links_.emplace_back();
    if (id != 0)
      tree.link(tree.nodes_.back());
  }
  return tree;
}

// -- mutations ---------------------------------------------------------------------------------

expected<std::vector<node_id>> search_tree::expand(node_id parent,
                                                   const std::vector<engine::plan>& plans) {
  if (!contains(parent))
    return fail(errc::invalid_input, "cannot expand unknown " + where(parent));
  const node_record& from = node(parent);
  if (from.status != node_status::accepted)
    return fail(errc::invalid_input, "cannot expand " + where(parent) + ": it is " +
                                         to_string(from.status) + ", not accepted");
  if (from.expansion_state == expansion_state::exhausted)
    return fail(errc::invalid_input, "cannot expand " + where(parent) + ": it is exhausted");
  if (plans.empty())
    return fail(errc::invalid_input, "an expansion of " + where(parent) + " needs a plan");
  // Check the whole batch first, so that a refused expansion changes nothing.
  std::vector<std::string> keys;
  for (node_id child : children(parent))
    keys.push_back(plan_key(node(child).plan));
  for (const engine::plan& p : plans) {
    if (p.skill.empty())
      return fail(errc::invalid_input, "a plan for " + where(parent) + " has no skill");
    std::string key = plan_key(p);
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      return fail(errc::invalid_input,
                  "the plan " + key + " was already tried on " + where(parent));
    keys.push_back(std::move(key));
  }
  int64_t number = ++total_expansions_;
  int64_t depth = from.depth + 1;
  std::vector<node_id> ids;
  for (const engine::plan& p : plans) {
    node_record child;
    child.id = size();
    child.parent = parent;
    child.depth = depth;
    child.expansion = number;
    child.plan = p;
    nodes_.push_back(std::move(child));
    links_.emplace_back();
    link(nodes_.back());
    ids.push_back(nodes_.back().id);
  }
  return ids;
}

expected<node_id> search_tree::add_child(node_id parent, engine::plan p) {
  expected<std::vector<node_id>> ids = expand(parent, std::vector<engine::plan>{std::move(p)});
  if (!ids)
    return tl::unexpected(ids.error());
  return ids->front();
}

expected<void> search_tree::update(const node_record& record) {
  if (!contains(record.id))
    return fail(errc::invalid_input, "cannot update unknown " + where(record.id));
  node_record& current = nodes_[static_cast<size_t>(record.id)];
  if (record.parent != current.parent || record.depth != current.depth ||
      record.expansion != current.expansion || !(record.plan == current.plan))
    return fail(errc::invalid_input, "an update may not change the parent, depth, expansion "
                                     "or plan of " +
                                         where(record.id));
  if (expected<void> ok = check_progress(record); !ok)
    return ok;
  current = record;
  return {};
}

expected<void> search_tree::mark_exhausted(node_id id) {
  if (!contains(id))
    return fail(errc::invalid_input, "cannot mark unknown " + where(id) + " exhausted");
  nodes_[static_cast<size_t>(id)].expansion_state = expansion_state::exhausted;
  return {};
}

expected<void> search_tree::check_progress(const node_record& record) const {
  if (static_cast<int32_t>(record.status) < 0 ||
      static_cast<int32_t>(record.status) >= status_count)
    return fail(errc::invalid_input, where(record.id) + " has an unknown status");
  if (says_timed(record.status)) {
    if (!record.time.measured())
      return fail(errc::invalid_input,
                  where(record.id) + " is " + to_string(record.status) + " but carries no timing");
    if (record.disposition != disposition::passed)
      return fail(errc::invalid_input, where(record.id) + " is " + to_string(record.status) +
                                           " but its disposition is " +
                                           to_string(record.disposition) + ", not passed");
  }
  if (record.status == node_status::verified && record.disposition == disposition::not_verified)
    return fail(errc::invalid_input,
                where(record.id) + " is verified but its disposition is not_verified");
  return {};
}

void search_tree::link(const node_record& child) {
  links& parent = links_[static_cast<size_t>(child.parent)];
  parent.children.push_back(child.id);
  if (std::find(parent.expansions.begin(), parent.expansions.end(), child.expansion) ==
      parent.expansions.end())
    parent.expansions.push_back(child.expansion);
}

// -- queries -----------------------------------------------------------------------------------

std::span<const node_id> search_tree::children(node_id id) const {
  return links_[static_cast<size_t>(id)].children;
}

int64_t search_tree::expansions_of(node_id id) const {
  return static_cast<int64_t>(links_[static_cast<size_t>(id)].expansions.size());
}

std::vector<node_id> search_tree::expansion_members(int64_t expansion) const {
  std::vector<node_id> members;
  if (expansion < 1)
    return members;
  for (const node_record& n : nodes_)
    if (n.expansion == expansion)
      members.push_back(n.id);
  return members;
}

std::optional<node_id> search_tree::best_accepted() const {
  std::optional<node_id> best;
  for (const node_record& n : nodes_) {
    if (n.status != node_status::accepted)
      continue;
    if (!best || n.time.median_ms < node(*best).time.median_ms)
      best = n.id;
  }
  return best;
}

expected<std::vector<node_id>> search_tree::lineage_ids(node_id id) const {
  if (!contains(id))
    return fail(errc::invalid_input, "no lineage for unknown " + where(id));
  std::vector<node_id> ids;
  for (node_id at = id; at != no_node; at = node(at).parent)
    ids.push_back(at);
  std::reverse(ids.begin(), ids.end());
  return ids;
}

expected<std::vector<engine::plan>> search_tree::lineage(node_id id) const {
  expected<std::vector<node_id>> ids = lineage_ids(id);
  if (!ids)
    return tl::unexpected(ids.error());
  std::vector<engine::plan> plans;
  plans.reserve(ids->size());
  for (node_id at : *ids)
    plans.push_back(node(at).plan);
  return plans;
}

std::vector<node_id> search_tree::expandable(int64_t max_depth) const {
  std::vector<node_id> ids;
  for (const node_record& n : nodes_)
    if (n.status == node_status::accepted && n.expansion_state == expansion_state::open &&
        n.depth < max_depth)
      ids.push_back(n.id);
  return ids;
}

double search_tree::speedup(node_id id) const {
  const timing& reference = root().time;
  const timing& candidate = node(id).time;
  if (!reference.measured() || !candidate.measured())
    return 0;
  return reference.median_ms / candidate.median_ms;
}

int64_t search_tree::count(node_status s) const noexcept {
  return std::count_if(nodes_.begin(), nodes_.end(),
                       [s](const node_record& n) { return n.status == s; });
}

std::array<int64_t, status_count> search_tree::counts() const noexcept {
  std::array<int64_t, status_count> result{};
  for (const node_record& n : nodes_)
    ++result[static_cast<size_t>(n.status)];
  return result;
}

int64_t search_tree::count(engine::disposition d) const noexcept {
  return std::count_if(nodes_.begin(), nodes_.end(),
                       [d](const node_record& n) { return n.disposition == d; });
}

int64_t search_tree::in_flight() const noexcept {
  return std::count_if(nodes_.begin(), nodes_.end(),
                       [](const node_record& n) { return !is_final(n); });
}

} // namespace ks::engine
