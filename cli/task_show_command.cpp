// `kernelskill task show`: a task as the engine sees it once its manifest is loaded. A family
// manifest of fifteen lines derives its cost and torch expression (docs/tasks.md); this shows
// what they became, for a person (text) and for programs that need the engine's reading
// rather than their own (--json; tools/torch_baselines.py takes the torch expressions and the
// inputs it times from it, so the tool and the engine never disagree on a manifest).
//
// The JSON form: {"tasks": [{"name", "family", "about", "manifest", "reference", "torch",
// "inputs": [{"name", "dtype", "shape", "init", "low", "high"}], "outputs": [{"name",
// "dtype", "shape"}], "cost": {"flops", "bytes"}, "tolerance": {"atol", "rtol",
// "norm_rel"}}]}, in the order the paths name them (a folder's manifests sorted by name);
// "torch" is null when the task has none, "low" and "high" appear for randint inputs only.
// "module" is null, or the manifest's module table: {"file", "sha256", "source", "entry",
// "init", "arguments": [{"input", "dtype"} or {"value"}], "parameters": {NAME: INPUT},
// "outputs"} (tools/torch_baselines.py times the module instead of "torch" when there is one).
// "graph" is null, or for a graph task {"main": NODE, "nodes": [{"name", "family", "inputs",
// "outputs", "torch"}], "views": [{"name", "of", "kind", "args", "shape"}], "intermediates":
// [{"name", "dtype", "shape"}]}.

#include "cli/task_show_command.hpp"

#include "cli/environment.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "engine/graph_spec.hpp"
#include "engine/task_manifest.hpp"
#include "json/encode.hpp"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <iostream>

