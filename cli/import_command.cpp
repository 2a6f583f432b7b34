// `kernelskill import`: PyTorch code in, task manifests out. The PyTorch side is Python
// (tools/ks_import.py: the module built and traced on the meta device with torch.export, its
// ATen ops lowered onto the op families), run as a child process that writes one manifest per
// problem and reports each as a JSON line as soon as it is done. This side owns what a user
// relies on: every manifest is loaded by the engine's own loader before it counts as imported
// (a manifest the importer wrote but the engine refuses is set aside as NAME.toml.rejected,
// with the loader's FILE:LINE:COL problems), campaign.toml lists exactly the manifests that
// load, and the exit code says whether every problem made it.
//
// --verify (on a GPU host with torch): each reference is compiled as a campaign would, and
// tools/ks_verify.py runs it and the module on the same inputs on the GPU; a reference that
// does not agree within its task's tolerance is left out of campaign.toml, with the first
// differing element named. A campaign never trusts a reference the module disagrees with.

#include "cli/import_command.hpp"

#include "base/text.hpp"
#include "cli/arch_check.hpp"
#include "cli/environment.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/child_process.hpp"
#include "gpu/compiler.hpp"

#include <CLI/CLI.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

using namespace std::chrono_literals;

/// What the importer said of one problem.
struct import_record {
  std::string source; ///< the problem's file
  std::string name;   ///< the task's name
  std::string status; ///< "imported" or "failed"
  std::string reason; ///< why not (failed)
  std::string kind;   ///< "softmax (log_softmax)", "graph of 3 ops: ..." (imported)
  fs::path manifest;  ///< the manifest written (imported)
  std::vector<std::string> notes;
};

std::string text_field(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().as_string()) : "";
}

std::optional<import_record> parse_record(const std::string& line) {
  std::error_code ec;
  boost::json::value v = boost::json::parse(line, ec);
  if (ec || !v.is_object())
    return std::nullopt;
  const boost::json::object& o = v.as_object();
  import_record r;
  r.source = text_field(o, "source");
  r.name = text_field(o, "name");
  r.status = text_field(o, "status");
  r.reason = text_field(o, "reason");
  r.kind = text_field(o, "kind");
  r.manifest = text_field(o, "manifest");
  if (auto it = o.find("notes"); it != o.end() && it->value().is_array())
    for (const boost::json::value& n : it->value().as_array())
      if (n.is_string())
        r.notes.emplace_back(n.as_string());
  if (r.status != "imported" && r.status != "failed")
    return std::nullopt;
  return r;
}

std::string shown_source(const std::string& source) {
  return fs::path(source).filename().string();
}

/// Writes campaign.toml over `manifests` (file names inside opt.out).
bool write_campaign(const import_options& opt, const std::vector<std::string>& manifests) {
  std::ofstream out(opt.out / "campaign.toml", std::ios::trunc);
  out << "# Written by `kernelskill import`: a campaign over the tasks imported from\n";
  for (const std::string& p : opt.paths)
    out << "#   " << p << "\n";
  out << "# Run it with `kernelskill run " << (opt.out / "campaign.toml").string()
      << "`; every option not set here has its default (`kernelskill config --defaults`).\n\n"
      << "gpus = \"all\"\n\n[campaign]\ntasks = [\n";
  for (const std::string& m : manifests)
    out << "  \"" << m << "\",\n";
  out << "]\noutput = \"out\"\n";
  return static_cast<bool>(out.flush());
}

/// Sets a manifest the engine refuses aside, so that no glob of the folder picks it up.
void set_aside(const fs::path& manifest, const std::string& suffix) {
  std::error_code ec;
  fs::rename(manifest, fs::path(manifest.string() + suffix), ec);
}

/// One task to verify, and what came of it.
struct verification {
  const engine::task* task = nullptr;
  fs::path manifest;
  fs::path shared_object;             ///< its reference, compiled
  std::optional<std::string> problem; ///< set when it does not agree (or cannot be checked)
};

