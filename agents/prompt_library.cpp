#include "agents/prompt_library.hpp"

#include "base/text.hpp"
#include "engine/bounded_context.hpp"
#include "engine/candidate_checks.hpp"
#include "engine/graph_companions.hpp"
#include "engine/graph_reference.hpp"
#include "engine/graph_spec.hpp"
#include "engine/skill.hpp"
#include "engine/skill_template.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <kainjow/mustache.hpp>
#include <set>
#include <sstream>

namespace ks::agents {

namespace fs = std::filesystem;
namespace mustache = kainjow::mustache;
using engine::errc;
using engine::fail;

namespace {

using data = mustache::data;

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", value);
  return buffer;
}

data flag(bool value) {
  return data(value ? data::type::bool_true : data::type::bool_false);
}

/// A text that doubles as a section: false when empty.
data text_or_false(const std::string& text) {
  return text.empty() ? flag(false) : data(text);
}

data list_of(const std::vector<data>& items) {
  data out(data::type::list);
  for (const data& d : items)
    out.push_back(d);
  return out;
}

std::string param_text(const engine::param_value& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v))
    return number(*d);
  if (const auto* b = std::get_if<bool>(&v))
    return *b ? "true" : "false";
  return std::get<std::string>(v);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t d : shape)
    text += (text.empty() ? "" : " x ") + std::to_string(d);
  return text.empty() ? "scalar" : text;
}

data tensors(const std::vector<engine::tensor_spec>& specs) {
  std::vector<data> items;
  for (const engine::tensor_spec& t : specs) {
    data item(data::type::object);
    item.set("name", t.name);
    item.set("dtype", engine::to_string(t.type));
    item.set("shape", shape_text(t.shape));
    items.push_back(item);
  }
  return list_of(items);
}

std::string names_text(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

/// Returns the graph of a graph task as the prompts show it: its nodes in order (family,
/// tensors, params), its intermediates and its views; false for any other task.
data graph_data(const engine::task& t) {
  if (t.graph == nullptr)
    return flag(false);
  const engine::graph_spec& g = *t.graph;
  std::vector<data> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const engine::graph_node& n = g.nodes[i];
    std::string params;
    for (const auto& [name, value] : n.op.params)
      params += (params.empty() ? "" : "; ") + name + " = " + param_text(value);
    data item(data::type::object);
    item.set("name", n.name);
    item.set("family", n.op.family);
    item.set("inputs", names_text(n.inputs));
    item.set("outputs", names_text(n.outputs));
    item.set("params", params);
    item.set("has_params", flag(!params.empty()));
    item.set("main", flag(i == g.main));
    nodes.push_back(item);
  }
  std::vector<data> views;
  for (const engine::graph_view& v : g.views) {
    std::string args;
    for (int64_t a : v.args)
      args += (args.empty() ? "" : ", ") + std::to_string(a);
    data item(data::type::object);
    item.set("name", v.name);
    item.set("of", v.of);
    item.set("how", std::string(engine::to_string(v.kind)) + "(" + args + ")");
    item.set("shape", shape_text(v.tensor.shape));
    views.push_back(item);
  }
  data out(data::type::object);
  out.set("nodes", list_of(nodes));
  out.set("node_count", std::to_string(g.nodes.size()));
  out.set("main_node", g.nodes[g.main].name);
  out.set("intermediates", tensors(g.intermediates));
  out.set("has_intermediates", flag(!g.intermediates.empty()));
  out.set("views", list_of(views));
  out.set("has_views", flag(!views.empty()));
  return out;
}

data task_data(const engine::task& t) {
  data out(data::type::object);
  out.set("name", t.name);
  out.set("family", t.family);
  out.set("about", t.about);
  out.set("inputs", tensors(t.inputs));
  out.set("outputs", tensors(t.outputs));
  std::vector<data> params;
  for (const auto& [name, value] : t.params) {
    data p(data::type::object);
    p.set("name", name);
    p.set("value", param_text(value));
    params.push_back(p);
  }
  out.set("params", list_of(params));
  out.set("has_params", flag(!params.empty()));
  out.set("graph", graph_data(t));
  data tolerance(data::type::object);
  tolerance.set("atol", number(t.tol.atol));
  tolerance.set("rtol", number(t.tol.rtol));
  tolerance.set("norm_rel", number(t.tol.norm_rel));
  out.set("tolerance", tolerance);
  data cost(data::type::object);
  cost.set("flops", number(t.cost.flops));
  cost.set("bytes", number(t.cost.bytes));
  out.set("cost", cost);
  return out;
}

