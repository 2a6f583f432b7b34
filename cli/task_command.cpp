// `kernelskill task check` and `kernelskill task new`: adding an op of one's own.
//
// `check` goes as far as a campaign would before it needs a GPU, for one manifest: the
// loader's checks (every problem as FILE:LINE:COL), then what the loader cannot see because it
// does not read the reference: each tunable must be an overridable macro of the reference
// (#ifndef NAME / #define NAME DEFAULT) with its default among the listed values, or the
// planner fails on the task; then the reference is compiled, its diagnostics naming its file.
//
// Then the manifest's warnings (engine/task_warnings.hpp): a hand-written reference beside a
// family's params, tensors the target GPU cannot hold. They do not fail the manifest unless
// --strict says so.
//
// `new` writes the skeleton engine/task_skeleton.hpp makes for the family: a family manifest
// that passes `check` and runs in a campaign as it is, or for custom a manifest and a
// hand-written reference (an elementwise copy, y = x), with comments that say what to change.

#include "cli/task_command.hpp"

#include "base/text.hpp"
#include "cli/arch_check.hpp"
#include "cli/calibration_cache.hpp"
#include "cli/command_line.hpp"
#include "cli/config_loading.hpp"
#include "cli/environment.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "engine/task_manifest.hpp"
#include "engine/task_skeleton.hpp"
#include "engine/task_warnings.hpp"
#include "gpu/compiler.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

std::string shown(const fs::path& path) {
  std::error_code ec;
  fs::path base = fs::current_path(ec);
  if (!ec) {
    fs::path relative = path.lexically_relative(base);
    if (!relative.empty() && *relative.begin() != "..")
      return relative.string();
  }
  return path.string();
}

/// Where a word first appears in a text, 1-based.
struct position {
  int64_t line = 1;
  int64_t column = 1;
};

// Returns the position of `word` in `text` at or after `from`, or of `from` when it is absent.
position position_of(const std::string& text, const std::string& word, size_t from = 0) {
  size_t at = text.find(word, from);
  if (at == std::string::npos)
    at = std::min(from, text.size());
  position p;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

std::string at(const fs::path& file, position p) {
  return file.string() + ":" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": ";
}

/// The default a reference gives an overridable macro, and where.
struct macro_default {
  int64_t value = 0;
  int64_t line = 0;
};

// Finds `#ifndef NAME` followed by `#define NAME VALUE` (an integer) in `source`.
std::optional<macro_default> default_of(const std::string& source, const std::string& name) {
  std::regex guard("^[ \\t]*#[ \\t]*ifndef[ \\t]+" + name + "\\b");
  std::regex define("^[ \\t]*#[ \\t]*define[ \\t]+" + name + "[ \\t]+\\(?[ \\t]*(-?[0-9]+)");
  std::istringstream lines(source);
  std::string line;
  bool guarded = false;
  int64_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (std::regex_search(line, guard)) {
      guarded = true;
      continue;
    }
    std::smatch m;
    if (guarded && std::regex_search(line, m, define))
      return macro_default{std::stoll(m[1].str()), number};
  }
  return std::nullopt;
}

// Returns the problems of `t`'s tunables, one FILE:LINE:COL line each (FILE the manifest).
std::vector<std::string> tunable_problems(const engine::task& t, const fs::path& manifest,
                                          const std::string& manifest_text,
                                          const std::string& reference) {
  std::vector<std::string> problems;
  size_t section = manifest_text.find("tunables");
  for (const auto& [name, values] : t.tunables) {
    position p = position_of(manifest_text, name, section == std::string::npos ? 0 : section);
    std::optional<macro_default> d = default_of(reference, name);
    if (!d) {
      problems.push_back(
          at(manifest, p) + "tunable " + name + " is not an overridable macro of " +
          (t.reference_source.empty() ? shown(t.reference_path) : engine::reference_name(t)) +
          ": the planner would fail on it; give it a "
          "default there (#ifndef " +
          name + " / #define " + name + " VALUE / #endif) or remove it");
      continue;
    }
    if (std::find(values.begin(), values.end(), d->value) == values.end())
      problems.push_back(at(manifest, p) + "tunable " + name + ": the reference's default " +
                         std::to_string(d->value) + " (" + shown(t.reference_path) + ":" +
                         std::to_string(d->line) +
                         ") is not among its values; list it, so "
                         "that the search starts from the reference");
  }
  return problems;
}

