// `kernelskill task check` and `kernelskill task new`: adding an op of one's own.
//
// `check` goes as far as a campaign would before it needs a GPU, for one manifest: the
// loader's checks (every problem as FILE:LINE:COL), then what the loader cannot see because it
// does not read the reference: each tunable must be an overridable macro of the reference
// (#ifndef NAME / #define NAME DEFAULT) with its default among the listed values, or the
// planner fails on the task; then the reference is compiled, its diagnostics naming its file.
//
// `new` writes a manifest and a reference that pass `check` and run in a campaign as they
// are (an elementwise copy, y = x), with comments that say what to change.

#include "cli/task_command.hpp"

#include "base/text.hpp"
#include "cli/arch_check.hpp"
#include "cli/command_line.hpp"
#include "cli/config_loading.hpp"
#include "cli/environment.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
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

// Writes a float as TOML wants it ("1048576.0", "4.294967296e+09").
std::string toml_float(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%.10g", x);
  std::string out = text;
  if (out.find_first_of(".e") == std::string::npos)
    out += ".0";
  return out;
}

std::string manifest_text(const task_options& opt) {
  int64_t elements = 1;
  std::string shape;
  std::string shape_words;
  for (int64_t d : opt.shape) {
    elements *= d;
    shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    shape_words += (shape_words.empty() ? "" : " x ") + std::to_string(d);
  }
  const std::string& n = opt.name;
  std::ostringstream out;
  out << "# " << n << ": written by `kernelskill task new`. To make it your op:\n"
      << "#   1. " << n << "_ref.cu: write the operator where it says \"your operator\"; keep it\n"
      << "#      simple and obviously correct: it is what every candidate is verified and timed\n"
      << "#      against.\n"
      << "#   2. here: the inputs and outputs (in the order ks_forward gets them), the tolerance\n"
      << "#      and the cost; tasks/README.md explains every key.\n"
      << "#   3. kernelskill task check " << n << ".toml   (no GPU needed)\n"
      << "name = \"" << n << "\"\n"
      << "family = \"" << opt.family << "\"\n"
      << "about = \"" << n << ", " << shape_words << " fp32 (say what it computes)\"\n"
      << "reference = \"" << n << "_ref.cu\"\n"
      << "inputs = [\n"
      << "  { name = \"x\", dtype = \"f32\", shape = [" << shape << "], init = \"normal\" },\n"
      << "]\n"
      << "outputs = [\n"
      << "  { name = \"y\", dtype = \"f32\", shape = [" << shape << "] },\n"
      << "]\n"
      << (opt.family == "elementwise"
              ? "# params: the op as an expression over the inputs (docs/tasks.md): skills write\n"
                "# kernels from it, so keep it what the reference computes (\"x\" is the copy).\n"
                "# Without `reference`, the reference is rendered from it.\n"
                "params = { op = \"x\" }\n"
              : "")
      << "# tolerance: float32 defaults; an op that loses precision by nature may loosen atol or\n"
      << "# rtol, never norm_rel past ~1e-5 (that would let TF32 or fp16 shortcuts pass)\n"
      << "tolerance = { atol = 1e-5, rtol = 1e-5, norm_rel = 1e-5 }\n"
      << "# cost: flops = one operation per element (" << elements << "); bytes = x read once\n"
      << "# and y written once, 4 bytes each. Count your op's useful flops per element.\n"
      << "cost = { flops = " << toml_float(static_cast<double>(elements))
      << ", bytes = " << toml_float(8.0 * static_cast<double>(elements)) << " }\n"
      << "# tunables: launch parameters of the reference that the offline planner varies\n"
      << "tunables = { KS_BLOCK_THREADS = [64, 128, 256, 512, 1024], KS_MAX_BLOCKS = [1024, "
         "4096, 16384, 1048576] }\n";
  return out.str();
}