data gpu_data(const engine::task& t, const std::string& name, const std::string& arch,
              double peak_gbps, double peak_gflops) {
  data out(data::type::object);
  out.set("name", name);
  out.set("named", flag(!name.empty()));
  out.set("arch", arch.empty() ? std::string("unknown") : arch);
  bool known = peak_gbps > 0 || peak_gflops > 0;
  out.set("known", flag(known));
  out.set("peak_gbps", number(peak_gbps));
  out.set("peak_gflops", number(peak_gflops));
  out.set("floor_ms", number(engine::roofline_floor_ms(t.cost, peak_gbps, peak_gflops)));
  return out;
}

data steps(const std::vector<engine::plan>& lineage) {
  std::vector<data> items;
  for (const engine::plan& p : lineage) {
    data step(data::type::object);
    step.set("step", p.skill == "reference" ? std::string("the reference") : engine::plan_key(p));
    step.set("description", p.description);
    items.push_back(step);
  }
  return list_of(items);
}

data anti_patterns(const engine::skill& s) {
  std::vector<data> items;
  for (const std::string& a : s.anti_patterns) {
    data item(data::type::object);
    item.set("text", a);
    items.push_back(item);
  }
  return list_of(items);
}

data skill_data(const engine::skill& s) {
  data out(data::type::object);
  out.set("id", s.id);
  out.set("title", s.title);
  out.set("guidance", s.guidance);
  out.set("anti_patterns", anti_patterns(s));
  out.set("has_anti_patterns", flag(!s.anti_patterns.empty()));
  out.set("effect", s.effect.empty() ? std::string("not stated") : s.effect);
  return out;
}

data outcomes(const std::vector<engine::plan_outcome>& tried) {
  std::vector<data> items;
  for (const engine::plan_outcome& o : tried) {
    data item(data::type::object);
    item.set("plan", engine::plan_key(o.plan));
    item.set("description", o.plan.description);
    item.set("outcome", engine::to_string(o.outcome));
    item.set("failure_kind", text_or_false(o.failure_kind));
    item.set("gain", o.gain != 0 ? data(number(o.gain)) : flag(false));
    items.push_back(item);
  }
  return list_of(items);
}

data plan_data(const engine::plan& p) {
  data out(data::type::object);
  out.set("skill", p.skill);
  out.set("description", p.description.empty() ? engine::plan_key(p) : p.description);
  out.set("key", engine::plan_key(p));
  out.set("template", p.template_name);
  std::vector<data> params;
  for (const auto& [name, value] : p.params) {
    data item(data::type::object);
    item.set("name", name);
    item.set("value", value);
    params.push_back(item);
  }
  out.set("params", list_of(params));
  return out;
}

const engine::skill* find_skill(const engine::backend_context& context, const std::string& id) {
  return context.skills != nullptr ? context.skills->find(id) : nullptr;
}