// -- task new ---------------------------------------------------------------------------------

// Returns the --family help: the engine's families, then custom.
std::string family_help() {
  std::string names;
  for (const std::string& f : engine::skeleton_families())
    if (f != engine::custom_family)
      names += (names.empty() ? "" : ", ") + f;
  return "Op family: one of " + names +
         " (docs/tasks.md: a family manifest, its reference rendered from the family's params), "
         "or custom (an op no family states: a manifest beside a hand-written reference)";
}

// Returns the --shape help: what the values mean per family (families that read them alike
// share a line), and each default.
std::string shape_help() {
  std::vector<std::pair<std::string, std::string>> meanings; // meaning (default) -> families
  for (const std::string& f : engine::skeleton_families()) {
    std::optional<engine::skeleton_shape> s = engine::skeleton_shape_of(f);
    if (!s)
      continue;
    std::string fallback;
    for (int64_t d : s->fallback)
      fallback += (fallback.empty() ? "" : ",") + std::to_string(d);
    std::string meaning = s->meaning + " (default " + fallback + ")";
    auto same = std::find_if(meanings.begin(), meanings.end(),
                             [&](const auto& m) { return m.first == meaning; });
    if (same == meanings.end())
      meanings.emplace_back(meaning, f);
    else
      same->second += ", " + f;
  }
  std::string text = "The shape the op works on, by family:";
  for (const auto& [meaning, families] : meanings)
    text += " " + families + ": " + meaning + ";";
  text.back() = '.';
  return text;
}

bool write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

} // namespace

task_commands add_task_command(CLI::App& app, task_options& opt) {
  const size_t width = help_width();
  CLI::App* task = app.add_subcommand(
      "task", "Adds an op of your own. `task new` writes a manifest to start from (for a family "
              "of docs/tasks.md, or with a hand-written reference), `task check` checks a "
              "manifest as a campaign would, without a GPU.");
  task->require_subcommand(1);
  task->footer(exit_code_help(command_codes::task_check(), width));

  task_commands out;
  out.check = task->add_subcommand(
      "check",
      "Checks task manifests. It goes as far as a campaign goes before it needs a GPU: every key "
      "and value (each problem as FILE:LINE:COL: message), that each tunable is an overridable "
      "macro of the reference with its default among the listed values, and that the "
      "reference compiles (nvcc, for --arch; its diagnostics name the reference's file and "
      "line). Then it warns (FILE:LINE:COL: warning: ...) of a hand-written reference beside a "
      "family's params, which the skills write their candidates from, and of tensors the GPU "
      "cannot hold in the bench worker: the GPU with the least memory that `devices`, `eval` or "
      "`profile` recorded in the calibration cache, else --gpu-memory, else an assumed 80 GB. "
      "Prints \"ok\" and what the task holds for each good manifest.");
  out.check->add_option("TASK.toml", opt.manifests, "Task manifests (TOML)")
      ->required()
      ->type_name("");
  out.check->add_flag("--no-compile", opt.no_compile, "Do not compile the reference");
  out.check->add_flag("--strict", opt.strict, "A warning fails the manifest (exit 2)");
  out.check->add_option("--arch", opt.arch, "nvcc architecture the reference is compiled for")
      ->capture_default_str()
      ->type_name("SM");
  out.check
      ->add_option("--gpu-memory", opt.gpu_memory_gb,
                   "Memory of the GPU the tasks will run on, in GB (10^9 bytes); default: the "
                   "calibration cache's smallest GPU, else 80 GB assumed")
      ->check(within(0.001, 1e6, "GB"))
      ->type_name("GB");
  out.check
      ->add_option("--cache-dir", opt.cache_dir,
                   "Compile and calibration cache folder (default: $XDG_CACHE_HOME/kernelskill "
                   "or ~/.cache/kernelskill)")
      ->type_name("DIR");
  out.check->footer(exit_code_help(command_codes::task_check(), width));

  out.create = task->add_subcommand(
      "new",
      "Writes a new task to start from, which checks, compiles and runs in a campaign as it "
      "is. For a family of docs/tasks.md, DIR/NAME.toml: a family manifest whose tensors "
      "follow --shape, whose params are set (each explained in a comment) and whose reference "
      "is rendered from them; set the params and shapes. For --family custom, an op no family "
      "states, DIR/NAME.toml and DIR/NAME_ref.cu: a manifest without a family's params and a "
      "hand-written elementwise reference (a copy: y = x); write your operator where it says "
      "so. Then `kernelskill task check DIR/NAME.toml`.");
  out.create->add_option("NAME", opt.name, "The task's name: lowercase letters, digits and _")
      ->required()
      ->type_name("");
  out.create->add_option("--family", opt.family, family_help())
      ->capture_default_str()
      ->type_name("FAMILY");
  out.create->add_option("--dir", opt.dir, "Folder to write the files into (created)")
      ->capture_default_str()
      ->type_name("DIR");
  out.create->add_option("--shape", opt.shape, shape_help())
      ->delimiter(',')
      ->expected(1, 8)
      ->check(within(1, 1099511627776.0, ""))
      ->type_name("N,N,...");
  out.create->add_flag("--force", opt.force, "Overwrite the files if they exist");
  out.create->footer(exit_code_help(command_codes::task_new(), width));
  return out;
}

