// The offline backend: a planner, coder and repairer that need no network, so a campaign runs
// out of the box and in the tests. It knows no optimization itself: every idea is a skill of
// the library, and every kernel it writes is a skill's template rendered for the task.
//
// A node's genotype is its plan: skill, template and parameter values. The planner walks each
// template's parameter space one step at a time. For the skill and template that made the
// parent, the ideas are the parent's neighbours: one parameter moved to the value beside it in
// its list, nearest first by relative change; ties go to larger values when the diagnosis says
// memory- or latency-bound (more work in flight) and to smaller ones when it says
// compute-bound. For any other skill, the first idea is a jump: the instantiation that won
// most on this family and GPU in earlier campaigns (long-term memory's best_params), else
// the template's defaults for the task (a parameter's `prefer`, else its fixed default), else
// the first instantiation its constraints admit (a remembered
// best counts only when it beat its reference); when that one
// is already taken (the launch-parameter skill's defaults are the reference itself), its
// neighbours. Retrieved skills take turns, best ranked first (one plan each per round), so K
// branches explore K skills before any skill gets a second branch; demoted skills are used
// only when no other skill has a plan left. Plans tried on this parent and plans of the
// lineage are never proposed: the search never repeats itself nor steps back.
//
// The coder renders the template (skill_template.hpp): equal plans give equal text, so they
// hit the same compile-cache entry. The repairer cannot edit code: it gives up with a
// diagnosis naming the plan, and the failed plan, recorded in short-term memory, is never
// proposed again ("repair by trying the next parameter set" happens at the next expansion).

#include "engine/offline_backend.hpp"

#include "base/text.hpp"
#include "engine/graph_companions.hpp"
#include "engine/graph_reference.hpp"
#include "engine/graph_spec.hpp"
#include "engine/retrieval.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