/// Sets "skill" and "has_skill" for the plan's skill, and its template rendered with the
/// plan's params as "starting_point" when that works (for a graph task: rendered for its main
/// node and composed with the other nodes' sources, as the offline coder composes them).
void set_plan_skill(data& root, const engine::plan& p, const engine::task& subject,
                    const std::string& reference_source, const engine::backend_context& context) {
  const engine::task& target = engine::search_target(subject);
  const std::string& target_reference =
      &target == &subject ? reference_source : target.reference_source;
  const engine::skill* s = find_skill(context, p.skill);
  root.set("has_skill", flag(s != nullptr));
  root.set("skill", s != nullptr ? skill_data(*s) : data(data::type::object));
  std::string start;
  const engine::skill_template* t =
      s != nullptr && !p.template_name.empty() ? s->find_template(p.template_name) : nullptr;
  if (t != nullptr) {
    engine::param_values values;
    bool numeric = true;
    for (const auto& [name, value] : p.params) {
      char* end = nullptr;
      long long v = std::strtoll(value.c_str(), &end, 10);
      numeric = numeric && end != value.c_str() && *end == '\0';
      values[name] = v;
    }
    if (numeric)
      if (auto rendered = engine::render(*s, *t, target, values, target_reference)) {
        start = std::move(*rendered);
        if (&target != &subject) {
          std::map<size_t, std::string> sources =
              context.skills != nullptr ? engine::graph_companion_sources(*context.skills, subject)
                                        : std::map<size_t, std::string>{};
          sources[subject.graph->main] = std::move(start);
          auto composed = engine::compose_graph(subject, sources);
          start = composed ? std::move(*composed) : std::string();
        }
      }
  }
  root.set("has_starting_point", flag(!start.empty()));
  root.set("starting_point", start);
}

std::string first_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      return line;
  return text;
}

} // namespace

const std::vector<std::string>& prompt_library::file_names() {
  static const std::vector<std::string> names = {
      "system.md", "_task.md", "planner.md", "coder.md", "repairer.md", "distiller.md", "retry.md"};
  return names;
}

engine::expected<prompt_library> prompt_library::load(const fs::path& dir) {
  prompt_library out;
  out.dir_ = dir;
  for (const std::string& name : file_names()) {
    fs::path path = dir / name;
    std::optional<std::string> text = base::read_text(path);
    if (!text)
      return fail(errc::not_found, "the prompt folder " + dir.string() + " has no " + name +
                                       " (agents.prompts names the folder; \"\" for the "
                                       "installed one)");
    if (auto problem = engine::template_limit_error(*text))
      return fail(errc::invalid_input,
                  path.string() + ": " + problem->second + " at " + std::to_string(problem->first));
    mustache::mustache tmpl(*text);
    if (!tmpl.is_valid())
      return fail(errc::invalid_input, path.string() + ": " + tmpl.error_message());
    out.texts_[name] = std::move(*text);
  }
  return out;
}

namespace {

engine::expected<std::string> render_one(const std::map<std::string, std::string>& texts,
                                         const fs::path& dir, const std::string& name, data root) {
  root.set("_task", data(texts.at("_task.md")));
  mustache::mustache tmpl(texts.at(name));
  tmpl.set_custom_escape([](const std::string& text) { return text; });
  engine::render_budget budget(texts.at(name).size());
  engine::bounded_context context(&root, budget);
  std::string text;
  try {
    text = tmpl.render(context);
  } catch (const engine::render_limit_reached& limit) {
    return fail(errc::invalid_input, (dir / name).string() + ": " + limit.what);
  }
  if (!tmpl.is_valid())
    return fail(errc::invalid_input, (dir / name).string() + ": " + tmpl.error_message());
  if (!context.missing().empty()) {
    std::string names;
    for (const std::string& n : context.missing())
      names += (names.empty() ? "{{" : ", {{") + n + "}}";
    return fail(errc::invalid_input, (dir / name).string() + " uses " + names + ", which the " +
                                         name.substr(0, name.find('.')) +
                                         "'s prompt does not provide (docs/agents.md lists the "
                                         "names)");
  }
  return text;
}

engine::expected<std::vector<chat_message>> chat(const std::map<std::string, std::string>& texts,
                                                 const fs::path& dir, const std::string& role,
                                                 const data& root) {
  data system_root = root;
  auto system = render_one(texts, dir, "system.md", system_root);
  if (!system)
    return tl::unexpected(system.error());
  auto user = render_one(texts, dir, role + ".md", root);
  if (!user)
    return tl::unexpected(user.error());
  return std::vector<chat_message>{{"system", std::move(*system)}, {"user", std::move(*user)}};
}

data common(const std::string& role, const engine::task& subject, const std::string& gpu_name,
            double peak_gbps, double peak_gflops, const engine::backend_context& context) {
  data root(data::type::object);
  root.set("role", role);
  root.set("task", task_data(subject));
  root.set("gpu", gpu_data(subject, gpu_name, context.arch, peak_gbps, peak_gflops));
  root.set("abi", context.abi_header.empty() ? std::string("(see kernelskill/abi.h)")
                                             : context.abi_header);
  return root;
}

} // namespace

