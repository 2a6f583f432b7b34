#include "actors/dry_run.hpp"

#include "actors/dry_run_actor.hpp"
#include "actors/messages.hpp"
#include "actors/reporter_actor.hpp"
#include "engine/task_warnings.hpp"
#include "report/atomic_file.hpp"
#include "report/console.hpp"
#include "report/html_report.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

namespace ks::actors {

namespace console = report::console;

namespace fs = std::filesystem;
using engine::errc;

namespace {

/// The actors of a dry run's round: one dry-run actor per task, in task order, and the
/// reporter that shows them.
struct dry_round {
  std::vector<supervisor_actor> runs;
  reporter_actor reporter;
};

// Empties <output>/dry-run/ (the candidates of an earlier dry run would mislead) and returns it.
tl::expected<fs::path, campaign::campaign_error> make_dry_run_folder(const fs::path& output) {
  const fs::path folder = output / "dry-run";
  std::error_code ec;
  fs::remove_all(folder, ec);
  fs::create_directories(folder, ec);
  if (ec) {
    campaign::campaign_error e{
        engine::error{errc::io, "cannot create " + folder.string() + ": " + ec.message()}};
    e.environment = true;
    return tl::unexpected(std::move(e));
  }
  return folder;
}

dry_round spawn_dry_round(caf::actor_system& sys, exit_guard& guard,
                          const config::campaign_config& config,
                          const campaign::run_options& options, const campaign_tasks& tasks,
                          const team& members, const std::string& arch, const fs::path& folder) {
  dry_round out;
  for (const std::string& name : tasks.order) {
    dry_run_setup d;
    d.task = name;
    d.tasks = tasks.table;
    d.team = members;
    d.count = std::min(config.search.branches, config.campaign.candidates_per_task);
    d.arch = arch;
    d.folder = folder / name;
    if (options.gpu_memory)
      d.gpu = *options.gpu_memory;
    out.runs.push_back(guard.keep(spawn_dry_run(sys, std::move(d))));
  }
  reporter_setup rs;
  rs.supervisors = out.runs;
  rs.tasks = tasks.order;
  rs.interval_s = options.progress_interval_s;
  rs.write_interval_s = 0;
  rs.dry_run = true;
  out.reporter = guard.keep(spawn_reporter(sys, std::move(rs)));
  return out;
}

// Tells every dry run, and the model gateway, that Ctrl-C was pressed: model requests in
// flight are cancelled, not waited for.
void interrupt(caf::scoped_actor& self, const dry_round& round, const llm_gateway_actor& gateway) {
  for (const supervisor_actor& r : round.runs)
    self->send(r, stop_msg{stop_kind::interrupt, "interrupted"});
  if (gateway != nullptr)
    self->send(gateway, stop_msg{stop_kind::interrupt, "interrupted (Ctrl-C)"});
}

/// What the dry runs answered, by task name, and whether Ctrl-C cut them short.
struct dry_answers {
  std::map<std::string, task_report> reports;
  bool interrupted = false;
};

// Starts every dry run and waits until each has answered, passing each report to the
// reporter. Requests are answered as ordinary messages here (sent, not requested): the wait
// takes them in any order and still polls the stop flag every 100 ms.
dry_answers run_round(caf::scoped_actor& self, const dry_round& round,
                      const campaign::run_options& options, const llm_gateway_actor& gateway) {
  dry_answers out;
  for (const supervisor_actor& r : round.runs)
    self->send(r, run_task{});
  while (out.reports.size() < round.runs.size()) {
    self->receive(
        [&](task_report& r) {
          self->send(round.reporter, r);
          out.reports[r.name] = std::move(r);
        },
        [&](caf::error& e) {
          // Never expected (a dry run answers with a report); keep the wait from hanging.
          task_report r;
          r.name = "?" + std::to_string(out.reports.size());
          r.phase = engine::task_phase::failed;
          r.stop_text = describe(e);
          out.reports[r.name] = std::move(r);
        },
        caf::after(std::chrono::milliseconds(100)) >>
            [&] {
              if (!out.interrupted && stop_seen(options)) {
                out.interrupted = true;
                say_stopping(run_kind::dry_run);
                interrupt(self, round, gateway);
              }
            });
  }
  return out;
}

// Kills the compilers this process started: every child whose command line names `nvcc` (the
// compile service's, or a script standing in for it). Each leads a process group of its own,
// so the group takes cicc, ptxas and the host compiler with it. Only for a dry run that was
// interrupted: its compiles feed nothing that is kept, and waiting for them would hold the
// exit for seconds. The compile pool's workers then see an nvcc killed by a signal, which is
// never cached. Returns how many were killed.
int64_t kill_compilers(const fs::path& nvcc) {
  int64_t killed = 0;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/self/task", ec)) {
    std::ifstream children(task.path() / "children");
    pid_t pid = 0;
    while (children >> pid) {
      std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
      std::string argument;
      bool is_compiler = false;
      while (!is_compiler && std::getline(cmdline, argument, '\0'))
        is_compiler = argument == nvcc.string();
      if (is_compiler && ::kill(-pid, SIGKILL) == 0)
        ++killed;
    }
  }
  return killed;
}

// Stops the compiles of an interrupted dry run: the pool first, so that it starts no queued
// compile in place of a killed one; then the nvcc processes in flight, until none is left (a
// second or so at most).
void stop_compiles(caf::scoped_actor& self, const team& members, const fs::path& nvcc) {
  self->send_exit(members.compiler, caf::exit_reason::user_shutdown);
  for (int32_t round = 0; round < 40 && kill_compilers(nvcc) > 0; ++round)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// Writes what a dry run printed into <dry-run folder>/summary.txt, for `kernelskill status`
// and for whoever reads the output folder later.
void write_dry_run_summary(const fs::path& folder, const std::string& arch,
                           const std::vector<task_report>& reports, bool interrupted) {
  std::ofstream out(folder / "summary.txt", std::ios::binary | std::ios::trunc);
  out << "dry run of " << reports.size() << (reports.size() == 1 ? " task" : " tasks") << " for "
      << arch << ", " << now_iso8601() << (interrupted ? ", interrupted" : "")
      << ": compiled, planned, coded and compiled one round; nothing was measured, no state "
         "was saved\n";
  for (const task_report& r : reports)
    for (const std::string& line : r.dry_run_lines)
      out << line << "\n";
}

// Writes <dry-run folder>/report.html: each task's reference and candidates as a tree, with
// what the dry run printed. A report that cannot be written is said; the dry run stands.
void write_dry_run_report(const fs::path& folder, const config::campaign_config& config,
                          const std::string& arch, const std::vector<task_report>& reports,
                          bool interrupted) {
  report::dry_run_facts facts;
  facts.arch = arch;
  facts.started_at = now_iso8601();
  facts.config_text = config_text_of(config);
  facts.interrupted = interrupted;
  std::vector<report::dry_run_task> tasks;
  for (const task_report& r : reports)
    tasks.push_back(report::dry_run_task{r.name, r.phase != engine::task_phase::failed, r.stop_text,
                                         r.dry_run_nodes, r.dry_run_lines});
  report::report_input input;
  input.results = report::dry_run_document(facts, tasks);
  if (auto written = report::write_atomically(folder / report::report_html_file,
                                              report::render_report_html(input));
      !written)
    console::line(console::stream::err, "kernelskill: " + written.error().message());
}

campaign::campaign_summary summary_of(const std::vector<task_report>& reports, bool interrupted,
                                      double wall_s, const fs::path& folder,
                                      const std::optional<model_side>& model) {
  campaign::campaign_summary summary;
  summary.interrupted = interrupted;
  summary.wall_s = wall_s;
  summary.dry_run_dir = folder;
  for (const task_report& t : reports)
    summary.tasks.push_back(campaign::task_summary{t.name, t.stop_reason, t.nodes, 0, 0, 0, 0,
                                                   t.phase == engine::task_phase::failed,
                                                   t.stop_text});
  if (model)
    count_model_use(summary, *model);
  return summary;
}

} // namespace

tl::expected<campaign::campaign_summary, campaign::campaign_error>
run_dry_campaign(const config::campaign_config& config, const campaign::run_options& options,
                 const campaign_tasks& tasks, const fs::path& output) {
  // The built-in skills only: a dry run writes no long-term memory.
  auto skills = open_skill_memory(config, run_kind::dry_run);
  if (!skills)
    return tl::unexpected(skills.error());

  caf::actor_system_config cfg;
  caf::actor_system sys(cfg);
  caf::scoped_actor self(sys);
  exit_guard guard(self);
  if (stop_seen(options)) {
    say_stopping(run_kind::dry_run);
    campaign::campaign_summary stopped;
    stopped.interrupted = true;
    return stopped;
  }

  // The compile service for the arch the command line names (there is no GPU to ask), else
  // the compiler's default.
  const std::string arch = options.arch.empty() ? gpu::compiler_options{}.arch : options.arch;
  auto compiler = make_compiler(config, options, output, arch);
  if (!compiler)
    return tl::unexpected(compiler.error());
  // The agents, with the model gateway when they think with a model.
  // No store: the transcripts stay files of <output>/dry-run/transcripts/ only.
  auto model = open_model(sys, guard, config, output / "dry-run", run_kind::dry_run, {});
  if (!model)
    return tl::unexpected(model.error());
  auto members = spawn_team(sys, guard, config, tasks, *skills, *compiler,
                            backend_context_for(*skills, arch, **compiler), *model, store_actor{},
                            bench_dispatcher_actor{});
  if (!members)
    return tl::unexpected(members.error());

  // One round per task, printed as it comes; nothing is kept but the compile cache and the
  // candidates' sources.
  auto folder = make_dry_run_folder(output);
  if (!folder)
    return tl::unexpected(folder.error());
  auto start = std::chrono::steady_clock::now();
  const llm_gateway_actor gateway = *model ? (*model)->gateway : llm_gateway_actor{};
  dry_round round = spawn_dry_round(sys, guard, config, options, tasks, *members, arch, *folder);
  dry_answers answers = run_round(self, round, options, gateway);
  if (answers.interrupted)
    stop_compiles(self, *members, (*compiler)->options().nvcc);
  // The reporter's last lines before the summary.
  (void)ask<ack>(self, round.reporter, report_now{true}, errc::internal);
  std::vector<task_report> reports;
  for (const std::string& name : tasks.order)
    if (auto it = answers.reports.find(name); it != answers.reports.end())
      reports.push_back(std::move(it->second));
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_dry_run_summary(*folder, arch, reports, answers.interrupted);
  write_dry_run_report(*folder, config, arch, reports, answers.interrupted);
  campaign::campaign_summary summary =
      summary_of(reports, answers.interrupted, wall_s, *folder, *model);
  // Each dry run printed its task's warnings first; the summary counts them again.
  for (campaign::task_summary& t : summary.tasks)
    if (auto it = tasks.table->find(t.name); it != tasks.table->end())
      t.warnings = static_cast<int64_t>(
          engine::task_warnings(it->second,
                                options.gpu_memory.value_or(engine::assumed_gpu_memory()))
              .size());
  return summary;
}

} // namespace ks::actors
