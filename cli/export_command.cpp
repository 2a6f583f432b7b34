// `kernelskill export`: a campaign's winners out, as a Python package that PyTorch loads. This
// side reads and checks the campaign (cli/export_spec.hpp: each kernel is the source the
// campaign verified, each manifest still states the task it was tuned for) and owns the
// package folder; tools/ks_export.py, run as a child with the spec on its stdin, writes the
// files (Python is the language of the package: its templates live in tools/export/).
//
// The folder: a new or empty one is written; one that an earlier export wrote (it holds the
// marker file .kernelskill-export) is emptied and written again; any other is refused, so a
// typo of --out never deletes a folder of the user's. The marker is written before the
// generator runs, so that an export cut off halfway can be repeated into the same folder.

#include "cli/export_command.hpp"

#include "base/text.hpp"
#include "cli/exit_codes.hpp"
#include "cli/export_spec.hpp"
#include "cli/help_format.hpp"
#include "cli/import_command.hpp"
#include "gpu/child_process.hpp"

#include <CLI/CLI.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <system_error>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* marker_file = ".kernelskill-export";

/// Makes `out` an empty folder holding only the marker, or says why it will not.
command_result prepare_folder(const fs::path& out, const std::string& package) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec))
      return stop(stop_reason::task, "export: --out " + out.string() +
                                         " is a file: name a new or empty folder for the package");
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(out, ec))
      names.push_back(e.path().filename().string());
    if (!names.empty() && !fs::is_regular_file(out / marker_file, ec)) {
      std::string listed;
      for (size_t i = 0; i < names.size() && i < 4; ++i)
        listed += (i ? ", " : "") + names[i];
      return stop(stop_reason::task,
                  "export: --out " + out.string() + " holds files that kernelskill export did " +
                      "not write (" + listed + (names.size() > 4 ? ", ..." : "") +
                      "): name a new or empty folder for the package");
    }
    // An earlier export's package: every file of it is ours, written again below.
    for (const fs::directory_entry& e : fs::directory_iterator(out, ec))
      fs::remove_all(e.path(), ec);
    if (ec)
      return stop(stop_reason::environment,
                  "export: cannot empty " + out.string() + ": " + ec.message());
  }
  fs::create_directories(out, ec);
  std::ofstream marker(out / marker_file, std::ios::trunc);
  marker << "A Python package written by `kernelskill export` (package " << package
         << "); the next export into this folder replaces everything in it.\n";
  if (ec || !marker.flush())
    return stop(stop_reason::environment, "export: cannot write into " + out.string() +
                                              (ec ? ": " + ec.message() : std::string()));
  return {};
}

/// Returns the package name: --name, else --out's folder name made an identifier.
tl::expected<std::string, command_error> package_name(const export_options& opt) {
  if (!opt.name.empty()) {
    if (python_identifier(opt.name, "_") != opt.name || opt.name == "torch")
      return stop(stop_reason::usage,
                  "export: --name '" + opt.name +
                      "' is no Python package name: letters, digits and '_', not starting "
                      "with a digit, no keyword (e.g. my_ops)");
    return opt.name;
  }
  std::string folder = fs::absolute(opt.out).lexically_normal().filename().string();
  if (folder.empty())
    folder = fs::absolute(opt.out).lexically_normal().parent_path().filename().string();
  std::string name = python_identifier(folder, "ks_");
  return name == "torch" ? "torch_ops" : name;
}

} // namespace