engine::expected<std::vector<chat_message>>
prompt_library::planner(const engine::planning_request& request,
                        const engine::backend_context& context) const {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "a planning request without a task");
  data root = common("planner", *request.subject, request.gpu_name, request.peak_gbps,
                     request.peak_gflops, context);
  root.set("reference_source", request.reference_source);
  data parent(data::type::object);
  parent.set("id", std::to_string(request.parent));
  parent.set("source", request.parent_source);
  parent.set("lineage", steps(request.parent_lineage));
  parent.set("measured", flag(request.parent_time.measured()));
  parent.set("median_ms", number(request.parent_time.median_ms));
  parent.set("p10_ms", number(request.parent_time.p10_ms));
  parent.set("p90_ms", number(request.parent_time.p90_ms));
  parent.set("trials", std::to_string(request.parent_time.trials));
  parent.set("fraction_of_roofline", number(request.parent_fraction_of_roofline));
  root.set("parent", parent);
  const engine::diagnosis& d = request.diagnosis;
  data diagnosis(data::type::object);
  diagnosis.set("diagnosed", flag(d.diagnosed));
  diagnosis.set("bound", engine::to_string(d.bound));
  diagnosis.set("text", d.text);
  diagnosis.set("registers", std::to_string(d.registers));
  diagnosis.set("spills", std::to_string(d.spill_bytes));
  std::vector<data> evidence;
  for (const engine::metric_evidence& e : d.evidence) {
    data item(data::type::object);
    item.set("metric", e.metric);
    item.set("value", number(e.value));
    item.set("relation", e.relation);
    item.set("threshold", number(e.threshold));
    evidence.push_back(item);
  }
  diagnosis.set("evidence", list_of(evidence));
  root.set("diagnosis", diagnosis);
  std::vector<data> skills;
  for (const engine::retrieved_skill& r : request.skills) {
    const engine::skill* s = find_skill(context, r.id);
    if (s == nullptr)
      continue;
    data item = skill_data(*s);
    item.set("why", r.why);
    item.set("demoted", flag(r.demoted));
    item.set("tries", std::to_string(r.stats.tries));
    item.set("acceptances", std::to_string(r.stats.acceptances));
    item.set("best_speedup",
             r.stats.best_speedup > 0 ? number(r.stats.best_speedup) : std::string("none yet"));
    std::vector<data> templates;
    // A graph task's skills apply to its main node, over that node's reference.
    const engine::task& target = engine::search_target(*request.subject);
    const std::string& reference =
        &target == request.subject ? request.reference_source : target.reference_source;
    for (const engine::skill_template& t : s->templates) {
      data td(data::type::object);
      td.set("name", t.name);
      std::vector<data> params;
      auto space = engine::space_of(t, target, reference);
      // The defaults for this task: a parameter's prefer, where it has one.
      engine::param_values defaults =
          space ? engine::preferred_defaults(t, *space, target) : engine::param_values{};
      if (space)
        for (const engine::param_space& p : *space) {
          std::string values;
          for (int64_t v : p.values)
            values += (values.empty() ? "" : ", ") + std::to_string(v);
          data pd(data::type::object);
          pd.set("name", p.name);
          pd.set("values", values);
          pd.set("default", std::to_string(defaults.at(p.name)));
          params.push_back(pd);
        }
      td.set("params", list_of(params));
      td.set("has_params", flag(!params.empty()));
      templates.push_back(td);
    }
    item.set("templates", list_of(templates));
    skills.push_back(item);
  }
  root.set("skills", list_of(skills));
  root.set("tried", outcomes(request.tried));
  bool any = !request.tried.empty();
  std::vector<data> branch;
  for (const engine::ancestor_memory& a : request.branch) {
    data item(data::type::object);
    item.set("node", std::to_string(a.node));
    item.set("tried", outcomes(a.tried));
    any = any || !a.tried.empty();
    branch.push_back(item);
  }
  root.set("branch", list_of(branch));
  root.set("has_tried", flag(any));
  root.set("count", std::to_string(request.count));
  return chat(texts_, dir_, "planner", root);
}

