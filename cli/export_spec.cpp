// A campaign's output folder read for `kernelskill export`. results.json says which node won
// each task and the content hash of its source; best/<task>.cu holds that source; the
// manifest results.json names states the task. The export promises that the package ships the
// kernel the campaign verified and timed, for the shapes it was verified at, so each of the
// three is checked against the others before anything is written:
//
//   - the kernel: best/<task>.cu hashed as the store hashes a source (gpu::source_hash) must
//     equal the winner's source_hash; a file edited after the campaign is refused, never
//     shipped;
//   - the manifest: it must load (the engine's own loader), name the task, and derive the
//     cost results.json recorded for it (flops and bytes follow from the shapes and dtypes,
//     so a manifest edited to other shapes no longer matches the kernel tuned for the old);
//   - the build: the kernel's nvcc flags are the campaign's (gpu::standard_nvcc_flags for the
//     architecture results.json's environment names, then the source's own ks-flags), so the
//     package builds the binary that was measured.
//
// A task whose winner is its reference (no candidate beat it) is left out unless --task names
// it: a package of kernels slower than what they replace helps nobody.

#include "cli/export_spec.hpp"

#include "base/text.hpp"
#include "cli/environment.hpp"
#include "cli/task_show_command.hpp"
#include "cli/version.hpp"
#include "config/spelling.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "gpu/content_hash.hpp"
#include "json/decode.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