CLI::App* add_export_command(CLI::App& app, export_options& opt) {
  const size_t width = help_width();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Turns a campaign's winners into a Python package for PyTorch: each task's "
      "best/<task>.cu, unchanged (its content hash checked against results.json), becomes the "
      "custom op kernelskill::<task> (torch.library), called as PACKAGE.<task>(...) or "
      "torch.ops.kernelskill.<task>(...), with a fake implementation so that it traces under "
      "torch.compile and torch.export, the shapes and dtypes it was verified for checked at "
      "every call (fallback=True runs the task's torch expression for others), and for an "
      "imported task a drop-in nn.Module with the original's signature and parameters, and "
      "verify(). The package builds ahead of time (pip install --no-build-isolation PKG, or "
      "python setup.py build_ext --inplace) or on its first import where a GPU is; its "
      "README says what each op replaces, its speedup and the GPU that measured it. Tasks "
      "whose winner is their reference are left out unless --task names them. Runs "
      "tools/ks_export.py with Python (--python, $KS_PYTHON, else python3; torch is needed "
      "only to build and use the package).");
  cmd->add_option("OUTPUT_DIR", opt.output, "The campaign's output folder (its campaign.output)")
      ->required()
      ->type_name("");
  cmd->add_option("--out", opt.out,
                  "The package folder to write: new, empty, or one an earlier export wrote")
      ->required()
      ->type_name("PKG");
  cmd->add_option("--task", opt.tasks, "Export only this task (repeat for more)")
      ->type_name("NAME");
  cmd->add_option("--name", opt.name,
                  "The Python package's name (default: PKG's folder name, made an identifier)")
      ->type_name("PACKAGE");
  cmd->add_option("--manifests", opt.manifests,
                  "The folder that holds the task manifests now, when it is not where "
                  "results.json says (a folder copied from the GPU host)")
      ->type_name("DIR");
  cmd->add_option("--python", opt.python,
                  "Python 3.11 or later to write the package with (default: $KS_PYTHON, else "
                  "python3)")
      ->type_name("PY");
  cmd->footer(exit_code_help({0, 1, 2, 3}, width));
  return cmd;
}

command_result run_export(const export_options& opt) {
  auto package = package_name(opt);
  if (!package)
    return tl::unexpected(package.error());
  // Emptying an earlier package must never reach the campaign it is made from.
  std::error_code ec;
  const fs::path output = fs::weakly_canonical(opt.output, ec);
  const fs::path out = fs::weakly_canonical(opt.out, ec);
  if (std::mismatch(out.begin(), out.end(), output.begin(), output.end()).first == out.end())
    return stop(stop_reason::usage, "export: --out " + opt.out.string() +
                                        " holds the campaign's "
                                        "output folder " +
                                        opt.output.string() +
                                        ": name another folder for the package");
  auto plan = plan_export({opt.output, opt.tasks, opt.manifests, *package});
  if (!plan)
    return tl::unexpected(plan.error());
  fs::path tools = default_tools_dir();
  if (!fs::is_regular_file(tools / "ks_export.py"))
    return stop(stop_reason::environment,
                "export: the generator " + (tools / "ks_export.py").string() +
                    " is missing (set KS_TOOLS_DIR to the tools/ folder of kernelskill)");
  if (auto ready = prepare_folder(opt.out, *package); !ready)
    return ready;

  const std::string python = python_or_default(opt.python);
  const std::vector<std::string> argv = {python,  (tools / "ks_export.py").string(), "--spec", "-",
                                         "--out", fs::absolute(opt.out).string()};
  auto done =
      gpu::run_to_completion(argv, std::chrono::minutes(5), boost::json::serialize(plan->spec));
  if (!done)
    return stop(stop_reason::environment,
                "export: cannot run " + python + ": " + done.error().message() +
                    " (name Python 3.11 or later: --python PY or KS_PYTHON)");
  std::cerr << done->err;
  if (!done->status.success())
    return stop(done->status.code == 2 ? stop_reason::task : stop_reason::environment,
                "export: the generator failed (" + done->status.describe() + ")" +
                    (base::trim(done->err).empty() ? "" : ": see above"));

  for (const exported_task& t : plan->tasks)
    std::cout << "exported  " << t.name << " as kernelskill::" << t.op << ": " << t.line
              << (t.reference ? " (its reference kernel: no candidate beat it)" : "") << "\n";
  for (const std::string& line : plan->skipped)
    std::cout << "skipped   " << line << "\n";
  std::cout << "wrote " << opt.out.string() << ": package " << *package << ", "
            << plan->tasks.size() << (plan->tasks.size() == 1 ? " op" : " ops")
            << "; build it with `pip install --no-build-isolation " << opt.out.string()
            << "` (or import it from that folder: it builds on first import where a GPU is); "
            << "what each op replaces: " << (opt.out / "README.md").string() << "\n"
            << std::flush;
  return {};
}

} // namespace ks::cli