namespace ks::cli {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

json::array tensors_json(const std::vector<engine::tensor_spec>& specs, bool inputs) {
  json::array out;
  for (const engine::tensor_spec& s : specs) {
    json::array shape;
    for (int64_t d : s.shape)
      shape.push_back(d);
    json::object o{{"name", s.name}, {"dtype", engine::to_string(s.type)}, {"shape", shape}};
    if (inputs) {
      o["init"] = engine::to_string(s.init);
      if (s.init == engine::init_kind::randint) {
        o["low"] = s.low;
        o["high"] = s.high;
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

json::array strings_json(const std::vector<std::string>& names) {
  json::array out;
  for (const std::string& name : names)
    out.push_back(json::value(name));
  return out;
}

json::value module_json(const std::optional<engine::module_spec>& m) {
  if (!m)
    return nullptr;
  json::array arguments;
  for (const engine::module_argument& a : m->arguments) {
    json::object o;
    if (!a.unused.empty()) {
      o["unused"] = a.unused;
      json::array shape;
      for (int64_t extent : a.shape)
        shape.emplace_back(extent);
      o["shape"] = std::move(shape);
    } else if (a.input.empty()) {
      o["value"] = a.value;
    } else {
      o["input"] = a.input;
      if (!a.dtype.empty())
        o["dtype"] = a.dtype;
    }
    arguments.push_back(std::move(o));
  }
  json::object parameters;
  for (const auto& [name, input] : m->parameters)
    parameters[name] = input;
  return json::object{{"file", m->file},
                      {"sha256", m->sha256},
                      {"source", m->source},
                      {"entry", m->entry},
                      {"init", m->init},
                      {"arguments", std::move(arguments)},
                      {"parameters", std::move(parameters)},
                      {"outputs", m->outputs},
                      {"eval", m->eval}};
}

json::value graph_json(const engine::task& t) {
  if (t.graph == nullptr)
    return nullptr;
  const engine::graph_spec& g = *t.graph;
  json::array nodes;
  for (const engine::graph_node& n : g.nodes)
    nodes.push_back(json::object{{"name", n.name},
                                 {"family", n.op.family},
                                 {"inputs", strings_json(n.inputs)},
                                 {"outputs", strings_json(n.outputs)},
                                 {"torch", n.op.torch}});
  json::array views;
  for (const engine::graph_view& v : g.views) {
    json::array args;
    json::array shape;
    for (int64_t a : v.args)
      args.push_back(a);
    for (int64_t d : v.tensor.shape)
      shape.push_back(d);
    views.push_back(json::object{{"name", v.name},
                                 {"of", v.of},
                                 {"kind", engine::to_string(v.kind)},
                                 {"args", std::move(args)},
                                 {"shape", std::move(shape)}});
  }
  return json::object{{"main", g.nodes[g.main].name},
                      {"nodes", std::move(nodes)},
                      {"views", std::move(views)},
                      {"intermediates", tensors_json(g.intermediates, false)}};
}

} // namespace

json::object task_show_json(const engine::task& t) {
  return {{"name", t.name},
          {"family", t.family},
          {"about", t.about},
          {"manifest", t.manifest_path.string()},
          {"reference", t.reference_path.string()},
          {"torch", t.torch.empty() ? json::value(nullptr) : json::value(t.torch)},
          {"inputs", tensors_json(t.inputs, true)},
          {"outputs", tensors_json(t.outputs, false)},
          {"cost", json::object{{"flops", t.cost.flops}, {"bytes", t.cost.bytes}}},
          {"tolerance",
           json::object{{"atol", t.tol.atol}, {"rtol", t.tol.rtol}, {"norm_rel", t.tol.norm_rel}}},
          {"module", module_json(t.module)},
          {"graph", graph_json(t)}};
}

namespace {

std::string tensors_text(const std::vector<engine::tensor_spec>& specs, bool inputs) {
  std::string text;
  for (const engine::tensor_spec& s : specs) {
    text += (text.empty() ? "" : ", ") + s.name + ": " + engine::to_string(s.type) + "[";
    for (size_t i = 0; i < s.shape.size(); ++i)
      text += (i ? ", " : "") + std::to_string(s.shape[i]);
    text += "]";
    if (inputs)
      text += " " + std::string(engine::to_string(s.init));
  }
  return text;
}

// Returns the manifests `paths` name: a file as given, a folder's *.toml sorted by name.
tl::expected<std::vector<fs::path>, command_error>
manifests_of(const std::vector<fs::path>& paths) {
  std::vector<fs::path> out;
  for (const fs::path& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (const fs::directory_entry& e : fs::directory_iterator(p, ec))
        if (e.path().extension() == ".toml")
          found.push_back(e.path());
      std::sort(found.begin(), found.end());
      if (found.empty())
        return stop(stop_reason::usage, "'" + p.string() + "' holds no task manifest (*.toml)");
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      return stop(stop_reason::usage, "'" + p.string() + "': no such file or folder");
    }
  }
  return out;
}

} // namespace

CLI::App* add_task_show_command(CLI::App& task, task_show_options& opt) {
  CLI::App* cmd = task.add_subcommand(
      "show",
      "Prints tasks as the engine reads them: what the family derived (cost, torch "
      "expression) and every tensor with its dtype, shape and init. --json prints one document "
      "for programs (tools/torch_baselines.py reads it).");
  cmd->add_option("TASK.toml", opt.paths, "Task manifests, or suite folders (every *.toml)")
      ->required()
      ->type_name("");
  cmd->add_flag("--json", opt.json, "Print one JSON object {\"tasks\": [...]}");
  cmd->footer(exit_code_help(command_codes::task_check(), help_width()));
  return cmd;
}

command_result run_task_show(const task_show_options& opt) {
  auto manifests = manifests_of(opt.paths);
  if (!manifests)
    return tl::unexpected(manifests.error());
  json::array tasks;
  std::string text;
  for (const fs::path& manifest : *manifests) {
    auto task = engine::load_task_manifest(manifest);
    if (!task)
      return stop(stop_reason::task, "cannot load the task manifest '" + manifest.string() +
                                         "':\n" + task.error().message());
    const engine::task& t = *task;
    tasks.push_back(task_show_json(t));
    text += t.name + " (" + t.family + ", " + manifest.string() + ")\n";
    if (!t.about.empty())
      text += "  about:     " + t.about + "\n";
    text += "  inputs:    " + tensors_text(t.inputs, true) + "\n";
    text += "  outputs:   " + tensors_text(t.outputs, false) + "\n";
    text += "  cost:      " + format_number(t.cost.flops, 6) + " flops, " +
            format_number(t.cost.bytes, 6) + " bytes\n";
    text += "  torch:     " + (t.torch.empty() ? std::string("-") : t.torch) + "\n";
    if (t.graph != nullptr) {
      std::string nodes;
      for (size_t i = 0; i < t.graph->nodes.size(); ++i) {
        const engine::graph_node& n = t.graph->nodes[i];
        nodes += (nodes.empty() ? "" : " -> ") + n.name + " (" + n.op.family +
                 (i == t.graph->main ? ", main" : "") + ")";
      }
      text += "  graph:     " + nodes + "\n";
    }
    if (t.module)
      text += "  module:    " + t.module->entry +
              (t.module->file.empty() ? std::string() : " of " + t.module->file) + "\n";
  }
  if (opt.json)
    std::cout << encode::serialize(json::object{{"tasks", std::move(tasks)}}) << "\n";
  else
    std::cout << text;
  std::cout << std::flush;
  return {};
}

} // namespace ks::cli
