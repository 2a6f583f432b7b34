// The offline backend: a planner, coder and repairer that need no network, so a campaign runs
// out of the box and in the tests. Until the skill library lands it knows one skill,
// launch_params, over the launch parameters a task's manifest lists as `tunables`: macros
// that the reference defines with an overridable default (`#ifndef NAME` / `#define NAME
// VALUE`).
//
// A configuration assigns every tunable a value; a plan carries its whole configuration as
// params, so plan_key makes two plans equal exactly when their configurations are, and
// short-term memory's "never the same plan twice on one parent" means "never the same
// configuration twice". The configuration of a node is that of the last launch_params plan of
// its lineage, merged over the defaults (the reference's, read from the parent's source or
// else the reference file). The planner walks the space one step at a time: each neighbour
// moves one parameter to the value beside it in its list (in the manifest's order), nearest
// first by relative change; ties go to larger values when the diagnosis says memory- or
// latency-bound (more work in flight) and to smaller ones when it says compute-bound. It skips
// configurations tried on this parent and those of the lineage, so the search never steps
// back to where it came from; when no neighbour is left it proposes nothing. The coder
// prepends `#define`s to the reference, deterministically, so equal plans hit the same
// compile-cache entry. The repairer cannot edit code: it gives up with a diagnosis naming
// the parameter set, and the failed plan, recorded in short-term memory, is never proposed
// again ("repair by trying the next parameter set" happens at the next expansion).

#include "engine/offline_backend.hpp"

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

std::string_view trim(std::string_view text) {
  auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && blank(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && blank(text.back()))
    text.remove_suffix(1);
  return text;
}