/// Verifies `jobs` on the GPUs `devices`: one tools/ks_verify.py --serve per device takes the
/// next job as soon as it is done with one (the tasks' sizes differ by orders of magnitude),
/// so torch and a CUDA context start once per device, not per task. Prints a line per job as it
/// ends.
void verify_all(const std::string& python, const fs::path& tools,
                const std::vector<int32_t>& devices, std::vector<verification>& jobs) {
  std::mutex lock;
  size_t next = 0;
  auto serve = [&](int32_t device) {
    std::vector<std::string> argv = {python, (tools / "ks_verify.py").string(), "--serve",
                                     "--device", std::to_string(device)};
    auto child = gpu::child_process::spawn(argv);
    while (true) {
      verification* job = nullptr;
      {
        std::lock_guard<std::mutex> guard(lock);
        if (next < jobs.size())
          job = &jobs[next++];
      }
      if (job == nullptr)
        break;
      std::string how; // what decided an agreement, when more than the float32 comparison did
      if (!job->problem) {
        std::optional<std::string> answer;
        if (!child) {
          answer = "cannot run " + python + ": " + child.error().message();
        } else if (!child->write_line(job->manifest.string() + "\t" +
                                      job->shared_object.string())) {
          answer = "the verifier on device " + std::to_string(device) +
                   " stopped: " + std::string(base::trim(child->stderr_tail()));
        } else {
          // A task of KernelBench's sizes checks in seconds; one that takes half an hour is
          // stuck, and its verifier is stopped with it.
          auto line = child->read_line(std::chrono::minutes(30));
          std::error_code ec;
          boost::json::value v =
              line && *line ? boost::json::parse(**line, ec) : boost::json::value();
          if (!ec && v.is_object() && v.as_object().contains("ok")) {
            const boost::json::object& o = v.as_object();
            std::string message = text_field(o, "message");
            if (!o.at("ok").as_bool())
              answer = message;
            else if (size_t open = message.find(" ("); open != std::string::npos)
              how = message.substr(open);
          } else {
            answer = "the verifier on device " + std::to_string(device) +
                     " gave no answer: " + std::string(base::trim(child->stderr_tail()));
            child->kill();
            child = gpu::child_process::spawn(argv);
          }
        }
        job->problem = answer;
      }
      std::lock_guard<std::mutex> guard(lock);
      if (job->problem)
        std::cout << "not verified  " << job->task->name << ": " << *job->problem << "\n";
      else
        std::cout << "verified  " << job->task->name << ": its reference agrees with the module"
                  << how << "\n";
      std::cout << std::flush;
    }
    if (child)
      child->close_stdin();
  };
  std::vector<std::thread> threads;
  for (int32_t device : devices)
    threads.emplace_back(serve, device);
  for (std::thread& t : threads)
    t.join();
}

/// Returns the devices of `text` ("0", "0,1,2,3"); nullopt when it is not such a list.
std::optional<std::vector<int32_t>> parse_devices(const std::string& text) {
  std::vector<int32_t> devices;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    item = std::string(base::trim(item));
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
        item.size() > 4)
      return std::nullopt;
    devices.push_back(std::stoi(item));
  }
  if (devices.empty())
    return std::nullopt;
  return devices;
}

} // namespace

fs::path default_tools_dir() {
  if (const char* env = std::getenv("KS_TOOLS_DIR"); env != nullptr && *env != '\0')
    return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed =
        (exe.parent_path() / ".." / "share" / "kernelskill" / "tools").lexically_normal();
    if (fs::is_regular_file(installed / "ks_import.py", ec))
      return installed;
  }
#ifdef KS_SOURCE_DIR
  return fs::path(KS_SOURCE_DIR) / "tools";
#else
  return "tools";
#endif
}

std::string python_or_default(const std::string& given) {
  if (!given.empty())
    return given;
  if (const char* env = std::getenv("KS_PYTHON"); env != nullptr && *env != '\0')
    return env;
  return "python3";
}