namespace ks::engine {

namespace {

std::string lowercase(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return result;
}

/// Reads a whole integer (an optional sign, then digits; an integral number such as "16.0"
/// too, as plan_key would canonicalise it); nullopt for anything else.
std::optional<int64_t> parse_integer(std::string_view text) {
  text = base::trim(text);
  if (!text.empty() && text.front() == '+')
    text.remove_prefix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!text.empty() && ec == std::errc{} && end == text.data() + text.size())
    return value;
  double real = 0;
  auto [real_end, real_ec] = std::from_chars(text.data(), text.data() + text.size(), real);
  if (text.empty() || real_ec != std::errc{} || real_end != text.data() + text.size() ||
      real != std::floor(real) || std::fabs(real) > 9.0e18)
    return std::nullopt;
  return static_cast<int64_t>(real);
}

/// Returns the values beside `current` in `values`: its neighbours in the list, or, when it
/// is not in the list, the nearest smaller and larger values.
std::vector<int64_t> neighbours(const std::vector<int64_t>& values, int64_t current) {
  std::vector<int64_t> result;
  auto it = std::find(values.begin(), values.end(), current);
  if (it != values.end()) {
    if (it != values.begin())
      result.push_back(*std::prev(it));
    if (std::next(it) != values.end())
      result.push_back(*std::next(it));
    return result;
  }
  std::optional<int64_t> below;
  std::optional<int64_t> above;
  for (int64_t value : values) {
    if (value < current && (!below || value > *below))
      below = value;
    if (value > current && (!above || value < *above))
      above = value;
  }
  for (std::optional<int64_t> value : {below, above})
    if (value)
      result.push_back(*value);
  return result;
}

/// Returns the relative change from `from` to `to`: 1 for a doubling or a halving.
double relative_change(int64_t from, int64_t to) {
  double a = static_cast<double>(from);
  double b = static_cast<double>(to);
  return std::fabs(b - a) / std::max(std::min(std::fabs(a), std::fabs(b)), 1.0);
}

/// Says which way the planner tries first when two steps change as much.
enum class preferred_direction { larger, smaller };

// More work in flight hides memory latency and fills a device that a short kernel leaves
// idle; a compute-bound kernel gains from finer-grained blocks (fewer idle threads in the
// tail). Undiagnosed: larger first.
preferred_direction direction_for(const diagnosis& d) {
  return d.diagnosed && d.bound == bound_kind::compute ? preferred_direction::smaller
                                                       : preferred_direction::larger;
}

std::string assignment_text(const param_values& values) {
  std::string text;
  for (const auto& [name, value] : values)
    text.append(text.empty() ? "" : " ").append(name + "=" + std::to_string(value));
  return text;
}

/// Returns the line of `text` that best says what went wrong: the first that mentions an
/// error, else the first non-blank one; at most 300 characters.
std::string first_error_line(std::string_view text) {
  std::string_view first_blank_free;
  std::string_view chosen;
  size_t start = 0;
  while (start <= text.size() && chosen.empty()) {
    size_t end = text.find('\n', start);
    std::string_view line = base::trim(
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (!line.empty() && first_blank_free.empty())
      first_blank_free = line;
    if (lowercase(line).find("error") != std::string::npos)
      chosen = line;
    if (end == std::string_view::npos)
      break;
    start = end + 1;
  }
  if (chosen.empty())
    chosen = first_blank_free;
  if (chosen.empty())
    return "(no error text)";
  std::string line(chosen);
  if (line.size() > 300)
    line = line.substr(0, 297) + "...";
  return line;
}

/// The ideas of one retrieved skill for one parent, in the order they are offered.
struct skill_ideas {
  std::vector<plan> plans;
  size_t next = 0;
  bool demoted = false;
};

/// Plans the ideas of skill `s` for `subject`, the request's search target (see the top of the
/// file).
skill_ideas ideas_for(const skill& s, const retrieved_skill& r, const task& subject,
                      const std::string& reference, const plan& parent_plan,
                      preferred_direction preferred) {
  skill_ideas ideas;
  ideas.demoted = r.demoted;
  for (const skill_template& t : s.templates) {
    auto space = space_of(t, subject, reference);
    if (!space || (t.params_from_tunables && space->empty()))
      continue;
    auto valid = [&](const param_values& v) {
      auto ok = check_params(t, *space, v, subject);
      return ok && !*ok;
    };
    // One parameter moved one step from `from`, nearest first.
    auto steps_from = [&](const param_values& from, const std::string& why) {
      struct step {
        double change;
        int32_t direction_rank;
        std::string name;
        int64_t to;
        int64_t from;
      };
      std::vector<step> steps;
      for (const param_space& p : *space) {
        int64_t current = from.at(p.name);
        for (int64_t to : neighbours(p.values, current)) {
          bool first = (to > current) == (preferred == preferred_direction::larger);
          steps.push_back({relative_change(current, to), first ? 0 : 1, p.name, to, current});
        }
      }
      std::sort(steps.begin(), steps.end(), [](const step& a, const step& b) {
        return std::tie(a.change, a.direction_rank, a.name, a.to) <
               std::tie(b.change, b.direction_rank, b.name, b.to);
      });
      for (const step& st : steps) {
        param_values next = from;
        next[st.name] = st.to;
        if (valid(next))
          ideas.plans.push_back(instantiation(s, t, next,
                                              s.id + "/" + t.name + ": " + st.name + " " +
                                                  std::to_string(st.from) + " -> " +
                                                  std::to_string(st.to) + why));
      }
    };
    bool parent_made_here =
        lowercase(base::trim(parent_plan.skill)) == s.id &&
        (parent_plan.template_name.empty() ? &t == &s.templates.front()
                                           : parent_plan.template_name == t.name);
    if (parent_made_here) {
      std::optional<param_values> current = params_of(parent_plan);
      // A parent made by an older version of the template may lack a parameter: defaults.
      param_values from = preferred_defaults(t, *space, subject);
      if (current)
        for (auto& [name, value] : from)
          if (auto it = current->find(name); it != current->end())
            value = it->second;
      steps_from(from, "");
      continue;
    }
    std::vector<std::pair<param_values, std::string>> starts;
    // Only an instantiation that beat its reference is a place to start from: the fastest of
    // tries that all lost (a rejected 0.8x) would lead the search further the wrong way.
    if (r.stats.best_template == t.name && !r.stats.best_params.empty() &&
        r.stats.best_speedup > 1) {
      plan remembered{s.id, "", r.stats.best_params, s.version, t.name};
      if (auto best = params_of(remembered); best && valid(*best))
        starts.emplace_back(*best, " (the best of earlier campaigns on this family and GPU)");
    }
    if (auto first = first_valid(t, *space, subject); first && *first)
      starts.emplace_back(**first, "");
    for (const auto& [start, why] : starts) {
      ideas.plans.push_back(instantiation(
          s, t, start, s.title + " (" + t.name + ": " + assignment_text(start) + ")" + why));
      steps_from(start, why.empty() ? "" : " (near the best of earlier campaigns)");
    }
  }
  return ideas;
}

/// Returns the reference that a skill for `target`, the search target of `subject`, renders
/// from: a graph's main node's own reference; for any other task `given`, else the task's.
expected<std::string> target_reference(const task& subject, const task& target,
                                       const std::string& given) {
  if (&target != &subject)
    return target.reference_source;
  if (!given.empty())
    return given;
  return read_reference(subject);
}

} // namespace

std::optional<param_values> params_of(const plan& p) {
  param_values values;
  for (const auto& [name, text] : p.params) {
    std::optional<int64_t> value = parse_integer(text);
    if (!value)
      return std::nullopt;
    values[std::string(base::trim(name))] = *value;
  }
  return values;
}

plan instantiation(const skill& s, const skill_template& t, const param_values& values,
                   std::string description) {
  plan result;
  result.skill = s.id;
  result.description = std::move(description);
  result.skill_version = s.version;
  result.template_name = t.name;
  for (const auto& [name, value] : values)
    result.params.emplace(name, std::to_string(value));
  return result;
}

offline_backend::offline_backend(skill_library_ptr skills) : skills_(std::move(skills)) {}

std::string_view offline_backend::name() const noexcept {
  return "offline";
}

expected<std::vector<plan>> offline_backend::propose(const planning_request& request) {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "the offline planner needs the task it plans for");
  std::vector<plan> plans;
  if (request.count <= 0 || !skills_)
    return plans;
  // A graph task's search is its main node's: skills plan for that node's task.
  const task& target = search_target(*request.subject);
  expected<std::string> reference =
      target_reference(*request.subject, target, request.reference_source);
  if (!reference)
    return tl::unexpected(reference.error());
  plan parent_plan =
      request.parent_lineage.empty() ? reference_plan() : request.parent_lineage.back();