std::string reference_text(const task_options& opt) {
  std::ostringstream out;
  out << "// Reference of task " << opt.name << " (written by `kernelskill task new`): y = op(x),\n"
      << "// elementwise, x and y float32 of the same shape, contiguous. One thread per element\n"
      << "// in a grid-stride loop with 64-bit indices. As written it copies x (y = x): write\n"
      << "// your operator where it says so. It is the judge of every candidate: keep it simple\n"
      << "// and obviously correct (accumulate in double where order matters).\n"
      << "//\n"
      << "// Return codes: 0 ok; 1 n_inputs != 1; 2 n_outputs != 1; 3 a tensor is not f32;\n"
      << "// 4 the shapes differ; 5 a tensor is not contiguous; 10 a CUDA error at launch.\n"
      << "#include \"kernelskill/abi.h\"\n"
      << "\n"
      << "#include <cuda_runtime.h>\n"
      << "#include <stdint.h>\n"
      << "\n"
      << "// Launch parameters the offline planner tunes (the manifest's tunables): threads per\n"
      << "// block, and the grid's cap.\n"
      << "#ifndef KS_BLOCK_THREADS\n"
      << "#define KS_BLOCK_THREADS 256\n"
      << "#endif\n"
      << "#ifndef KS_MAX_BLOCKS\n"
      << "#define KS_MAX_BLOCKS 1048576\n"
      << "#endif\n"
      << "static_assert(KS_BLOCK_THREADS >= 1 && KS_BLOCK_THREADS <= 1024, \"threads per "
         "block\");\n"
      << "\n"
      << "namespace {\n"
      << "\n"
      << "bool is_contiguous(const ks_tensor& t) {\n"
      << "  int64_t expect = 1;\n"
      << "  for (int32_t d = t.ndim - 1; d >= 0; --d) {\n"
      << "    if (t.shape[d] != 1 && t.stride[d] != expect) return false;\n"
      << "    expect *= t.shape[d];\n"
      << "  }\n"
      << "  return true;\n"
      << "}\n"
      << "\n"
      << "__global__ void " << opt.name
      << "_ref_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {\n"
      << "  const int64_t step = (int64_t)gridDim.x * blockDim.x;\n"
      << "  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {\n"
      << "    const float v = x[i];\n"
      << "    y[i] = v;  // your operator: y[i] = f(v)\n"
      << "  }\n"
      << "}\n"
      << "\n"
      << "} // namespace\n"
      << "\n"
      << "extern \"C\" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* "
         "outputs,\n"
      << "                          int32_t n_outputs, void* cuda_stream) {\n"
      << "  if (n_inputs != 1) return 1;\n"
      << "  if (n_outputs != 1) return 2;\n"
      << "  const ks_tensor& x = inputs[0];\n"
      << "  ks_tensor& y = outputs[0];\n"
      << "  if (x.dtype != KS_F32 || y.dtype != KS_F32) return 3;\n"
      << "  if (x.ndim != y.ndim) return 4;\n"
      << "  for (int32_t d = 0; d < x.ndim; ++d)\n"
      << "    if (x.shape[d] != y.shape[d]) return 4;\n"
      << "  if (!is_contiguous(x) || !is_contiguous(y)) return 5;\n"
      << "  const int64_t n = ks_numel(&x);\n"
      << "  if (n == 0) return 0;\n"
      << "  const int block = KS_BLOCK_THREADS;\n"
      << "  int64_t grid = (n + block - 1) / block;\n"
      << "  if (grid > KS_MAX_BLOCKS) grid = KS_MAX_BLOCKS;  // the grid-stride loop covers the "
         "rest\n"
      << "  " << opt.name
      << "_ref_kernel<<<(unsigned)grid, block, 0, (cudaStream_t)cuda_stream>>>(\n"
      << "    (const float*)x.data, (float*)y.data, n);\n"
      << "  return cudaGetLastError() != cudaSuccess ? 10 : 0;\n"
      << "}\n";
  return out.str();
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
      "task", "Adds an op of your own. `task new` writes a manifest and a reference to start "
              "from, `task check` checks a manifest as a campaign would, without a GPU.");
  task->require_subcommand(1);
  task->footer(exit_code_help(command_codes::task_check(), width));

  task_commands out;
  out.check = task->add_subcommand(
      "check",
      "Checks task manifests. It goes as far as a campaign goes before it needs a GPU: every key "
      "and "
      "value (each problem as FILE:LINE:COL: message), that each tunable is an overridable "
      "macro of the reference with its default among the listed values, and that the "
      "reference compiles (nvcc, for --arch; its diagnostics name the reference's file and "
      "line). Prints \"ok\" and what the task holds for each good manifest.");
  out.check->add_option("TASK.toml", opt.manifests, "Task manifests (TOML)")
      ->required()
      ->type_name("");
  out.check->add_flag("--no-compile", opt.no_compile, "Do not compile the reference");
  out.check->add_option("--arch", opt.arch, "nvcc architecture the reference is compiled for")
      ->capture_default_str()
      ->type_name("SM");
  out.check
      ->add_option("--cache-dir", opt.cache_dir,
                   "Compile cache folder (default: $XDG_CACHE_HOME/kernelskill or "
                   "~/.cache/kernelskill)")
      ->type_name("DIR");
  out.check->footer(exit_code_help(command_codes::task_check(), width));

  out.create = task->add_subcommand(
      "new",
      "Writes a new task to start from. DIR/NAME.toml and DIR/NAME_ref.cu: a task manifest and its "
      "reference kernel, an "
      "elementwise float32 op (as written, a copy: y = x) that checks, compiles and runs in a "
      "campaign as it is. Write your operator where the reference says so, adjust the shapes, "
      "tolerance and cost in the manifest, then `kernelskill task check DIR/NAME.toml`.");
  out.create->add_option("NAME", opt.name, "The task's name: lowercase letters, digits and _")
      ->required()
      ->type_name("");
  out.create
      ->add_option("--family", opt.family,
                   "Op family (elementwise, softmax, norm, reduce, scan, pool, matvec, "
                   "matmul): skill retrieval keys on it")
      ->capture_default_str()
      ->type_name("FAMILY");
  out.create->add_option("--dir", opt.dir, "Folder to write the two files into (created)")
      ->capture_default_str()
      ->type_name("DIR");
  out.create->add_option("--shape", opt.shape, "Shape of x and y, e.g. --shape 4096,4096")
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

  int64_t bad = 0;
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
    if (!problems.empty()) {
      for (const std::string& p : problems)
        std::cout << p << "\n";
      ++bad;
      continue;
    }
    int64_t tunable_count = static_cast<int64_t>(task->tunables.size());
    std::cout << "ok: " << task->name << " (" << manifest.string() << "): family " << task->family
              << ", " << task->inputs.size()
              << (task->inputs.size() == 1 ? " input, " : " inputs, ") << task->outputs.size()
              << (task->outputs.size() == 1 ? " output, " : " outputs, ") << tunable_count
              << (tunable_count == 1 ? " tunable" : " tunables") << compiled << "\n";
  }
  std::cout << std::flush;
  if (bad > 0)
    return stop(stop_reason::task, std::to_string(bad) + " of " +
                                       std::to_string(opt.manifests.size()) +
                                       (opt.manifests.size() == 1 ? " manifest" : " manifests") +
                                       " cannot run (see above)");
  return {};
}