CLI::App* add_import_command(CLI::App& app, import_options& opt) {
  const size_t width = help_width();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Turns PyTorch code into tasks: each PATH is a KernelBench-format problem file (a class "
      "Model(nn.Module), get_inputs(), get_init_inputs()), a folder of them, or FILE.py:NAME for "
      "an nn.Module class or a function of your own code, whose example inputs --input gives "
      "(or the file's get_inputs()). The module is traced with torch.export on the meta device "
      "(no GPU, no data) and each problem becomes one family op or a graph of them "
      "(docs/tasks.md): its parameters and buffers become inputs of the task, its constants "
      "params. Writes DIR/NAME.toml per problem and DIR/campaign.toml over those that load, "
      "and prints one line per problem: imported as what, or exactly why not. Needs Python "
      "with torch (--python, $KS_PYTHON, else python3).");
  cmd->add_option("PATH", opt.paths, "Problem files, folders of them, or FILE.py:NAME")
      ->required()
      ->type_name("");
  cmd->add_option("--out", opt.out, "Folder for the manifests and campaign.toml")
      ->required()
      ->type_name("DIR");
  cmd->add_option("--input", opt.inputs,
                  "An example input of FILE.py:NAME, one per forward argument in order: "
                  "DTYPE[D0,D1,...] such as f32[32,1024], bool[32,1024], or i64[32]<0,10> for "
                  "integers drawn from [0, 10)")
      ->type_name("SPEC");
  cmd->add_option("--init", opt.init,
                  "The constructor's arguments of FILE.py:NAME as a Python literal, e.g. "
                  "'[1024, 4]' (default: the file's get_init_inputs(), else none)")
      ->type_name("LITERAL");
  cmd->add_option("--python", opt.python,
                  "Python interpreter with torch (default: $KS_PYTHON, else python3)")
      ->type_name("PY");
  cmd->add_flag("--eval", opt.eval_mode,
                "Take every module in eval mode (module.eval()), as inference runs it: dropout "
                "is the identity and batch norm reads its running statistics (default: as the "
                "file leaves it, nn.Module's training mode)");
  cmd->add_flag("--verify", opt.verify,
                "On a GPU host: compile each task's reference and run it and the module on the "
                "same inputs; a task whose reference does not agree within its tolerance is "
                "left out of campaign.toml, the first differing element named");
  cmd->add_option("--arch", opt.arch, "nvcc architecture of the references (--verify)")
      ->capture_default_str()
      ->type_name("SM");
  cmd->add_option("--devices", opt.devices,
                  "The GPUs of --verify, a comma-separated list (one verifier each)")
      ->capture_default_str()
      ->type_name("LIST");
  cmd->add_option("--cache-dir", opt.cache_dir,
                  "Compile cache folder (default: $XDG_CACHE_HOME/kernelskill or "
                  "~/.cache/kernelskill)")
      ->type_name("DIR");
  cmd->footer(exit_code_help({0, 1, 2, 3}, width));
  return cmd;
}