  // Never a plan of the lineage (stepping back) nor one tried on this parent. A template
  // whose space is the tunables renders the reference itself at the reference's defaults: that
  // instantiation is the root, which every lineage holds.
  std::set<std::string> excluded;
  for (const plan& step : request.parent_lineage)
    excluded.insert(plan_key(step));
  for (const plan_outcome& outcome : request.tried)
    excluded.insert(plan_key(outcome.plan));
  // Nor one already in the tree under another parent: a template renders the same source for
  // the same task and parameters whatever the parent, so it would only be timed again (on an
  // H100 the starter suite spent 99 of 179 nodes on kernels it had measured, sum's three
  // finalists were one kernel).
  for (const plan& p : request.in_tree)
    excluded.insert(plan_key(p));
  for (const skill& s : skills_->skills)
    for (const skill_template& t : s.templates)
      if (t.params_from_tunables)
        if (auto space = space_of(t, target, *reference); space && !space->empty())
          excluded.insert(plan_key(instantiation(s, t, defaults_of(*space), "")));

  preferred_direction preferred = direction_for(request.diagnosis);
  std::vector<skill_ideas> ideas;
  for (const retrieved_skill& r : request.skills) {
    const skill* s = skills_->find(r.id);
    if (s == nullptr || s->templates.empty())
      continue; // guidance-only skills are for language models
    ideas.push_back(ideas_for(*s, r, target, *reference, parent_plan, preferred));
  }
  // Round robin over the skills, best ranked first; demoted skills only after the others.
  for (bool demoted_pass : {false, true}) {
    bool progress = true;
    while (progress && static_cast<int64_t>(plans.size()) < request.count) {
      progress = false;
      for (skill_ideas& i : ideas) {
        if (i.demoted != demoted_pass)
          continue;
        while (i.next < i.plans.size()) {
          plan& candidate = i.plans[i.next++];
          if (excluded.insert(plan_key(candidate)).second) {
            plans.push_back(std::move(candidate));
            progress = true;
            break;
          }
        }
        if (static_cast<int64_t>(plans.size()) >= request.count)
          break;
      }
    }
  }
  return plans;
}