command_result run_task_new(const task_options& opt) {
  static const std::regex valid_name("[a-z0-9_]+");
  if (!std::regex_match(opt.name, valid_name))
    return stop(stop_reason::usage, "task new: '" + opt.name +
                                        "' is not a task name: lowercase letters, digits and _ "
                                        "only (e.g. gelu, layer_norm_4k)");
  if (opt.family.empty())
    return stop(stop_reason::usage, "task new: --family must not be empty");
  fs::path manifest = opt.dir / (opt.name + ".toml");
  fs::path reference = opt.dir / (opt.name + "_ref.cu");
  std::error_code ec;
  for (const fs::path& file : {manifest, reference})
    if (fs::exists(file, ec) && !opt.force)
      return stop(stop_reason::usage, "task new: " + file.string() +
                                          " exists; pass --force to overwrite it, or choose "
                                          "another NAME or --dir");
  fs::create_directories(opt.dir, ec);
  if (ec)
    return stop(stop_reason::environment,
                "task new: cannot create " + opt.dir.string() + ": " + ec.message());
  if (!write_text(manifest, manifest_text(opt)) || !write_text(reference, reference_text(opt)))
    return stop(stop_reason::environment, "task new: cannot write into " + opt.dir.string());
  std::cout << "wrote " << manifest.string() << " and " << reference.string()
            << ": an elementwise float32 op that copies x to y\n"
            << "next:\n"
            << "  1. write your operator in " << reference.string()
            << " (\"your operator\"), and the\n"
            << "     shapes, tolerance and cost in " << manifest.string() << "\n"
            << "  2. kernelskill task check " << manifest.string() << "\n"
            << "  3. add \"" << fs::absolute(manifest).lexically_normal().string()
            << "\" to campaign.tasks of a config\n"
            << "     (kernelskill config --defaults > my.toml), then kernelskill run my.toml "
               "--dry-run\n";
  if (opt.family != "elementwise")
    std::cout << "note: the reference is an elementwise skeleton; for family '" << opt.family
              << "', change its kernel and the outputs' shapes to match the op\n";
  std::cout << std::flush;
  return {};
}

} // namespace ks::cli