command_result run_import(const import_options& opt) {
  for (const std::string& p : opt.paths) {
    std::string file = p;
    if (size_t colon = p.rfind(".py:"); colon != std::string::npos)
      file = p.substr(0, colon + 3);
    if (!fs::exists(file))
      return stop(stop_reason::usage, "import: " + file + ": no such file or folder");
  }
  std::error_code ec;
  fs::create_directories(opt.out, ec);
  if (ec || !fs::is_directory(opt.out))
    return stop(stop_reason::environment,
                "import: cannot make the output folder " + opt.out.string() + ": " + ec.message());
  fs::path tools = default_tools_dir();
  if (!fs::is_regular_file(tools / "ks_import.py"))
    return stop(stop_reason::environment,
                "import: the importer " + (tools / "ks_import.py").string() +
                    " is missing (set KS_TOOLS_DIR to the tools/ folder of kernelskill)");
  std::string python = python_or_default(opt.python);
  std::vector<std::string> argv = {python, (tools / "ks_import.py").string(), "--json", "--out",
                                   opt.out.string()};
  for (const std::string& spec : opt.inputs)
    argv.insert(argv.end(), {"--input", spec});
  if (!opt.init.empty())
    argv.insert(argv.end(), {"--init", opt.init});
  if (opt.eval_mode)
    argv.emplace_back("--eval");
  argv.insert(argv.end(), opt.paths.begin(), opt.paths.end());
  auto child = gpu::child_process::spawn(argv);
  if (!child)
    return stop(stop_reason::environment,
                "import: cannot run " + python + ": " + child.error().message() +
                    " (name an interpreter with torch: --python PY or KS_PYTHON)");

  std::vector<import_record> records;
  std::vector<std::string> campaign;
  std::vector<std::pair<engine::task, fs::path>> loaded;
  int64_t failed = 0;
  int64_t graphs = 0;
  while (true) {
    // A problem of KernelBench's sizes traces in seconds; a stuck import is killed after
    // ten minutes of silence rather than waited on for ever.
    auto line = child->read_line(10min);
    if (!line) {
      child->kill();
      return stop(stop_reason::environment,
                  "import: the importer said nothing for 10 minutes: stopped it");
    }
    if (!*line)
      break;
    std::optional<import_record> r = parse_record(**line);
    if (!r) {
      std::cerr << **line << "\n";
      continue;
    }
    if (r->status == "imported") {
      auto task = engine::load_task_manifest(r->manifest);
      if (!task) {
        r->status = "failed";
        r->reason = "the manifest it wrote does not load (set aside as " +
                    r->manifest.filename().string() + ".rejected):\n" + task.error().message();
        set_aside(r->manifest, ".rejected");
      } else {
        loaded.emplace_back(std::move(*task), r->manifest);
      }
    }
    if (r->status == "imported") {
      std::cout << "imported  " << r->name << ": " << r->kind << "\n";
      for (const std::string& note : r->notes)
        std::cout << "          note: " << note << "\n";
    } else {
      ++failed;
      std::cout << "not imported  " << shown_source(r->source) << ": " << r->reason << "\n";
    }
    std::cout << std::flush;
    records.push_back(std::move(*r));
  }
  gpu::exit_status status = child->wait(30s);
  if (status.code == 3 || (records.empty() && !status.success())) {
    std::string err(base::trim(child->stderr_tail()));
    return stop(stop_reason::environment, "import: " + python + " could not run the importer (" +
                                              status.describe() + ")" +
                                              (err.empty() ? "" : ":\n" + err));
  }

  // --verify: the module is the truth; a reference it disagrees with never reaches a campaign.
  if (opt.verify && !loaded.empty()) {
    std::optional<std::vector<int32_t>> devices = parse_devices(opt.devices);
    if (!devices)
      return stop(stop_reason::usage,
                  "import: --devices '" + opt.devices + "' is not a list of GPU indices (0,1,2)");
    if (auto ok = check_arch(opt.arch); !ok)
      return ok;
    gpu::compiler_options copt;
    copt.arch = opt.arch;
    copt.cache_dir = cache_dir_or_default(opt.cache_dir);
    copt.include_dir = include_dir_for_compiler();
    auto compiler = gpu::compiler::create(copt);
    if (!compiler)
      return stop(stop_reason::environment,
                  "import --verify: cannot compile the references: " + compiler.error().message());
    std::vector<gpu::compile_request> requests;
    std::vector<verification> jobs;
    for (const auto& [task, manifest] : loaded) {
      gpu::compile_request request;
      request.source = task.reference_source;
      request.label = task.name + " reference";
      request.source_name = task.name + "_reference.cu";
      if (request.source.empty())
        if (auto text = engine::read_reference(task))
          request.source = *text;
      requests.push_back(std::move(request));
      jobs.push_back({&task, manifest, {}, std::nullopt});
    }
    progress("import --verify: compiling " + std::to_string(requests.size()) + " references");
    std::vector<gpu::compile_result> compiled = compiler->compile_all(requests);
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (compiled[i].ok)
        jobs[i].shared_object = compiled[i].shared_object;
      else
        jobs[i].problem =
            "its reference does not compile for " + opt.arch + ":\n" + compiled[i].diagnostics;
    }
    verify_all(python, tools, *devices, jobs);
    std::vector<std::pair<engine::task, fs::path>> agreed;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (jobs[i].problem) {
        ++failed;
        set_aside(loaded[i].second, ".unverified");
      } else {
        agreed.push_back(std::move(loaded[i]));
      }
    }
    loaded = std::move(agreed);
  }
  for (const auto& [task, manifest] : loaded) {
    campaign.push_back(manifest.filename().string());
    graphs += task.family == "graph" ? 1 : 0;
  }
  if (!write_campaign(opt, campaign))
    return stop(stop_reason::environment,
                "import: cannot write " + (opt.out / "campaign.toml").string());
  std::cout << campaign.size() << " of " << records.size() << " problems imported (" << graphs
            << (graphs == 1 ? " graph" : " graphs")
            << "); the campaign: " << (opt.out / "campaign.toml").string() << "\n"
            << std::flush;
  if (failed > 0)
    return stop(stop_reason::task, "import: " + std::to_string(failed) + " of " +
                                       std::to_string(records.size()) +
                                       " problems not imported (see above)");
  return {};
}

} // namespace ks::cli