std::string lowercase(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return result;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool is_macro_name(std::string_view text) {
  auto upper = [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; };
  return !text.empty() && upper(text[0]) && std::all_of(text.begin(), text.end(), [&](char c) {
    return upper(c) || (c >= '0' && c <= '9');
  });
}

/// Reads a whole integer (an optional sign, then digits; an integral number such as "16.0"
/// too, as plan_key would canonicalise it); nullopt for anything else.
std::optional<int64_t> parse_integer(std::string_view text) {
  text = trim(text);
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

/// A preprocessor line split into its directive ("define"), its first word and the rest.
struct directive {
  std::string_view name;
  std::string_view word;
  std::string_view rest;
};

std::optional<directive> parse_directive(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() != '#')
    return std::nullopt;
  line = trim(line.substr(1));
  auto split_word = [](std::string_view& text) {
    size_t length = 0;
    while (length < text.size() && is_identifier_char(text[length]))
      ++length;
    std::string_view word = text.substr(0, length);
    text = trim(text.substr(length));
    return word;
  };
  directive result;
  result.name = split_word(line);
  result.word = split_word(line);
  result.rest = line;
  return result;
}

/// Returns `line`'s text before a trailing // or /* comment.
std::string_view strip_comment(std::string_view line) {
  size_t at = std::min(line.find("//"), line.find("/*"));
  return trim(line.substr(0, at));
}

expected<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(errc::io, path.string() + ": cannot read the reference kernel");
  return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Returns the defaults of every tunable of `subject`, from `source` first and from the
/// reference file for those `source` lacks.
expected<launch_config> defaults_of(const task& subject, std::string_view source) {
  launch_config defaults;
  std::optional<std::string> reference;
  for (const auto& [name, values] : subject.tunables) {
    std::optional<int64_t> value = macro_default(source, name);
    if (!value) {
      if (!reference) {
        expected<std::string> text = read_text(subject.reference_path);
        reference = text ? std::move(*text) : std::string{};
      }
      value = macro_default(*reference, name);
    }
    if (!value)
      return fail(errc::invalid_input,
                  "task '" + subject.name + "': the reference " + subject.reference_path.string() +
                      " has no overridable default for tunable " + name + " (#ifndef " + name +
                      " / #define " + name + " VALUE / #endif)");
    defaults.emplace(name, *value);
  }
  return defaults;
}

/// Returns `defaults` with the values of `plan_config` for the task's tunables.
launch_config merged(launch_config defaults, const launch_config& plan_config) {
  for (auto& [name, value] : defaults)
    if (auto it = plan_config.find(name); it != plan_config.end())
      value = it->second;
  return defaults;
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

// The first verdict the diagnosis names decides: more work in flight hides memory latency
// and fills a device that a short kernel leaves idle; a compute-bound kernel gains from
// finer-grained blocks (fewer idle threads in the tail). No verdict: larger first.
preferred_direction direction_for(std::string_view diagnosis) {
  std::string text = lowercase(diagnosis);
  size_t memory = std::min(text.find("memory-bound"), text.find("latency-bound"));
  size_t compute = text.find("compute-bound");
  return compute < memory ? preferred_direction::smaller : preferred_direction::larger;
}

std::string assignment_text(const launch_config& config) {
  std::string text;
  for (const auto& [name, value] : config)
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
    std::string_view line = trim(
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

} // namespace

std::optional<int64_t> macro_default(std::string_view source, std::string_view name) {
  bool guarded = false;
  size_t start = 0;
  while (start < source.size()) {
    size_t end = source.find('\n', start);
    std::string_view line =
        source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? source.size() : end + 1;
    if (trim(line).empty())
      continue;
    std::optional<directive> d = parse_directive(line);
    if (guarded && d && d->name == "define" && d->word == name)
      if (std::optional<int64_t> value = parse_integer(strip_comment(d->rest)))
        return value;
    guarded = d && d->name == "ifndef" && d->word == name;
  }
  return std::nullopt;
}

plan launch_plan(const launch_config& config, std::string description) {
  plan result;
  result.skill = std::string(launch_params_skill);
  result.description = std::move(description);
  for (const auto& [name, value] : config)
    result.params.emplace(name, std::to_string(value));
  return result;
}

std::optional<launch_config> launch_config_of(const plan& p) {
  if (lowercase(trim(p.skill)) != launch_params_skill)
    return std::nullopt;
  launch_config config;
  for (const auto& [name, text] : p.params) {
    std::optional<int64_t> value = parse_integer(text);
    if (!value)
      return std::nullopt;
    config[std::string(trim(name))] = *value;
  }
  return config;
}

std::string_view offline_backend::name() const noexcept {
  return "offline";
}

expected<std::vector<plan>> offline_backend::propose(const planning_request& request) {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "the offline planner needs the task it plans for");
  const task& subject = *request.subject;
  std::vector<plan> plans;
  if (subject.tunables.empty() || request.count <= 0)
    return plans;
  expected<launch_config> defaults = defaults_of(subject, request.parent_source);
  if (!defaults)
    return tl::unexpected(defaults.error());

  // The parent's configuration, and every configuration on the way to it: stepping back to
  // one of those would redo a node the search already has.
  launch_config current = *defaults;
  std::set<std::string> excluded{plan_key(launch_plan(current, ""))};
  for (const plan& step : request.parent_lineage) {
    if (std::optional<launch_config> config = launch_config_of(step))
      current = merged(*defaults, *config);
    else if (lowercase(trim(step.skill)) == "reference")
      current = *defaults;
    excluded.insert(plan_key(launch_plan(current, "")));
  }
  for (const plan_outcome& outcome : request.tried)
    excluded.insert(plan_key(outcome.plan));

  struct step {
    double change;
    int32_t direction_rank;
    std::string name;
    int64_t from;
    int64_t to;
  };
  preferred_direction preferred = direction_for(request.diagnosis);
  std::vector<step> steps;
  for (const auto& [name, values] : subject.tunables) {
    int64_t from = current.at(name);
    for (int64_t to : neighbours(values, from)) {
      bool larger = to > from;
      bool first = larger == (preferred == preferred_direction::larger);
      steps.push_back({relative_change(from, to), first ? 0 : 1, name, from, to});
    }
  }
  std::sort(steps.begin(), steps.end(), [](const step& a, const step& b) {
    return std::tie(a.change, a.direction_rank, a.name, a.to) <
           std::tie(b.change, b.direction_rank, b.name, b.to);
  });
  for (const step& s : steps) {
    if (static_cast<int64_t>(plans.size()) >= request.count)
      break;
    launch_config next = current;
    next[s.name] = s.to;
    plan candidate =
        launch_plan(next, s.name + " " + std::to_string(s.from) + " -> " + std::to_string(s.to));
    if (excluded.insert(plan_key(candidate)).second)
      plans.push_back(std::move(candidate));
  }
  return plans;
}

expected<std::string> offline_backend::write_code(const coding_request& request) {
  std::string reference = request.reference_source;
  if (reference.empty() && request.subject != nullptr) {
    expected<std::string> text = read_text(request.subject->reference_path);
    if (!text)
      return tl::unexpected(text.error());
    reference = std::move(*text);
  }
  if (reference.empty())
    return fail(errc::invalid_input, "the offline coder needs the reference source");
  std::string skill = lowercase(trim(request.plan.skill));
  if (skill == "reference")
    return reference;
  if (skill != launch_params_skill)
    return fail(errc::invalid_input, "the offline coder writes only launch_params plans, not '" +
                                         request.plan.skill + "' (" + plan_key(request.plan) + ")");
  std::optional<launch_config> config = launch_config_of(request.plan);
  if (!config)
    return fail(errc::invalid_input,
                "plan " + plan_key(request.plan) + ": every launch parameter must be an integer");
  std::string defines;
  for (const auto& [name, value] : *config) {
    if (!is_macro_name(name))
      return fail(errc::invalid_input, "plan " + plan_key(request.plan) + ": '" + name +
                                           "' is not a macro name ([A-Z_][A-Z0-9_]*)");
    if (request.subject != nullptr && !request.subject->tunables.contains(name))
      return fail(errc::invalid_input, "plan " + plan_key(request.plan) + ": " + name +
                                           " is not a tunable of task '" + request.subject->name +
                                           "'");
    // Without the guard, the #define would be redefined (an error) or ignored.
    if (!macro_default(reference, name))
      return fail(errc::invalid_input, "plan " + plan_key(request.plan) +
                                           ": the reference has no overridable default for " +
                                           name + " (#ifndef " + name + " / #define " + name +
                                           " VALUE / #endif)");
    defines += "#define " + name + " " + std::to_string(value) + "\n";
  }
  // plan_key, not the description: equal plans must give equal text (one compile-cache entry).
  return "// kernelskill offline coder: plan " + plan_key(request.plan) + "\n" + defines +
         reference;
}

expected<repair_reply> offline_backend::repair(const repair_request& request) {
  repair_reply reply;
  reply.gave_up = true;
  std::string kind = request.failure_kind.empty() ? "failure" : request.failure_kind;
  std::string what = first_error_line(request.error_text);
  if (std::optional<launch_config> config = launch_config_of(request.plan))
    reply.diagnosis =
        "launch parameters " + assignment_text(*config) + " failed (" + kind + "): " + what;
  else
    reply.diagnosis = "plan " + plan_key(request.plan) + " failed (" + kind + "): " + what;
  reply.fix_summary = "none: the offline repairer cannot edit code; the planner tries another "
                      "parameter set";
  return reply;
}

} // namespace ks::engine