command_result run_task_check(const task_options& opt) {
  std::optional<gpu::compiler> compiler;
  if (!opt.no_compile) {
    if (auto ok = check_arch(opt.arch); !ok)
      return ok;
    gpu::compiler_options copt;
    copt.arch = opt.arch;
    copt.cache_dir = cache_dir_or_default(opt.cache_dir);
    copt.include_dir = include_dir_for_compiler();
    auto made = gpu::compiler::create(copt);
    if (!made)
      return stop(stop_reason::environment,
                  "cannot compile the references: " + made.error().message() +
                      "\n  (--no-compile checks the manifests alone)");
    compiler = std::move(*made);
  }

  // The GPU the tensors must fit, before a GPU is needed.
  const engine::gpu_memory gpu =
      memory_target(cache_dir_or_default(opt.cache_dir),
                    opt.gpu_memory_gb > 0 ? std::optional(opt.gpu_memory_gb) : std::nullopt);
  int64_t bad = 0;
  int64_t warned = 0;
  for (const fs::path& manifest : opt.manifests) {
    std::optional<std::string> text = base::read_text(manifest);
    if (!text)
      return stop(stop_reason::usage,
                  "cannot read the task manifest '" + manifest.string() +
                      "': " + (fs::exists(manifest) ? "not a readable file" : "no such file"));
    auto task = engine::load_task_manifest(manifest);
    if (!task) {
      // One FILE:LINE:COL line per problem on stdout, unprefixed, as `config --check` does.
      const std::string& message = task.error().message();
      std::string hint = other_kind_hint(manifest, "task");
      std::cout << message << (message.ends_with('\n') ? "" : "\n")
                << (hint.empty() ? "" : "  (" + hint + ")\n");
      ++bad;
      continue;
    }
    // A reference rendered from the task's family is named after its template, at `family`.
    bool rendered = !task->reference_source.empty();
    position reference_at = position_of(*text, rendered ? "family" : "reference");
    std::string reference_name =
        rendered ? engine::reference_name(*task) : shown(task->reference_path);
    std::optional<std::string> reference =
        rendered ? std::optional(task->reference_source) : base::read_text(task->reference_path);
    if (!reference) {
      std::cout << at(manifest, reference_at) << "cannot read the reference " << reference_name
                << "\n";
      ++bad;
      continue;
    }
    std::vector<std::string> problems = tunable_problems(*task, manifest, *text, *reference);
    std::string compiled;
    if (compiler) {
      gpu::compile_request request;
      request.source = *reference;
      request.label =
          rendered ? task->name + " reference" : task->reference_path.filename().string();
      request.source_name = rendered ? task->name + "_reference.cu" : shown(task->reference_path);
      gpu::compile_result r = compiler->compile(request);
      if (!r.ok) {
        std::string diagnostics = r.diagnostics;
        while (!diagnostics.empty() && diagnostics.back() == '\n')
          diagnostics.pop_back();
        problems.push_back(at(manifest, reference_at) + "the reference " + reference_name +
                           " does not compile for " + opt.arch +
                           (r.timed_out ? " (nvcc timed out)" : "") + "; nvcc says:\n" +
                           diagnostics);
      } else {
        compiled =
            std::string(", its reference compiles for ") + opt.arch + (r.cached ? " (cached)" : "");
      }
    }
    for (const std::string& p : problems)
      std::cout << p << "\n";
    std::vector<engine::task_warning> warnings = engine::task_warnings(*task, gpu);
    for (const engine::task_warning& w : warnings)
      std::cout << engine::located(manifest.string(), w) << "\n";
    warned += warnings.empty() ? 0 : 1;
    if (!problems.empty() || (opt.strict && !warnings.empty())) {
      ++bad;
      continue;
    }
    int64_t tunable_count = static_cast<int64_t>(task->tunables.size());
    auto warning_count = static_cast<int64_t>(warnings.size());
    std::cout << "ok: " << task->name << " (" << manifest.string() << "): family " << task->family
              << ", " << task->inputs.size()
              << (task->inputs.size() == 1 ? " input, " : " inputs, ") << task->outputs.size()
              << (task->outputs.size() == 1 ? " output, " : " outputs, ") << tunable_count
              << (tunable_count == 1 ? " tunable" : " tunables") << compiled
              << (warning_count == 0   ? ""
                  : warning_count == 1 ? "; 1 warning (above)"
                                       : "; " + std::to_string(warning_count) + " warnings (above)")
              << "\n";
  }
  std::cout << std::flush;
  if (bad > 0)
    return stop(
        stop_reason::task,
        std::to_string(bad) + " of " + std::to_string(opt.manifests.size()) +
            (opt.manifests.size() == 1 ? " manifest" : " manifests") +
            (opt.strict && warned > 0 ? " cannot run or warned with --strict" : " cannot run") +
            " (see above)");
  return {};
}