engine::expected<std::vector<chat_message>>
prompt_library::coder(const engine::coding_request& request,
                      const engine::backend_context& context) const {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "a coding request without a task");
  data root = common("coder", *request.subject, "", 0, 0, context);
  root.set("plan", plan_data(request.plan));
  std::vector<engine::plan> before = request.lineage;
  if (!before.empty())
    before.pop_back(); // the plan itself is "this change"
  root.set("lineage", steps(before));
  root.set("parent_source", request.parent_source);
  root.set("reference_source", request.reference_source);
  set_plan_skill(root, request.plan, *request.subject, request.reference_source, context);
  return chat(texts_, dir_, "coder", root);
}

engine::expected<std::vector<chat_message>>
prompt_library::repairer(const engine::repair_request& request,
                         const engine::backend_context& context) const {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "a repair request without a task");
  data root = common("repairer", *request.subject, "", 0, 0, context);
  root.set("plan", plan_data(request.plan));
  root.set("source", request.source);
  root.set("failure_kind", request.failure_kind);
  root.set("compile_error", flag(request.failure_kind == "compile_error"));
  // Only the candidate's own lines of a compile error reach the model: nvcc quotes the lines
  // of any file the candidate made it read (engine/candidate_checks.hpp).
  root.set("error_text", engine::own_diagnostics(request.error_text));
  std::vector<data> history;
  for (const engine::repair_round& r : request.history) {
    data item(data::type::object);
    item.set("round", std::to_string(r.round));
    item.set("error_first_line", first_line(engine::own_diagnostics(r.error_text)));
    item.set("diagnosis", r.diagnosis);
    item.set("fix_summary", r.fix_summary);
    history.push_back(item);
  }
  root.set("history", list_of(history));
  root.set("has_history", flag(!history.empty()));
  const engine::skill* s = find_skill(context, request.plan.skill);
  root.set("has_skill", flag(s != nullptr));
  root.set("skill", s != nullptr ? skill_data(*s) : data(data::type::object));
  return chat(texts_, dir_, "repairer", root);
}

engine::expected<std::vector<chat_message>>
prompt_library::distiller(const distill_request& request,
                          const engine::backend_context& context) const {
  if (request.subject == nullptr)
    return fail(errc::invalid_input, "a distill request without a task");
  data root = common("distiller", *request.subject, request.gpu_name, request.peak_gbps,
                     request.peak_gflops, context);
  std::vector<data> lineage;
  for (const lineage_step& s : request.lineage) {
    data item(data::type::object);
    item.set("step", engine::plan_key(s.plan));
    item.set("description", s.plan.description + " (gain " + number(s.gain) + ")");
    lineage.push_back(item);
  }
  root.set("lineage", list_of(lineage));
  root.set("winner_source", request.winner_source);
  root.set("reference_source", request.reference_source);
  root.set("speedup", number(request.speedup));
  std::vector<data> existing;
  for (const std::string& id : request.existing_ids) {
    data item(data::type::object);
    item.set("id", id);
    existing.push_back(item);
  }
  root.set("existing", list_of(existing));
  root.set("template_file", std::string(distilled_template_file));
  return chat(texts_, dir_, "distiller", root);
}

engine::expected<std::string> prompt_library::retry(std::string_view error) const {
  data root(data::type::object);
  root.set("error", std::string(error));
  return render_one(texts_, dir_, "retry.md", root);
}

fs::path default_prompts_dir() {
  if (const char* env = std::getenv("KS_PROMPTS_DIR"); env != nullptr && *env != '\0')
    return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed =
        (exe.parent_path() / ".." / "share" / "kernelskill" / "prompts").lexically_normal();
    if (fs::is_directory(installed, ec))
      return installed;
  }
#ifdef KS_SOURCE_DIR
  return fs::path(KS_SOURCE_DIR) / "agents" / "prompts";
#else
  return "prompts";
#endif
}

} // namespace ks::agents
