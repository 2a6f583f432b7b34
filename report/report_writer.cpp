// The campaign's outputs, rebuilt from the store alone: whatever state the store is in (a
// finished campaign, one still running, one killed halfway), the files describe it. Nothing
// here keeps state between calls, so the reporter calls write_campaign_outputs() as often as
// it likes and `kernelskill status` reads the same store without the actors.
//
// The winner of a task is the one the judge declared (task_state::winner, after the
// finalists were re-timed); while a task is still searching, its fastest accepted candidate
// stands in and is marked "best so far". A task whose reference has not been timed yet has
// no best: best/<task>.cu is written only once something was measured.
//
// Torch baselines, when the campaign has them, put each task's best time against torch eager
// and torch.compile (the baseline's median over the best's) and add the geomeans over the
// tasks that have both numbers; a task absent from the file, or whose entry holds an error,
// shows "-" and counts in no geomean. A file measured on another GPU than the campaign's (by
// name, against the environment's GPUs) is still shown, flagged in both files.
//
// A node measured with vendor libraries (bench.allow_vendor_libraries: its verification names
// them) carries them in results.json ("vendor_libraries", beside the node and its task's
// winner) and says "uses cublas" in report.md: its time is not its own kernels' alone.
//
// Every file is written to a hidden temporary name in its folder and renamed over the old
// one (rename is atomic within a file system), so a reader, or a campaign killed while
// writing, never leaves half a file behind.

#include "report/report_writer.hpp"

#include "agents/usage_file.hpp"
#include "gpu/vendor_libraries.hpp"
#include "json/encode.hpp"
#include "report/atomic_file.hpp"
#include "report/gpu_stability.hpp"
#include "report/html_report.hpp"
#include "report/node_json.hpp"
#include "report/report_format.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

