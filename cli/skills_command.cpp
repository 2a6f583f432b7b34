// `kernelskill skills`: the long-term skill memory from the command line. Every action but
// `check` and `render` opens the memory a campaign would ([memory] path of --config, or --memory,
// or
// ./kernelskill-memory) and seeds it from the built-in skills first, as `run` does, so that what
// it shows is what the next campaign sees. `check` reads a folder someone wrote and reports
// every problem as FILE:LINE:COL; with --tasks it also renders every template for every task
// of its family, which is how a template error that only a real shape shows is found before a
// campaign does. `render` prints one template's source for one task, with parameters set by
// hand, so that a chosen variant can be timed with `eval`.

#include "cli/skills_command.hpp"

#include "base/text.hpp"
#include "config/campaign_config.hpp"
#include "config/spelling.hpp"
#include "engine/op_family.hpp"
#include "engine/retrieval.hpp"
#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
#include "engine/task_manifest.hpp"
#include "memory/skill_store.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

/// Where the memory and the built-in skills are, and the ranking rule, from the options.
struct places {
  fs::path memory;
  std::string memory_from; ///< why this memory: the option or default that named it
  fs::path builtin;
  engine::retrieval_rules rules;
};

// The memory of configs/quickstart.toml, run from the checkout's root as scripts/quickstart.sh
// does: a newcomer's first memory, which the default would otherwise never find.
constexpr const char* quickstart_memory = "kernelskill-out/memory";

tl::expected<places, command_error> places_of(const skills_options& opt) {
  places p;
  p.memory = "kernelskill-memory";
  p.memory_from = "the default, ./kernelskill-memory";
  std::error_code ec;
  if (!fs::exists(p.memory, ec) && fs::exists(fs::path(quickstart_memory) / "data.mdb", ec)) {
    p.memory = quickstart_memory;
    p.memory_from = "the quickstart's: ./kernelskill-memory does not exist; --memory or --config "
                    "names another";
  }
  p.builtin = engine::default_skills_dir();
  if (!opt.config.empty()) {
    auto loaded = config::load_campaign_config(opt.config);
    if (!loaded)
      return stop(loaded.error().code() == config::errc::invalid_input ? stop_reason::task
                                                                       : stop_reason::usage,
                  loaded.error().message());
    p.memory = loaded->memory_dir();
    p.memory_from = "[memory] path of " + opt.config.string();
    if (!loaded->skills_dir().empty())
      p.builtin = loaded->skills_dir();
    p.rules = {loaded->memory.exploration, loaded->memory.demote_min_tries,
               loaded->memory.demote_failure_rate, loaded->memory.demote_min_acceptance};
  }
  if (!opt.memory.empty()) {
    p.memory = opt.memory;
    p.memory_from = "--memory";
  }
  if (!opt.builtin.empty())
    p.builtin = opt.builtin;
  return p;
}

/// Returns stop_reason::damaged for `e` of a damaged memory (its message says what to do),
/// `otherwise` for any other.
stop_reason unless_damaged(const engine::error& e, stop_reason otherwise) {
  return e.code() == engine::errc::damaged ? stop_reason::damaged : otherwise;
}

/// Opens the memory and seeds it with the built-in skills, as a campaign does. A memory that
/// did not exist is made, and p.memory_from says so.
tl::expected<memory::skill_store, command_error> open_seeded(places& p) {
  auto folders = engine::read_skill_folders(p.builtin);
  if (!folders)
    return stop(stop_reason::environment, "the built-in skills: " + folders.error().message());
  std::error_code ec;
  if (!fs::exists(p.memory / "data.mdb", ec))
    p.memory_from += "; new: it held no memory before";
  auto store = memory::skill_store::open(p.memory);
  if (!store)
    return stop(unless_damaged(store.error(), stop_reason::environment), store.error().message());
  if (auto seeded = store->seed(*folders, now_iso8601()); !seeded) {
    if (seeded.error().code() == engine::errc::damaged)
      return stop(stop_reason::damaged, seeded.error().message());
    return stop(stop_reason::task, "a built-in skill does not load:\n" + seeded.error().message());
  }
  return std::move(*store);
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words)
    out += (out.empty() ? "" : ", ") + w;
  return out;
}