namespace ks::cli {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr std::array<std::string_view, 35> python_keywords = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

const json::value* member(const json::object& o, std::string_view key) {
  return o.if_contains(key);
}

// results.json is ours: a field of the wrong type is a damaged file (decode::malformed, caught
// at plan_export's entry); a missing or null one reads as empty or 0.
std::string text_of(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  return v == nullptr || v->is_null() ? std::string() : decode::string_field(o, key);
}

double number_of(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  return v == nullptr || v->is_null() ? 0.0 : decode::number_field(o, key);
}

const json::object* object_of(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  return v != nullptr && v->is_object() ? &v->as_object() : nullptr;
}

std::string ratio_text(double value) {
  std::ostringstream out;
  out.precision(value >= 10 ? 3 : 2);
  out << std::fixed << value << "x";
  return out.str();
}

/// Reads and checks <output>/results.json; the messages say what the folder holds instead.
tl::expected<json::object, command_error> read_results(const fs::path& output) {
  std::error_code ec;
  if (!fs::exists(output, ec))
    return stop(stop_reason::usage, "export: " + output.string() + ": no such folder");
  if (!fs::is_directory(output, ec))
    return stop(stop_reason::usage,
                "export: " + output.string() + " is not a folder: name a campaign's output folder");
  const fs::path results = output / "results.json";
  if (!fs::is_regular_file(results, ec)) {
    if (fs::is_regular_file(output / "state" / "data.mdb", ec))
      return stop(stop_reason::task,
                  "export: " + output.string() +
                      " holds a campaign's store but no results.json: `kernelskill status " +
                      output.string() + " --export " + output.string() +
                      "` writes results.json and best/ from the store; then export again");
    if (fs::is_directory(output / "dry-run", ec))
      return stop(stop_reason::task,
                  "export: " + output.string() +
                      " holds a dry run only: nothing was measured, so no kernel won. Run the "
                      "campaign on a GPU host (`kernelskill run CONFIG.toml`), then export its "
                      "output folder");
    return stop(stop_reason::task, "export: " + output.string() +
                                       " is no campaign's output folder (no results.json): name "
                                       "the folder a campaign wrote (its campaign.output)");
  }
  auto text = base::read_text(results);
  if (!text)
    return stop(stop_reason::environment, "export: cannot read " + results.string());
  boost::system::error_code jec;
  json::value doc = json::parse(*text, jec);
  if (jec || !doc.is_object() || text_of(doc.as_object(), "format") != "kernelskill-results")
    return stop(stop_reason::task, "export: " + results.string() +
                                       " is not a kernelskill results document" +
                                       (jec ? " (" + jec.message() + ")" : std::string()));
  const json::value* tasks = member(doc.as_object(), "tasks");
  if (tasks == nullptr || !tasks->is_array())
    return stop(stop_reason::task, "export: " + results.string() + " has no tasks");
  return std::move(doc.as_object());
}

/// Returns the task names of results.json, in its order.
std::vector<std::string> task_names(const json::object& results) {
  std::vector<std::string> names;
  for (const json::value& t : member(results, "tasks")->as_array())
    if (t.is_object())
      names.push_back(text_of(t.as_object(), "name"));
  return names;
}

/// Checks that every name of `wanted` is a task of results.json.
command_result check_named(const std::vector<std::string>& wanted,
                           const std::vector<std::string>& names, const fs::path& output) {
  std::vector<std::string_view> known(names.begin(), names.end());
  for (const std::string& name : wanted) {
    if (std::find(names.begin(), names.end(), name) != names.end())
      continue;
    auto close = config::closest(name, known);
    return stop(stop_reason::usage,
                "export: no task '" + name + "' in " + (output / "results.json").string() +
                    (close ? " (did you mean '" + std::string(*close) + "'?)" : std::string()) +
                    "; its tasks: " + config::joined(known));
  }
  return {};
}

/// Finds the manifest of task `name`, recorded at `recorded`: there, or with --manifests in
/// that folder (the same file name, else the manifest that states the task).
tl::expected<engine::task, command_error>
load_manifest(const std::string& name, const fs::path& recorded, const fs::path& folder) {
  std::error_code ec;
  std::vector<fs::path> tries;
  if (folder.empty()) {
    tries.push_back(recorded);
  } else {
    tries.push_back(folder / recorded.filename());
    std::vector<fs::path> others;
    for (const fs::directory_entry& e : fs::directory_iterator(folder, ec))
      if (e.path().extension() == ".toml" && e.path() != tries.front())
        others.push_back(e.path());
    std::sort(others.begin(), others.end());
    tries.insert(tries.end(), others.begin(), others.end());
  }
  for (const fs::path& path : tries) {
    if (!fs::is_regular_file(path, ec))
      continue;
    auto task = engine::load_task_manifest(path);
    if (task && task->name == name)
      return std::move(*task);
    if (path == tries.front() && !task)
      return stop(stop_reason::task, "export: the manifest of task " + name + ", " + path.string() +
                                         ", does not load:\n" + task.error().message());
    if (path == tries.front() && folder.empty())
      return stop(stop_reason::task, "export: " + path.string() + " states task '" + task->name +
                                         "', not '" + name + "' as results.json says");
  }
  if (folder.empty())
    return stop(stop_reason::task,
                "export: the manifest of task " + name + ", " + recorded.string() +
                    ", is not here (a folder copied from another machine?): name the folder "
                    "that holds the manifests now with --manifests DIR");
  return stop(stop_reason::task, "export: no manifest in " + folder.string() + " states task '" +
                                     name + "' (results.json names " + recorded.string() + ")");
}

/// Checks that `task` still derives the cost results.json recorded for it: the shapes and
/// dtypes the kernel was tuned for.
command_result check_cost(const engine::task& task, const json::object& result) {
  const json::object* reference = object_of(result, "reference");
  if (reference == nullptr || member(*reference, "bytes") == nullptr)
    return {}; // a results.json written before the cost was recorded: nothing to compare
  double flops = number_of(*reference, "flops");
  double bytes = number_of(*reference, "bytes");
  auto differs = [](double a, double b) {
    return std::fabs(a - b) > 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
  };
  if (!differs(flops, task.cost.flops) && !differs(bytes, task.cost.bytes))
    return {};
  std::ostringstream out;
  out << "export: the manifest of task " << task.name << ", " << task.manifest_path.string()
      << ", no longer states the task the campaign tuned: it derives " << task.cost.flops
      << " flops and " << task.cost.bytes << " bytes, the campaign recorded " << flops << " and "
      << bytes << " (other shapes or dtypes?); export with the manifest the campaign ran "
      << "(--manifests DIR)";
  return stop(stop_reason::task, out.str());
}

/// Returns the GPU of the environment that timed `result` (its home card), or null.
json::value gpu_of(const json::object& results, const json::object& result) {
  const json::object* campaign = object_of(results, "campaign");
  const json::object* env = campaign != nullptr ? object_of(*campaign, "environment") : nullptr;
  const json::value* gpus = env != nullptr ? member(*env, "gpus") : nullptr;
  if (gpus == nullptr || !gpus->is_array() || gpus->as_array().empty())
    return nullptr;
  double home = 0;
  if (const json::object* reference = object_of(result, "reference"))
    home = number_of(*reference, "home_gpu");
  for (const json::value& g : gpus->as_array())
    if (g.is_object() && number_of(g.as_object(), "index") == home)
      return g;
  return gpus->as_array().front();
}

std::string arch_of(const json::object& results) {
  const json::object* campaign = object_of(results, "campaign");
  const json::object* env = campaign != nullptr ? object_of(*campaign, "environment") : nullptr;
  std::string arch = env != nullptr ? text_of(*env, "arch") : std::string();
  return arch.empty() ? "sm_90a" : arch;
}

/// Returns the summary line of an exported task: its speedups and the GPU that timed them.
std::string summary_of(const json::object& result, const json::value& gpu) {
  const json::object& winner = member(result, "winner")->as_object();
  std::string line = ratio_text(number_of(winner, "speedup")) + " its reference";
  if (double eager = number_of(result, "speedup_vs_eager"); eager > 0)
    line += ", " + ratio_text(eager) + " torch eager";
  if (double compiled = number_of(result, "speedup_vs_compile"); compiled > 0)
    line += ", " + ratio_text(compiled) + " torch.compile";
  if (gpu.is_object() && !text_of(gpu.as_object(), "name").empty())
    line += ", on " + text_of(gpu.as_object(), "name");
  const json::value* declared = member(winner, "declared");
  if (declared != nullptr && declared->is_bool() && !declared->as_bool())
    line += " (best so far: the campaign had not re-timed its finalists)";
  return line;
}

/// Reads the winner of one task into the spec's TASK, or says why it cannot be exported.
tl::expected<json::object, command_error> task_entry(const export_request& r,
                                                     const json::object& results,
                                                     const json::object& result,
                                                     const std::string& name) {
  const json::object& winner = member(result, "winner")->as_object();
  const std::string file = text_of(winner, "file");
  const fs::path relative = fs::path(file).lexically_normal();
  if (file.empty() || relative.is_absolute() || *relative.begin() == "..")
    return stop(stop_reason::task, "export: results.json names no file of its own for the "
                                   "winner of task " +
                                       name + " ('" + file + "')");
  const fs::path kernel = fs::absolute(r.output / relative);
  const std::string rewrite = "`kernelskill status " + r.output.string() + " --export " +
                              r.output.string() + "` rewrites best/ from the store";
  auto source = base::read_text(kernel);
  if (!source)
    return stop(stop_reason::task, "export: " + kernel.string() + ", the winner of task " + name +
                                       ", is missing: " + rewrite);
  const std::string recorded = text_of(winner, "source_hash");
  const std::string actual = gpu::source_hash(*source);
  if (recorded != actual)
    return stop(
        stop_reason::task,
        "export: " + kernel.string() + " is not the kernel the campaign verified for task " + name +
            ": its content hash is " + actual + ", the winner's " + recorded +
            " (edited after the campaign?). The export ships only verified kernels: " + rewrite);
  auto task = load_manifest(name, text_of(result, "manifest"), r.manifests);
  if (!task)
    return tl::unexpected(task.error());
  if (auto same = check_cost(*task, result); !same)
    return tl::unexpected(same.error());
  auto asked = gpu::parse_ks_flags(*source);
  if (!asked)
    return stop(stop_reason::task, "export: " + kernel.string() + ": " + asked.error().message());

  json::object entry = task_show_json(*task);
  entry["op"] = python_identifier(name, "op_");
  entry["kernel"] = kernel.string();
  entry["source_hash"] = recorded;
  json::array flags;
  for (const std::string& flag : gpu::standard_nvcc_flags(arch_of(results)))
    flags.emplace_back(flag);
  for (const std::string& flag : *asked)
    flags.emplace_back(flag);
  entry["nvcc_flags"] = std::move(flags);
  json::object kept = result;
  kept.erase("nodes");
  entry["result"] = std::move(kept);
  entry["gpu"] = gpu_of(results, result);
  return entry;
}

/// Returns kernelskill/abi.h where the compiler finds it: $KS_INCLUDE_DIR, the install tree
/// beside the program, or the sources a build-tree binary was built from.
std::optional<fs::path> abi_header() {
  std::vector<fs::path> folders;
  if (const char* env = std::getenv("KS_INCLUDE_DIR"); env != nullptr && *env != '\0')
    folders.emplace_back(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    folders.push_back(exe.parent_path() / ".." / "include");
  if (fs::path source = include_dir_for_compiler(); !source.empty())
    folders.push_back(source);
  for (const fs::path& folder : folders)
    if (fs::is_regular_file(folder / "kernelskill" / "abi.h", ec))
      return fs::absolute(folder / "kernelskill" / "abi.h").lexically_normal();
  return std::nullopt;
}

/// plan_export() but for the damaged results.json it catches.
tl::expected<export_plan, command_error> plan_from(const export_request& r) {
  auto results = read_results(r.output);
  if (!results)
    return tl::unexpected(results.error());
  const std::vector<std::string> names = task_names(*results);
  if (auto known = check_named(r.tasks, names, r.output); !known)
    return tl::unexpected(known.error());
  std::error_code ec;
  if (!r.manifests.empty() && !fs::is_directory(r.manifests, ec))
    return stop(stop_reason::usage,
                "export: --manifests " + r.manifests.string() + ": no such folder");

  export_plan plan;
  json::array tasks;
  std::set<std::string> ops;
  for (const json::value& t : member(*results, "tasks")->as_array()) {
    if (!t.is_object())
      continue;
    const json::object& result = t.as_object();
    const std::string name = text_of(result, "name");
    const bool named = std::find(r.tasks.begin(), r.tasks.end(), name) != r.tasks.end();
    if (!r.tasks.empty() && !named)
      continue;
    const json::value* winner = member(result, "winner");
    if (winner == nullptr || !winner->is_object()) {
      std::string why = "no winner yet (state " + text_of(result, "state") +
                        ": nothing was timed; `kernelskill status " + r.output.string() +
                        "` says where the campaign stands)";
      if (named)
        return stop(stop_reason::task, "export: task " + name + " has " + why);
      plan.skipped.push_back(name + ": " + why);
      continue;
    }
    const bool reference = number_of(winner->as_object(), "node") == 0;
    if (reference && !named) {
      plan.skipped.push_back(name + ": no candidate beat its reference; `--task " + name +
                             "` exports its reference kernel anyway");
      continue;
    }
    auto entry = task_entry(r, *results, result, name);
    if (!entry)
      return tl::unexpected(entry.error());
    std::string op = text_of(*entry, "op");
    if (!ops.insert(op).second)
      return stop(stop_reason::task, "export: two tasks make the op name '" + op +
                                         "'; export them into two packages (--task)");
    plan.tasks.push_back({name, op, summary_of(result, (*entry)["gpu"]), reference});
    tasks.push_back(std::move(*entry));
  }
  if (tasks.empty()) {
    std::string why;
    for (const std::string& line : plan.skipped)
      why += "\n  " + line;
    return stop(stop_reason::task,
                "export: no task of " + r.output.string() + " has a kernel to export:" + why);
  }

  json::object campaign;
  if (const json::object* c = object_of(*results, "campaign"))
    for (const char* key : {"started_at", "runs", "environment"})
      if (const json::value* v = member(*c, key))
        campaign[key] = *v;
  const json::value* baselines = member(*results, "torch_baselines");
  std::optional<fs::path> abi = abi_header();
  if (!abi)
    return stop(stop_reason::environment,
                "export: cannot find kernelskill/abi.h, which the package's kernels include: set "
                "KS_INCLUDE_DIR to the folder that holds it (include/ of the install tree)");
  plan.spec = json::object{
      {"format", "kernelskill-export-spec"},
      {"version", 1},
      {"package", r.package},
      {"exported_by", version_line()},
      {"output", fs::absolute(r.output).lexically_normal().string()},
      {"campaign", std::move(campaign)},
      {"torch_baselines", baselines != nullptr ? *baselines : json::value(nullptr)},
      {"abi_header", abi->string()},
      {"tasks", std::move(tasks)},
  };
  return plan;
}

} // namespace

std::string python_identifier(const std::string& text, const std::string& prefix) {
  std::string id;
  for (char c : text)
    id += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id.front())) != 0)
    id = prefix + id;
  if (std::find(python_keywords.begin(), python_keywords.end(), id) != python_keywords.end())
    id += '_';
  return id;
}

tl::expected<export_plan, command_error> plan_export(const export_request& r) {
  try {
    return plan_from(r);
  } catch (const decode::malformed& e) {
    return stop(stop_reason::task,
                "export: " + (r.output / "results.json").string() + " is damaged: " + e.what());
  }
}

} // namespace ks::cli