namespace ks::report {

namespace fs = std::filesystem;
namespace json = boost::json;
using report::file_name_of;
using report::format_ms;
using report::format_percent;
using report::format_ratio;
using report::json_or_text;
using report::json_strings;
using report::positive_or_null;
using report::vendor_libraries_of;
using report::write_atomically;

namespace {

/// What the writer needs of one task, read from the store once.
struct task_view {
  memory::task_state state;
  std::vector<engine::node_record> nodes; // indexed by id
  engine::node_id best = engine::no_node; // the winner, or the best accepted so far
  bool declared = false;                  // best is the judge's declared winner
  std::map<engine::node_id, std::pair<std::string, std::string>> profiled; // class, text
  std::map<engine::node_id, std::vector<std::string>> vendor; // libraries a node was allowed
};

// -- reading ---------------------------------------------------------------------------------

const engine::node_record* node_at(const task_view& t, engine::node_id id) {
  if (id < 0 || id >= static_cast<engine::node_id>(t.nodes.size()))
    return nullptr;
  const engine::node_record& n = t.nodes[static_cast<size_t>(id)];
  return n.id == id ? &n : nullptr;
}

bool is_timed(const engine::node_record& n) {
  return n.status == engine::node_status::accepted && n.time.measured();
}

// Returns the fastest accepted node (lowest id on a tie), the root included.
engine::node_id fastest_accepted(const std::vector<engine::node_record>& nodes) {
  engine::node_id best = engine::no_node;
  double best_ms = 0;
  for (const engine::node_record& n : nodes)
    if (is_timed(n) && (best == engine::no_node || n.time.median_ms < best_ms)) {
      best = n.id;
      best_ms = n.time.median_ms;
    }
  return best;
}

engine::expected<std::vector<task_view>> read_tasks(const memory::store& store) {
  auto states = store.tasks();
  if (!states)
    return tl::unexpected(states.error());
  std::vector<task_view> views;
  for (memory::task_state& state : *states) {
    task_view view;
    auto nodes = store.nodes(state.name);
    if (!nodes)
      return tl::unexpected(nodes.error());
    view.nodes = std::move(*nodes);
    view.state = std::move(state);
    // The diagnoses of profiled nodes, for the report's list of them.
    for (const engine::node_record& n : view.nodes) {
      auto detail = store.detail(view.state.name, n.id);
      if (!detail)
        return tl::unexpected(detail.error());
      if (*detail)
        if (auto used = vendor_libraries_of((*detail)->verify_json); !used.empty())
          view.vendor[n.id] = std::move(used);
      if (!*detail || (*detail)->profile_json.empty() || (*detail)->diagnosis_json.empty())
        continue;
      json::error_code ec;
      json::value d = json::parse((*detail)->diagnosis_json, ec);
      if (ec || !d.is_object() || !d.as_object().contains("text"))
        continue;
      const json::object& o = d.as_object();
      std::string bound = o.contains("bound") && o.at("bound").is_string()
                              ? std::string(o.at("bound").as_string())
                              : "undiagnosed";
      view.profiled[n.id] = {bound, std::string(o.at("text").as_string())};
    }
    if (node_at(view, view.state.winner) != nullptr) {
      view.best = view.state.winner;
      view.declared = true;
    } else {
      view.best = fastest_accepted(view.nodes);
    }
    views.push_back(std::move(view));
  }
  return views;
}

// Returns the node ids from the root down to `id`, walking parents (never looping).
std::vector<engine::node_id> lineage_of(const task_view& t, engine::node_id id) {
  std::vector<engine::node_id> ids;
  for (const engine::node_record* n = node_at(t, id); n != nullptr && ids.size() <= t.nodes.size();
       n = node_at(t, n->parent))
    ids.push_back(n->id);
  std::reverse(ids.begin(), ids.end());
  return ids;
}

std::array<int64_t, engine::status_count> count_statuses(const task_view& t) {
  std::array<int64_t, engine::status_count> counts{};
  for (const engine::node_record& n : t.nodes) {
    auto s = static_cast<int32_t>(n.status);
    if (s >= 0 && s < engine::status_count)
      ++counts[static_cast<size_t>(s)];
  }
  return counts;
}

int64_t count_in_flight(const task_view& t) {
  return std::count_if(t.nodes.begin(), t.nodes.end(),
                       [](const engine::node_record& n) { return !engine::is_final(n); });
}

/// The numbers of a task's headline: reference and best times, speedup, roofline share.
struct headline {
  double reference_ms = 0;
  double best_ms = 0;
  double speedup = 0;
  double fraction_of_roofline = 0;
};

headline headline_of(const task_view& t) {
  headline h;
  h.reference_ms = t.state.reference_median_ms;
  if (h.reference_ms <= 0 && !t.nodes.empty() && t.nodes.front().time.measured())
    h.reference_ms = t.nodes.front().time.median_ms;
  const engine::node_record* best = node_at(t, t.best);
  if (best == nullptr)
    return h;
  // The declared winner's time comes from the interleaved re-timing of the finalists.
  h.best_ms =
      t.declared && t.state.winner_median_ms > 0 ? t.state.winner_median_ms : best->time.median_ms;
  if (h.reference_ms > 0 && h.best_ms > 0)
    h.speedup = h.reference_ms / h.best_ms;
  if (t.state.roofline_floor_ms > 0 && h.best_ms > 0)
    h.fraction_of_roofline = t.state.roofline_floor_ms / h.best_ms;
  else
    h.fraction_of_roofline = best->fraction_of_roofline;
  return h;
}

/// The torch baselines as the writer uses them, and whether they come from another GPU.
struct torch_context {
  const torch_baselines* baselines = nullptr;
  std::string device_note; ///< non-empty: measured on another GPU than the campaign's
};

// Returns the names of the campaign's GPUs, from the environment the campaign record keeps.
std::vector<std::string> gpu_names_of(const std::optional<memory::campaign_record>& campaign) {
  std::vector<std::string> names;
  if (!campaign)
    return names;
  boost::system::error_code ec;
  json::value env = json::parse(campaign->environment, ec);
  if (ec || !env.is_object())
    return names;
  if (const json::value* gpus = env.get_object().if_contains("gpus"); gpus && gpus->is_array())
    for (const json::value& g : gpus->get_array())
      if (g.is_object())
        if (const json::value* name = g.get_object().if_contains("name"); name && name->is_string())
          names.emplace_back(name->get_string());
  return names;
}

torch_context torch_context_of(const torch_baselines* baselines,
                               const std::optional<memory::campaign_record>& campaign) {
  torch_context c;
  c.baselines = baselines;
  if (baselines != nullptr)
    c.device_note = device_mismatch(*baselines, gpu_names_of(campaign));
  return c;
}

torch_comparison torch_of(const torch_context& c, const task_view& t, const headline& h) {
  const engine::node_record* best = node_at(t, t.best);
  return compare_with_torch(c.baselines, t.state.name, h.best_ms,
                            best != nullptr ? &best->time : nullptr);
}

// The modes of torch that `tc`'s best trails beyond the noise, with by how much (0.06: 6%
// slower), for results.json, report.md and the console.
std::vector<std::pair<std::string, double>> torch_trails(const torch_comparison& tc) {
  std::vector<std::pair<std::string, double>> trails;
  if (tc.trails_eager_beyond_noise)
    trails.emplace_back("eager", 1 / tc.speedup_vs_eager - 1);
  if (tc.trails_compile_beyond_noise)
    trails.emplace_back("compile", 1 / tc.speedup_vs_compile - 1);
  return trails;
}

/// The geomeans of a campaign's speedups, each over the tasks that have that speedup.
struct campaign_geomeans {
  double vs_reference = 0;
  double vs_eager = 0;
  double vs_compile = 0;
  int64_t tasks_vs_reference = 0;
  int64_t tasks_vs_eager = 0;
  int64_t tasks_vs_compile = 0;
};

campaign_geomeans geomeans_of(const std::vector<task_view>& tasks, const torch_context& c) {
  std::vector<double> reference;
  std::vector<double> eager;
  std::vector<double> compiled;
  for (const task_view& t : tasks) {
    headline h = headline_of(t);
    torch_comparison tc = torch_of(c, t, h);
    if (h.speedup > 0)
      reference.push_back(h.speedup);
    if (tc.speedup_vs_eager > 0)
      eager.push_back(tc.speedup_vs_eager);
    if (tc.speedup_vs_compile > 0)
      compiled.push_back(tc.speedup_vs_compile);
  }
  return {geometric_mean(reference),          geometric_mean(eager),
          geometric_mean(compiled),           static_cast<int64_t>(reference.size()),
          static_cast<int64_t>(eager.size()), static_cast<int64_t>(compiled.size())};
}

// -- formatting ------------------------------------------------------------------------------

std::string plan_text(const engine::plan& p) {
  std::string text = "`" + engine::plan_key(p) + "`";
  if (!p.description.empty())
    text += ": " + p.description;
  return text;
}

// -- results.json ----------------------------------------------------------------------------

// [{"torch": "compile", "slower_by": 0.06}, ...]: where the best trails torch beyond the noise.
json::array trails_json(const std::vector<std::pair<std::string, double>>& trails) {
  json::array out;
  for (const auto& [mode, by] : trails)
    out.push_back(json::object{{"torch", mode}, {"slower_by", by}});
  return out;
}

engine::expected<json::object> task_json(const memory::store& store, const task_view& t,
                                         const torch_context& torch) {
  json::array nodes;
  for (const engine::node_record& n : t.nodes) {
    auto detail = store.detail(t.state.name, n.id);
    if (!detail)
      return tl::unexpected(detail.error());
    nodes.push_back(report::node_json(n, *detail));
  }
  json::object counts;
  auto per_status = count_statuses(t);
  for (int32_t s = 0; s < engine::status_count; ++s)
    counts[engine::to_string(static_cast<engine::node_status>(s))] =
        per_status[static_cast<size_t>(s)];

  headline h = headline_of(t);
  torch_comparison tc = torch_of(torch, t, h);
  json::value winner = nullptr;
  if (const engine::node_record* best = node_at(t, t.best)) {
    json::array lineage;
    for (engine::node_id id : lineage_of(t, t.best)) {
      json::object step = report::plan_json(node_at(t, id)->plan);
      step["node"] = id;
      lineage.push_back(std::move(step));
    }
    winner = json::object{{"node", best->id},
                          {"declared", t.declared},
                          {"median_ms", h.best_ms},
                          {"speedup", h.speedup},
                          {"fraction_of_roofline", h.fraction_of_roofline},
                          {"source_hash", best->source_hash},
                          {"file", "best/" + file_name_of(t.state.name) + ".cu"},
                          {"lineage", std::move(lineage)}};
    if (auto used = t.vendor.find(best->id); used != t.vendor.end())
      winner.as_object()["vendor_libraries"] = json_strings(used->second);
  }
  return json::object{
      {"name", t.state.name},
      {"manifest", t.state.manifest},
      {"state", engine::to_string(t.state.phase)},
      {"stop_reason", t.state.stop_reason},
      {"stop_text", t.state.stop_text},
      // The task's cost and home card place it on its GPU's roofline (report.html).
      {"reference", json::object{{"median_ms", h.reference_ms},
                                 {"roofline_floor_ms", t.state.roofline_floor_ms},
                                 {"flops", t.state.cost_flops},
                                 {"bytes", t.state.cost_bytes},
                                 {"home_gpu", t.state.home_gpu}}},
      {"winner", std::move(winner)},
      // The best time against torch's (the campaign's baselines file; null without one, for
      // a task absent from it or whose entry holds an error: torch_note says which).
      {"torch_eager_ms", positive_or_null(tc.eager_ms)},
      {"torch_compile_ms", positive_or_null(tc.compile_ms)},
      {"speedup_vs_eager", positive_or_null(tc.speedup_vs_eager)},
      {"speedup_vs_compile", positive_or_null(tc.speedup_vs_compile)},
      {"torch_note", tc.note.empty() ? json::value(nullptr) : json::value(tc.note)},
      {"slower_than_torch", trails_json(torch_trails(tc))},
      {"counts", std::move(counts)},
      {"in_flight", count_in_flight(t)},
      {"nodes", std::move(nodes)},
  };
}

// Writes `v` indented by two spaces per level, followed by a newline.
void pretty(std::ostream& out, const json::value& v, int indent = 0) {
  std::string pad(static_cast<size_t>(indent) * 2, ' ');
  std::string inner(static_cast<size_t>(indent + 1) * 2, ' ');
  if (v.is_object() && !v.get_object().empty()) {
    out << "{\n";
    bool first = true;
    for (const auto& member : v.get_object()) {
      out << (first ? "" : ",\n") << inner << encode::serialize(json::value(member.key())) << ": ";
      pretty(out, member.value(), indent + 1);
      first = false;
    }
    out << "\n" << pad << "}";
  } else if (v.is_array() && !v.get_array().empty()) {
    out << "[\n";
    bool first = true;
    for (const json::value& element : v.get_array()) {
      out << (first ? "" : ",\n") << inner;
      pretty(out, element, indent + 1);
      first = false;
    }
    out << "\n" << pad << "]";
  } else {
    out << encode::serialize(v);
  }
}

// -- report.md -------------------------------------------------------------------------------

void write_task_section(std::ostream& out, const task_view& t, const torch_context& torch) {
  headline h = headline_of(t);
  out << "\n## " << t.state.name << "\n\n";
  out << "- state: " << engine::to_string(t.state.phase);
  if (!t.state.stop_reason.empty())
    out << " (" << t.state.stop_reason
        << (t.state.stop_text.empty() ? std::string() : ": " + t.state.stop_text) << ")";
  out << "\n";
  out << "- reference time: " << format_ms(h.reference_ms) << "\n";
  out << "- best time: " << format_ms(h.best_ms)
      << (t.best != engine::no_node && !t.declared ? " (best so far, not yet re-timed)" : "");
  if (auto used = t.vendor.find(t.best); used != t.vendor.end())
    out << " (uses " << gpu::vendor_library_names(used->second)
        << ": not its own kernels alone; bench.allow_vendor_libraries)";
  out << "\n";
  out << "- speedup: " << format_ratio(h.speedup, "x") << "\n";
  out << "- fraction of the roofline: " << format_percent(h.fraction_of_roofline);
  if (t.state.roofline_floor_ms > 0)
    out << " (floor " << format_ms(t.state.roofline_floor_ms) << ")";
  out << "\n";
  if (torch.baselines != nullptr) {
    torch_comparison tc = torch_of(torch, t, h);
    out << "- torch: eager " << format_ms(tc.eager_ms) << " ("
        << format_ratio(tc.speedup_vs_eager, "x") << "), torch.compile " << format_ms(tc.compile_ms)
        << " (" << format_ratio(tc.speedup_vs_compile, "x") << ")";
    if (!tc.note.empty())
      out << "; " << tc.note;
    for (const auto& [mode, by] : torch_trails(tc))
      out << "; **slower than torch " << mode << " by " << format_percent(by)
          << ", beyond the noise**";
    out << "\n";
  }

  auto counts = count_statuses(t);
  out << "- nodes: " << t.nodes.size();
  std::string sep = " (";
  for (int32_t s = 0; s < engine::status_count; ++s)
    if (counts[static_cast<size_t>(s)] > 0) {
      out << sep << engine::to_string(static_cast<engine::node_status>(s)) << " "
          << counts[static_cast<size_t>(s)];
      sep = ", ";
    }
  out << (sep == ", " ? ")" : "") << "\n";

  if (t.best == engine::no_node) {
    out << "\nNo kernel has been timed yet.\n";
    return;
  }
  out << "\nWinning lineage (`best/" << file_name_of(t.state.name) << ".cu`):\n\n";
  int64_t step = 1;
  for (engine::node_id id : lineage_of(t, t.best)) {
    const engine::node_record& n = *node_at(t, id);
    out << step++ << ". " << plan_text(n.plan) << " (node " << n.id << ", "
        << format_ms(n.time.median_ms);
    if (h.reference_ms > 0 && n.time.measured())
      out << ", " << format_ratio(h.reference_ms / n.time.median_ms, "x");
    if (auto used = t.vendor.find(id); used != t.vendor.end())
      out << ", uses " << gpu::vendor_library_names(used->second);
    out << ")\n";
  }
  if (!t.profiled.empty()) {
    out << "\nDiagnoses of the profiled nodes (results.json has their counters and evidence):\n\n";
    for (const auto& [id, diagnosis] : t.profiled)
      out << "- node " << id << ", " << diagnosis.first << ": " << diagnosis.second << "\n";
  }
}

// Writes what the speedups of the table are measured against, and the torch baselines' origin.
void write_speedup_basis(std::ostream& out, const torch_context& torch) {
  out << "\nspeedup: the best kernel's median time against the task's reference kernel, timed "
         "on the same GPU.";
  if (const torch_baselines* b = torch.baselines) {
    out << " vs eager, vs compile: torch " << (b->torch_version.empty() ? "?" : b->torch_version)
        << "'s eager and torch.compile (mode " << b->compile_mode
        << ") medians over the best kernel's, from `" << b->source.string() << "`, measured on "
        << b->device << (b->date.empty() ? "" : " on " + b->date)
        << " with the bench worker's method (L2 flushed, CUDA events, inputs uniform on [0, 1)).";
    if (!torch.device_note.empty())
      out << "\n\n**Warning: " << torch.device_note << ".**";
  }
  out << " Geomeans are over the tasks that have the ratio.\n";
}

// Lists the tasks whose best is slower than torch beyond the noise (none: says so), so that
// a reader of the table does not take a 0.97x for a loss or miss a real one.
void write_torch_trails(std::ostream& out, const std::vector<task_view>& tasks,
                        const torch_context& torch) {
  if (torch.baselines == nullptr)
    return;
  std::ostringstream list;
  int64_t count = 0;
  for (const task_view& t : tasks)
    for (const auto& [mode, by] : torch_trails(torch_of(torch, t, headline_of(t)))) {
      list << (count++ == 0 ? "" : ", ") << t.state.name << " (torch " << mode << ", "
           << format_percent(by) << ")";
    }
  out << "\nSlower than torch beyond the noise (the best's p10 above torch's p90): "
      << (count == 0 ? std::string("none") : std::to_string(count) + ": " + list.str()) << ".\n";
}

std::string report_text(const std::optional<memory::campaign_record>& campaign,
                        const std::vector<task_view>& tasks, const torch_context& torch) {
  std::ostringstream out;
  out << "# kernelskill campaign report\n\n";
  if (campaign)
    out << "Started " << campaign->started_at << "; run " << campaign->runs
        << " time(s). The environment (GPUs, driver, CUDA, clocks) is in results.json.\n";
  const bool with_torch = torch.baselines != nullptr;
  out << "\n| task | state | reference | best | speedup | "
      << (with_torch ? "vs eager | vs compile | " : "") << "roofline | nodes |\n"
      << (with_torch ? "|---|---|---|---|---|---|---|---|---|\n"
                     : "|---|---|---|---|---|---|---|\n");
  for (const task_view& t : tasks) {
    headline h = headline_of(t);
    out << "| " << t.state.name << " | " << engine::to_string(t.state.phase) << " | "
        << format_ms(h.reference_ms) << " | " << format_ms(h.best_ms) << " | "
        << format_ratio(h.speedup, "x") << " | ";
    if (with_torch) {
      torch_comparison tc = torch_of(torch, t, h);
      out << format_ratio(tc.speedup_vs_eager, "x") << " | "
          << format_ratio(tc.speedup_vs_compile, "x") << " | ";
    }
    out << format_percent(h.fraction_of_roofline) << " | " << t.nodes.size() << " |\n";
  }
  campaign_geomeans g = geomeans_of(tasks, torch);
  out << "| **geomean** | | | | " << format_ratio(g.vs_reference, "x") << " | ";
  if (with_torch)
    out << format_ratio(g.vs_eager, "x") << " | " << format_ratio(g.vs_compile, "x") << " | ";
  out << " | |\n";
  write_speedup_basis(out, torch);
  write_torch_trails(out, tasks, torch);
  for (const task_view& t : tasks)
    write_task_section(out, t, torch);
  return out.str();
}

/// Returns the model usage the model service kept beside the store (<output>/llm_usage.json,
/// agents/usage_file.hpp); nullopt for a campaign whose agents used no model.
std::optional<agents::usage_record> model_usage_of(const memory::store& store) {
  auto usage = agents::read_usage(store.dir().parent_path() / "llm_usage.json");
  return usage ? *usage : std::nullopt;
}

json::object usage_totals_json(const agents::usage_totals& u) {
  return json::object{{"requests", u.requests},
                      {"input_tokens", u.input_tokens},
                      {"output_tokens", u.output_tokens},
                      {"tokens", u.input_tokens + u.output_tokens},
                      {"cost", u.cost}};
}

// Adds "llm" to results.json: the model's use in total (requests, tokens, cost, retries) and
// per task; null for a campaign whose agents used no model.
void add_model_usage(json::object& doc, const memory::store& store) {
  std::optional<agents::usage_record> usage = model_usage_of(store);
  if (!usage) {
    doc["llm"] = nullptr;
    return;
  }
  const agents::gateway_stats& s = usage->stats;
  json::object total = usage_totals_json(s.total);
  total["backend"] = usage->backend;
  total["model"] = usage->model;
  total["attempts"] = s.attempts;
  total["retries"] = s.retries;
  total["failed"] = s.failed;
  total["refused"] = s.refused;
  total["cancelled"] = s.cancelled;
  total["budget_spent"] =
      s.budget_spent.empty() ? json::value(nullptr) : json::value(s.budget_spent);
  doc["llm"] = std::move(total);
  for (json::value& t : doc["tasks"].as_array()) {
    json::object& task = t.as_object();
    const json::value* name = task.if_contains("name");
    auto found = name != nullptr && name->is_string()
                     ? s.by_task.find(std::string(name->as_string()))
                     : s.by_task.end();
    task["llm"] = found == s.by_task.end() ? json::value(nullptr)
                                           : json::value(usage_totals_json(found->second));
  }
}

// Returns report.md's lines on the model's use; empty when the agents used no model.
std::string model_usage_text(const memory::store& store) {
  std::optional<agents::usage_record> usage = model_usage_of(store);
  if (!usage)
    return {};
  const agents::gateway_stats& s = usage->stats;
  std::ostringstream out;
  out << "\n## Model\n\n"
      << "- " << usage->backend << " backend, model " << usage->model << ": " << s.total.requests
      << " requests answered (" << s.retries << " retries, " << s.failed << " failed, " << s.refused
      << " refused by a budget)\n"
      << "- tokens: " << s.total.input_tokens << " in, " << s.total.output_tokens << " out; cost "
      << s.total.cost << " at the configured prices\n";
  for (const auto& [task, u] : s.by_task)
    out << "- " << (task.empty() ? std::string("(no task)") : task) << ": " << u.requests
        << " requests, " << u.input_tokens + u.output_tokens << " tokens, cost " << u.cost << "\n";
  if (!s.budget_spent.empty())
    out << "- " << s.budget_spent << "\n";
  out << "\nEvery request's prompt and reply: `transcripts/<task>/`.\n";
  return out.str();
}

// Adds "gpu_stability" (the stability monitor's gpu_stability.json beside the store, or null)
// and "warnings" (its sentences: which GPU was unstable, how much, when) to results.json.
void add_gpu_stability(json::object& doc, const memory::store& store) {
  report::gpu_stability_notes notes = report::read_gpu_stability(store.dir().parent_path());
  doc["gpu_stability"] = notes.present ? json_or_text(notes.json_text) : json::value(nullptr);
  json::array warnings;
  for (const std::string& w : notes.warnings)
    warnings.emplace_back(w);
  doc["warnings"] = std::move(warnings);
}

// Returns the text of results.json: the campaign, then every task with its nodes.
engine::expected<std::string> results_text(const memory::store& store,
                                           const std::optional<memory::campaign_record>& campaign,
                                           const std::vector<task_view>& tasks,
                                           const torch_context& torch) {
  json::array tasks_json;
  for (const task_view& t : tasks) {
    auto tj = task_json(store, t, torch);
    if (!tj)
      return tl::unexpected(tj.error());
    tasks_json.push_back(std::move(*tj));
  }
  json::object doc{{"format", "kernelskill-results"}, {"version", 1}};
  if (campaign)
    doc["campaign"] = json::object{{"started_at", campaign->started_at},
                                   {"runs", campaign->runs},
                                   {"environment", json_or_text(campaign->environment)},
                                   {"config_text", campaign->config_text}};
  else
    doc["campaign"] = nullptr;
  if (const torch_baselines* b = torch.baselines)
    doc["torch_baselines"] =
        json::object{{"file", b->source.string()},
                     {"device", b->device},
                     {"torch_version", b->torch_version},
                     {"date", b->date},
                     {"compile_mode", b->compile_mode},
                     {"device_matches", torch.device_note.empty()},
                     {"device_note", torch.device_note.empty() ? json::value(nullptr)
                                                               : json::value(torch.device_note)}};
  else
    doc["torch_baselines"] = nullptr;
  campaign_geomeans g = geomeans_of(tasks, torch);
  doc["geomeans"] = json::object{{"speedup", positive_or_null(g.vs_reference)},
                                 {"speedup_vs_eager", positive_or_null(g.vs_eager)},
                                 {"speedup_vs_compile", positive_or_null(g.vs_compile)},
                                 {"tasks_with_speedup", g.tasks_vs_reference},
                                 {"tasks_vs_eager", g.tasks_vs_eager},
                                 {"tasks_vs_compile", g.tasks_vs_compile}};
  doc["tasks"] = std::move(tasks_json);
  add_model_usage(doc, store);
  add_gpu_stability(doc, store);
  std::ostringstream results;
  pretty(results, doc);
  results << "\n";
  return results.str();
}

} // namespace

engine::expected<void> write_campaign_outputs(const memory::store& store,
                                              const fs::path& output_dir,
                                              const torch_baselines* baselines) {
  auto campaign = store.campaign();
  if (!campaign)
    return tl::unexpected(campaign.error());
  auto tasks = read_tasks(store);
  if (!tasks)
    return tl::unexpected(tasks.error());

  std::error_code ec;
  fs::create_directories(output_dir / "best", ec);
  if (ec)
    return engine::fail(engine::errc::io,
                        "cannot create " + (output_dir / "best").string() + ": " + ec.message());

  for (const task_view& t : *tasks) {
    const engine::node_record* best = node_at(t, t.best);
    if (best == nullptr || best->source_hash.empty())
      continue;
    auto source = store.source(best->source_hash);
    if (!source)
      return tl::unexpected(source.error());
    if (!*source)
      continue; // recorded but not stored: nothing to copy
    if (auto written =
            write_atomically(output_dir / "best" / (file_name_of(t.state.name) + ".cu"), **source);
        !written)
      return written;
  }

  torch_context torch = torch_context_of(baselines, *campaign);
  auto results = results_text(store, *campaign, *tasks, torch);
  if (!results)
    return tl::unexpected(results.error());
  if (auto written = write_atomically(output_dir / "results.json", *results); !written)
    return written;
  if (auto written =
          write_atomically(output_dir / "report.md",
                           report_text(*campaign, *tasks, torch) + model_usage_text(store) +
                               report::gpu_stability_markdown(
                                   report::read_gpu_stability(store.dir().parent_path())));
      !written)
    return written;
  return report::write_report_html(output_dir, *results);
}

engine::expected<std::string> campaign_results_json(const memory::store& store,
                                                    const torch_baselines* baselines) {
  auto campaign = store.campaign();
  if (!campaign)
    return tl::unexpected(campaign.error());
  auto tasks = read_tasks(store);
  if (!tasks)
    return tl::unexpected(tasks.error());
  return results_text(store, *campaign, *tasks, torch_context_of(baselines, *campaign));
}

engine::expected<std::string> describe_campaign(const memory::store& store,
                                                const torch_baselines* baselines) {
  auto campaign = store.campaign();
  if (!campaign)
    return tl::unexpected(campaign.error());
  auto tasks = read_tasks(store);
  if (!tasks)
    return tl::unexpected(tasks.error());

  std::ostringstream out;
  if (*campaign)
    out << "campaign started " << (*campaign)->started_at << ", run " << (*campaign)->runs
        << " time(s)\n";
  else
    out << "campaign: no campaign record (never started?)\n";
  int64_t done = 0;
  for (const task_view& t : *tasks)
    done += engine::is_end(t.state.phase) ? 1 : 0;
  out << tasks->size() << " task(s), " << done << " finished\n";

  // The torch columns sit after speedup, and only when the campaign has baselines.
  torch_context torch = torch_context_of(baselines, *campaign);
  const bool with_torch = baselines != nullptr;
  auto torch_columns = [&](const std::string& eager, const std::string& compiled) {
    char text[64];
    std::snprintf(text, sizeof text, " %9s %10s", eager.c_str(), compiled.c_str());
    return with_torch ? std::string(text) : std::string();
  };
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %-10s %6s %9s %11s %11s %8s%s %8s  %s\n", "task", "phase",
                "nodes", "in flight", "reference", "best", "speedup",
                torch_columns("vs eager", "vs compile").c_str(), "roofline", "stop");
  out << line;
  for (const task_view& t : *tasks) {
    headline h = headline_of(t);
    torch_comparison tc = torch_of(torch, t, h);
    std::string stop = t.state.stop_reason;
    std::snprintf(line, sizeof line, "%-20s %-10s %6lld %9lld %11s %11s %8s%s %8s  %s\n",
                  t.state.name.c_str(), engine::to_string(t.state.phase),
                  static_cast<long long>(t.nodes.size()),
                  static_cast<long long>(count_in_flight(t)), format_ms(h.reference_ms).c_str(),
                  format_ms(h.best_ms).c_str(), format_ratio(h.speedup, "x").c_str(),
                  torch_columns(format_ratio(tc.speedup_vs_eager, "x"),
                                format_ratio(tc.speedup_vs_compile, "x"))
                      .c_str(),
                  format_percent(h.fraction_of_roofline).c_str(), stop.c_str());
    out << line;
  }
  campaign_geomeans g = geomeans_of(*tasks, torch);
  std::snprintf(
      line, sizeof line, "%-20s %-10s %6s %9s %11s %11s %8s%s\n", "geomean", "", "", "", "", "",
      format_ratio(g.vs_reference, "x").c_str(),
      torch_columns(format_ratio(g.vs_eager, "x"), format_ratio(g.vs_compile, "x")).c_str());
  out << line;
  if (!torch.device_note.empty())
    out << "warning: " << torch.device_note << "\n";
  // The GPUs' stability (gpu_stability.json): said while the campaign runs, as it is written.
  report::gpu_stability_notes stability = report::read_gpu_stability(store.dir().parent_path());
  for (const std::string& w : stability.warnings)
    out << "warning: " << w << "\n";
  if (stability.unreliable)
    out << "RESULTS UNRELIABLE: a GPU stayed unstable past bench.stability_limit_s\n";
  return out.str();
}

} // namespace ks::report