std::string number(double v, const char* format = "%.3g") {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

command_result list(places& p, const std::string& family) {
  if (!family.empty() && !engine::is_family(family)) {
    std::vector<std::string_view> known = engine::family_names();
    auto near = config::closest(family, known);
    return stop(stop_reason::usage, "skills list --family '" + family + "': no such op family" +
                                        (near ? " (did you mean '" + std::string(*near) + "'?)"
                                              : " (" + config::joined(known) + ")"));
  }
  auto store = open_seeded(p);
  if (!store)
    return tl::unexpected(store.error());
  auto library = store->library();
  if (!library)
    return stop(unless_damaged(library.error(), stop_reason::task), library.error().message());
  auto rows = store->all_stats();
  if (!rows)
    return stop(unless_damaged(rows.error(), stop_reason::environment), rows.error().message());
  std::printf("%-28s %-4s %-8s %-26s %6s %s\n", "skill", "ver", "origin", "families", "tries",
              "title");
  int64_t shown = 0;
  for (const engine::skill& s : library->skills) {
    if (!family.empty() && !s.applies_to(family))
      continue;
    int64_t tries = 0;
    for (const memory::stat_row& r : *rows)
      if (r.skill == s.id && (family.empty() || r.family == family ||
                              r.family.starts_with(family + ":"))) // a shape class of it
        tries += r.stats.tries;
    std::printf("%-28s %-4lld %-8s %-26s %6lld %s\n", s.id.c_str(),
                static_cast<long long>(s.version), engine::to_string(s.origin),
                joined(s.families).c_str(), static_cast<long long>(tries), s.title.c_str());
    ++shown;
  }
  std::printf("%lld skill(s) in %s (%s)\n", static_cast<long long>(shown),
              p.memory.string().c_str(), p.memory_from.c_str());
  return {};
}

void print_stats_header() {
  std::printf("%-28s %-12s %-8s %6s %6s %6s %6s %6s %8s %8s %-8s %s\n", "skill", "family", "gpu",
              "tries", "accept", "reject", "nocomp", "wrong", "geomean", "best", "state",
              "last used");
}

void print_stats_row(const memory::stat_row& r, const engine::retrieval_rules& rules) {
  const engine::skill_stats& s = r.stats;
  std::printf("%-28s %-12s %-8s %6lld %6lld %6lld %6lld %6lld %8s %8s %-8s %s\n", r.skill.c_str(),
              r.family.c_str(), r.arch.c_str(), static_cast<long long>(s.tries),
              static_cast<long long>(s.acceptances), static_cast<long long>(s.rejections),
              static_cast<long long>(s.compile_failures), static_cast<long long>(s.wrong_results),
              s.acceptances > 0 ? (number(s.geomean_speedup()) + "x").c_str() : "-",
              s.best_speedup > 0 ? (number(s.best_speedup) + "x").c_str() : "-",
              engine::is_demoted(s, rules) ? "demoted" : "active", s.last_used.c_str());
}

command_result show(places& p, const std::string& id) {
  auto store = open_seeded(p);
  if (!store)
    return tl::unexpected(store.error());
  auto stored = store->skill(id);
  if (!stored)
    return stop(unless_damaged(stored.error(), stop_reason::environment), stored.error().message());
  if (!*stored) {
    std::string guess;
    if (auto all = store->skills()) {
      std::vector<std::string_view> ids;
      for (const memory::stored_skill& known : *all)
        ids.push_back(known.id);
      if (auto near = config::closest(id, ids))
        guess = " (did you mean '" + std::string(*near) + "'?)";
    }
    return stop(stop_reason::usage, "no skill '" + id + "' in " + p.memory.string() + guess +
                                        "; kernelskill skills list shows them");
  }
  auto loaded =
      engine::load_skill(engine::skill_files{"<" + id + ">", (*stored)->files}, (*stored)->origin);
  if (!loaded)
    return stop(stop_reason::task, loaded.error().message());
  const engine::skill& s = *loaded;
  std::cout << s.id << " v" << s.version << ": " << s.title << "\n"
            << "origin: " << engine::to_string(s.origin) << " (" << (*stored)->provenance
            << "), hash " << s.content_hash << "\n"
            << "families: " << joined(s.families) << "\n";
  std::vector<std::string> classes;
  for (engine::bound_kind k : s.addresses)
    classes.emplace_back(engine::to_string(k));
  std::cout << "addresses: " << (classes.empty() ? "any bottleneck" : joined(classes)) << "\n";
  for (const engine::expression& e : s.preconditions)
    std::cout << "requires: " << e.text() << "\n";
  std::cout << "\nguidance:\n" << s.guidance << "\n";
  if (!s.anti_patterns.empty()) {
    std::cout << "anti-patterns:\n";
    for (const std::string& a : s.anti_patterns)
      std::cout << "  - " << a << "\n";
  }
  if (!s.effect.empty())
    std::cout << "expected effect: " << s.effect << "\n";
  for (const engine::skill_template& t : s.templates) {
    std::cout << "\ntemplate " << t.name << " (" << t.file << ")\n";
    if (t.params_from_tunables)
      std::cout << "  parameters: the task's tunables\n";
    for (const engine::param_space& ps : t.params) {
      std::cout << "  " << ps.name << ":";
      for (int64_t v : ps.values)
        std::cout << " " << v << (v == ps.default_value ? "*" : "");
      if (ps.prefer)
        std::cout << " (prefer: " << ps.prefer->text() << ")";
      std::cout << "\n";
    }
    for (const engine::expression& c : t.constraints)
      std::cout << "  constraint: " << c.text() << "\n";
    std::cout << "----\n" << t.text << (t.text.ends_with('\n') ? "" : "\n") << "----\n";
  }
  auto rows = store->all_stats();
  if (!rows)
    return stop(unless_damaged(rows.error(), stop_reason::environment), rows.error().message());
  std::cout << "\nstatistics:\n";
  bool any = false;
  for (const memory::stat_row& r : *rows)
    if (r.skill == s.id) {
      if (!any)
        print_stats_header();
      print_stats_row(r, p.rules);
      if (!r.stats.best_params.empty()) {
        std::string params;
        for (const auto& [k, v] : r.stats.best_params)
          params += " " + k + "=" + v;
        std::cout << "    best on " << r.family << "/" << r.arch << ": " << r.stats.best_template
                  << params << " (task " << r.stats.best_task << ")\n";
      }
      any = true;
    }
  if (!any)
    std::cout << "  never tried\n";
  return {};
}

command_result stats(places& p, const std::string& gpu) {
  auto store = open_seeded(p);
  if (!store)
    return tl::unexpected(store.error());
  auto rows = store->all_stats();
  if (!rows)
    return stop(unless_damaged(rows.error(), stop_reason::environment), rows.error().message());
  print_stats_header();
  int64_t shown = 0;
  for (const memory::stat_row& r : *rows) {
    if (!gpu.empty() && r.arch != gpu)
      continue;
    print_stats_row(r, p.rules);
    ++shown;
  }
  std::printf("%lld statistic(s) in %s (%s)\n", static_cast<long long>(shown),
              p.memory.string().c_str(), p.memory_from.c_str());
  return {};
}

command_result export_to(places& p, const fs::path& file) {
  auto store = open_seeded(p);
  if (!store)
    return tl::unexpected(store.error());
  auto all = store->skills();
  if (!all)
    return stop(unless_damaged(all.error(), stop_reason::environment), all.error().message());
  fs::path temp = file;
  temp += ".tmp";
  {
    std::ofstream out(temp, std::ios::binary);
    out << memory::export_skills(*all);
    if (!out)
      return stop(stop_reason::usage, "cannot write " + file.string());
  }
  std::error_code ec;
  fs::rename(temp, file, ec);
  if (ec)
    return stop(stop_reason::usage, "cannot write " + file.string() + ": " + ec.message());
  std::cout << "exported " << all->size() << " skill(s) to " << file.string() << "\n";
  return {};
}

command_result import_from(places& p, const fs::path& file) {
  std::optional<std::string> text = base::read_text(file);
  if (!text)
    return stop(stop_reason::usage, "cannot read " + file.string());
  auto parsed = memory::parse_skill_export(*text);
  if (!parsed)
    return stop(stop_reason::task, file.string() + ": " + parsed.error().message());
  auto store = open_seeded(p);
  if (!store)
    return tl::unexpected(store.error());
  for (memory::stored_skill& s : *parsed)
    s.provenance = "imported from " + file.string();
  if (auto ok = store->import_skills(*parsed, now_iso8601()); !ok)
    return stop(unless_damaged(ok.error(), stop_reason::task),
                file.string() + ": " + ok.error().message());
  std::cout << "imported " << parsed->size() << " skill(s) into " << p.memory.string() << "\n";
  return {};
}

command_result check(const fs::path& dir, const fs::path& tasks_path) {
  auto folders = engine::read_skill_folders(dir);
  if (!folders)
    return stop(stop_reason::usage, folders.error().message());
  std::vector<engine::skill> skills;
  std::string problems;
  for (const engine::skill_files& f : *folders) {
    auto s = engine::load_skill(f);
    if (!s)
      problems += s.error().message() + "\n";
    else
      skills.push_back(std::move(*s));
  }
  int64_t renders = 0;
  if (problems.empty() && !tasks_path.empty()) {
    auto tasks = engine::load_task_suite(tasks_path);
    if (!tasks)
      return stop(stop_reason::task, tasks.error().message());
    for (const engine::task& subject : *tasks) {
      // A graph task's skills are its main node's.
      const engine::task& t = engine::search_target(subject);
      std::string reference = engine::read_reference(t).value_or("");
      for (const engine::skill& s : skills) {
        if (!s.applies_to(t.family))
          continue;
        engine::applicability a = engine::check_applies(s, t, nullptr, reference);
        if (!a.applies) {
          std::cout << s.id << ": does not apply to task " << t.name << ": " << a.why_not << "\n";
          continue;
        }
        for (const engine::skill_template& tp : s.templates) {
          auto space = engine::space_of(tp, t, reference);
          if (!space) {
            problems +=
                s.id + "/" + tp.file + ": task " + t.name + ": " + space.error().message() + "\n";
            continue;
          }
          auto first = engine::first_valid(tp, *space, t);
          if (!first) {
            problems +=
                s.id + "/" + tp.file + ": task " + t.name + ": " + first.error().message() + "\n";
            continue;
          }
          if (!*first)
            continue;
          auto text = engine::render(s, tp, t, **first, reference);
          if (!text)
            problems += text.error().message() + "\n";
          else
            ++renders;
        }
      }
    }
  }
  if (!problems.empty()) {
    std::cout << problems << std::flush;
    return stop(stop_reason::task, dir.string() + ": invalid skill(s)");
  }
  std::cout << "ok: " << skills.size() << " skill(s)";
  if (!tasks_path.empty())
    std::cout << ", " << renders << " template(s) rendered for the tasks of their families";
  std::cout << "\n";
  return {};
}

/// Prints template `name` (default: the first) of the one skill in `dir` rendered for the task
/// of `manifest`, with its first valid instantiation but for the parameters `sets` names
/// (NAME=VALUE each); the values used go to stderr. For timing a chosen variant by hand
/// (`kernelskill eval TASK.toml rendered.cu`).
command_result render_one(const fs::path& dir, const fs::path& manifest, const std::string& name,
                          const std::vector<std::string>& sets) {
  auto folders = engine::read_skill_folders(dir);
  if (!folders)
    return stop(stop_reason::usage, folders.error().message());
  if (folders->size() != 1)
    return stop(stop_reason::usage, dir.string() + " holds " + std::to_string(folders->size()) +
                                        " skills: give the folder of one");
  auto s = engine::load_skill(folders->front());
  if (!s)
    return stop(stop_reason::task, s.error().message());
  auto tasks = engine::load_task_suite(manifest);
  if (!tasks)
    return stop(stop_reason::task, tasks.error().message());
  if (tasks->size() != 1)
    return stop(stop_reason::usage, manifest.string() + ": give one task manifest");
  const engine::task& t = engine::search_target(tasks->front());
  std::string reference = engine::read_reference(t).value_or("");
  auto tp =
      std::find_if(s->templates.begin(), s->templates.end(),
                   [&](const engine::skill_template& x) { return name.empty() || x.name == name; });
  if (tp == s->templates.end())
    return stop(stop_reason::usage, s->id + " has no template '" + name + "'");
  auto space = engine::space_of(*tp, t, reference);
  if (!space)
    return stop(stop_reason::task, space.error().message());
  auto first = engine::first_valid(*tp, *space, t);
  engine::param_values values = first && *first ? **first : engine::defaults_of(*space);
  for (const std::string& set : sets) {
    size_t eq = set.find('=');
    int64_t value = 0;
    const char* end = set.data() + set.size();
    if (eq == std::string::npos || std::from_chars(set.data() + eq + 1, end, value).ptr != end)
      return stop(stop_reason::usage, "--set " + set + ": give NAME=INTEGER");
    std::string key = set.substr(0, eq);
    if (values.count(key) == 0)
      return stop(stop_reason::usage, "--set " + set + ": " + s->id + "/" + tp->name +
                                          " has no parameter '" + key + "'");
    values[key] = value;
  }
  auto invalid = engine::check_params(*tp, *space, values, t);
  if (!invalid)
    return stop(stop_reason::task, invalid.error().message());
  if (*invalid)
    return stop(stop_reason::usage, s->id + "/" + tp->name + ": " + **invalid);
  auto text = engine::render(*s, *tp, t, values, reference);
  if (!text)
    return stop(stop_reason::task, text.error().message());
  std::string used;
  for (const auto& [key, value] : values)
    used += (used.empty() ? "" : ", ") + key + "=" + std::to_string(value);
  std::cerr << s->id << "/" << tp->name << " for " << t.name << ": " << used << "\n";
  std::cout << *text;
  return {};
}

} // namespace