expected<std::string> offline_backend::write_code(const coding_request& request) {
  std::string reference = request.reference_source;
  if (reference.empty() && request.subject != nullptr) {
    expected<std::string> text = read_reference(*request.subject);
    if (!text)
      return tl::unexpected(text.error());
    reference = std::move(*text);
  }
  if (reference.empty())
    return fail(errc::invalid_input, "the offline coder needs the reference source");
  std::string id = lowercase(base::trim(request.plan.skill));
  if (id == "reference")
    return reference;
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "the offline coder needs the task it codes for");
  // A graph task's candidate: the skill rendered for the main node, composed with the other
  // nodes' references.
  const task& target = search_target(*request.subject);
  if (&target != request.subject) {
    expected<std::string> node_source = write_node_code(request, target, target.reference_source);
    if (!node_source)
      return tl::unexpected(node_source.error());
    std::map<size_t, std::string> sources =
        skills_ ? graph_companion_sources(*skills_, *request.subject)
                : std::map<size_t, std::string>{};
    sources[request.subject->graph->main] = std::move(*node_source);
    return compose_graph(*request.subject, sources);
  }
  return write_node_code(request, target, reference);
}

expected<std::string> offline_backend::write_node_code(const coding_request& request,
                                                       const task& target,
                                                       const std::string& reference) {
  std::string id = lowercase(base::trim(request.plan.skill));
  const skill* s = skills_ ? skills_->find(id) : nullptr;
  if (s == nullptr)
    return fail(errc::invalid_input, "plan " + plan_key(request.plan) +
                                         ": the skill library has no skill '" + request.plan.skill +
                                         "'");
  const skill_template* t = s->find_template(base::trim(request.plan.template_name));
  if (t == nullptr)
    return fail(errc::invalid_input, "plan " + plan_key(request.plan) + ": skill " + s->id +
                                         " has no template '" + request.plan.template_name + "'");
  std::optional<param_values> values = params_of(request.plan);
  if (!values)
    return fail(errc::invalid_input,
                "plan " + plan_key(request.plan) + ": every parameter must be an integer");
  auto space = space_of(*t, target, reference);
  if (!space)
    return tl::unexpected(space.error());
  auto invalid = check_params(*t, *space, *values, target);
  if (!invalid)
    return tl::unexpected(invalid.error());
  if (*invalid)
    return fail(errc::invalid_input, "plan " + plan_key(request.plan) + ": " + **invalid);
  return render(*s, *t, target, *values, reference);
}

expected<repair_reply> offline_backend::repair(const repair_request& request) {
  repair_reply reply;
  reply.gave_up = true;
  std::string kind = request.failure_kind.empty() ? "failure" : request.failure_kind;
  std::string what = first_error_line(request.error_text);
  reply.diagnosis = "plan " + plan_key(request.plan) + " failed (" + kind + "): " + what;
  reply.fix_summary = "none: the offline repairer cannot edit code; the planner tries another "
                      "parameter set or skill";
  return reply;
}

} // namespace ks::engine