command_result run_task_new(const task_options& opt) {
  static const std::regex valid_name("[a-z0-9_]+");
  if (!std::regex_match(opt.name, valid_name))
    return stop(stop_reason::usage, "task new: '" + opt.name +
                                        "' is not a task name: lowercase letters, digits and _ "
                                        "only (e.g. gelu, layer_norm_4k)");
  auto skeleton = engine::make_task_skeleton(opt.name, opt.family, opt.shape);
  if (!skeleton)
    return stop(stop_reason::usage, "task new: " + skeleton.error().message());
  std::error_code ec;
  for (const engine::skeleton_file& f : skeleton->files)
    if (fs::path file = opt.dir / f.name; fs::exists(file, ec) && !opt.force)
      return stop(stop_reason::usage, "task new: " + file.string() +
                                          " exists; pass --force to overwrite it, or choose "
                                          "another NAME or --dir");
  fs::create_directories(opt.dir, ec);
  if (ec)
    return stop(stop_reason::environment,
                "task new: cannot create " + opt.dir.string() + ": " + ec.message());
  std::string written;
  for (const engine::skeleton_file& f : skeleton->files) {
    if (!write_text(opt.dir / f.name, f.text))
      return stop(stop_reason::environment, "task new: cannot write into " + opt.dir.string());
    written += (written.empty() ? "" : " and ") + (opt.dir / f.name).string();
  }
  fs::path manifest = opt.dir / skeleton->files.front().name;
  bool custom = opt.family == engine::custom_family;
  std::cout << "wrote " << written << ": " << skeleton->what << "\n"
            << "next:\n";
  if (custom)
    std::cout << "  1. write your operator in " << (opt.dir / skeleton->files.back().name).string()
              << " (\"your operator\"), and the\n"
              << "     shapes, tolerance and cost in " << manifest.string() << "\n";
  else
    std::cout << "  1. set the params and the shapes in " << manifest.string()
              << " (each param is explained there;\n"
              << "     the reference, cost and torch expression are derived from them)\n";
  std::cout << "  2. kernelskill task check " << manifest.string() << "\n"
            << "  3. add \"" << fs::absolute(manifest).lexically_normal().string()
            << "\" to campaign.tasks of a config\n"
            << "     (kernelskill config --defaults > my.toml), then kernelskill run my.toml "
               "--dry-run\n"
            << std::flush;
  return {};
}

} // namespace ks::cli