CLI::App* add_skills_command(CLI::App& app, skills_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "skills",
      "Shows and edits the long-term skill memory: the skills a campaign chooses from and how "
      "each fared per op family and GPU. Every action but check and render opens the memory of "
      "--config ([memory] path) or --memory (default ./kernelskill-memory) and seeds it from "
      "the built-in skills first, as `run` does.");
  cmd->require_subcommand(1);
  auto common = [&](CLI::App* sub) {
    sub->add_option("--config", opt.config, "A campaign config: its [memory] path and skills")
        ->type_name("FILE");
    sub->add_option("--memory", opt.memory, "The memory folder (overrides --config's)")
        ->type_name("DIR");
    sub->add_option("--skills", opt.builtin, "The built-in skill folder to seed from")
        ->type_name("DIR");
    sub->footer("Exit codes: 0 success; 1 bad command line or unreadable file; 2 an invalid "
                "skill, import file or config; 3 the memory cannot be opened; 5 the memory is "
                "damaged (its data file cut short, or a record that does not match its "
                "checksum).");
    sub->callback([&opt, sub] { opt.action = sub->get_name(); });
  };
  CLI::App* list_cmd =
      cmd->add_subcommand("list", "Lists the skills: id, version, origin, families, tries");
  list_cmd->add_option("--family", opt.family, "Only skills for this op family")->type_name("F");
  common(list_cmd);
  CLI::App* show_cmd =
      cmd->add_subcommand("show", "Shows a skill: its text, templates and statistics per GPU");
  show_cmd->add_option("id", opt.id, "The skill's id")->required();
  common(show_cmd);
  CLI::App* stats_cmd = cmd->add_subcommand(
      "stats", "Shows the statistics per skill, op family and GPU architecture");
  stats_cmd->add_option("--gpu", opt.gpu, "Only this GPU architecture (sm_90a)")->type_name("ARCH");
  common(stats_cmd);
  CLI::App* export_cmd =
      cmd->add_subcommand("export", "Writes every skill of the memory to FILE (JSON)");
  export_cmd->add_option("file", opt.file, "The file to write")->required();
  common(export_cmd);
  CLI::App* import_cmd = cmd->add_subcommand(
      "import", "Imports the skills of FILE as the user's: all validated first, none written if "
                "one is invalid; a built-in skill never overwrites them");
  import_cmd->add_option("file", opt.file, "An export file")->required()->check(CLI::ExistingFile);
  common(import_cmd);
  CLI::App* check_cmd = cmd->add_subcommand(
      "check", "Checks the skill folder DIR (one skill, or a folder of skills): every problem as "
               "FILE:LINE:COL; with --tasks, renders each template for each task of its family");
  check_cmd->add_option("dir", opt.dir, "The skill folder")->required();
  check_cmd->add_option("--tasks", opt.tasks, "A task manifest or a folder of them")
      ->type_name("PATH");
  check_cmd->footer("Exit codes: 0 every skill is valid; 1 bad command line or no such "
                    "folder; 2 a skill is invalid (each problem printed as FILE:LINE:COL).");
  check_cmd->callback([&opt] { opt.action = "check"; });
  CLI::App* render_cmd = cmd->add_subcommand(
      "render", "Prints the source that the skill in folder DIR renders for the task of "
                "TASK.toml: its first valid instantiation, with --set parameters by hand");
  render_cmd->add_option("dir", opt.dir, "The skill's folder")->required();
  render_cmd->add_option("--task", opt.task, "The task manifest")
      ->required()
      ->type_name("TASK.toml");
  render_cmd->add_option("--template", opt.template_name, "The template (default: the first)")
      ->type_name("NAME");
  render_cmd->add_option("--set", opt.sets, "A parameter's value, one of its listed values")
      ->type_name("NAME=VALUE");
  render_cmd->footer("Exit codes: 0 rendered (the source on stdout, the values used on "
                     "stderr); 1 bad command line, no such folder or parameter, or values that "
                     "break the template's constraints; 2 an invalid skill or task.");
  render_cmd->callback([&opt] { opt.action = "render"; });
  return cmd;
}

command_result run_skills(const skills_options& opt) {
  if (opt.action == "check")
    return check(opt.dir, opt.tasks);
  if (opt.action == "render")
    return render_one(opt.dir, opt.task, opt.template_name, opt.sets);
  auto p = places_of(opt);
  if (!p)
    return tl::unexpected(p.error());
  if (opt.action == "list")
    return list(*p, opt.family);
  if (opt.action == "show")
    return show(*p, opt.id);
  if (opt.action == "stats")
    return stats(*p, opt.gpu);
  if (opt.action == "export")
    return export_to(*p, opt.file);
  if (opt.action == "import")
    return import_from(*p, opt.file);
  return stop(stop_reason::usage,
              "skills: give an action: list, show, stats, export, import, check, render");
}

} // namespace ks::cli
