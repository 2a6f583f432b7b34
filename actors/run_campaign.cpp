// run_campaign: the wiring of a campaign, in the order it must happen.
//
//   1. the tasks (campaign.tasks globs), so that a typo costs no worker start; the torch
//      baselines file, if named (run_options.baselines, else report.torch_baselines), read
//      and its entries checked against the tasks' shapes, for the same reason;
//   2. the output folder (with the baselines' checked copy, torch_baselines.hpp): <output>/state is the store (LMDB), <output>/cache the compile cache
//      (unless run_options.cache_dir); a store that holds the campaign means a resume;
//   3. the GPUs: one bench actor per GPU (detached: its worker calls block), each asked one
//      info job, then one calibrate job unless the store has that device's calibration (by
//      uuid). With gpus = "all", device 0's info says how many devices there are;
//   4. the compile pool (one detached worker per CPU core), for the first GPU's architecture
//      (or run_options.arch);
//   5. the agents: planner, coder and repairer, each agents.max_concurrency times with its own
//      backend; the analyst and the judge. A model backend (openai, anthropic, replay) first
//      gets the campaign's one model service and gateway actor (llm_gateway_actor.hpp), which
//      every role's backend asks, its transcripts and llm_usage.json in the output folder (the
//      dry run's folder for a dry run), and, for a campaign with a skill memory, a distiller;
//   6. the campaign record (runs + 1, the environment as read);
//   7. the campaign actor, which spawns a supervisor per task and the reporter, and answers
//      once every task has ended. Meanwhile run_options.stop_requested is polled every 100
//      ms (and between the steps above); once set, the user is told what is kept and the
//      campaign is told to stop (see supervisor_actor.cpp: each job in flight finishes and
//      is written, nothing new starts, unfinished nodes wait for a resume);
//   8. shutdown: every actor is sent an exit message (a detached actor still receiving would
//      keep the actor system alive), and the system waits for them.
//
// A dry run skips 2's store, 3 and 6: no GPU, no worker, no state. In 7 it runs a dry-run
// actor per task instead (dry_run_actor.hpp: compile the reference, plan one round, code and
// compile it), which prints its lines as they come and writes its candidates to
// <output>/dry-run/<task>/; <output>/dry-run/summary.txt keeps every line. An interrupted
// dry run stops at once: it keeps nothing worth finishing, so the nvcc processes still
// running are killed rather than waited for.

#include "actors/run_campaign.hpp"

#include "actors/actor_error.hpp"
#include "actors/bench_dispatcher_actor.hpp"
#include "actors/campaign_actor.hpp"
#include "actors/campaign_tasks.hpp"
#include "actors/console.hpp"
#include "actors/distiller_actor.hpp"
#include "actors/dry_run_actor.hpp"
#include "actors/llm_gateway_actor.hpp"
#include "actors/messages.hpp"
#include "actors/records_json.hpp"
#include "actors/reporter_actor.hpp"
#include "actors/torch_baselines.hpp"
#include "agents/backend_registry.hpp"
#include "agents/llm_backend.hpp"
#include "engine/agent_backend.hpp"
#include "engine/judge.hpp"
#include "engine/skill_library.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_sandbox.hpp"
#include "memory/skill_store.hpp"
#include "memory/store.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <signal.h>

namespace ks::actors {

namespace fs = std::filesystem;
using engine::errc;
using engine::fail;

namespace {

/// Sends every actor it holds an exit message when it goes, so that the actor system, which
/// waits for all actors, can shut down on every path out of run_campaign.
class exit_guard {
public:
  explicit exit_guard(caf::scoped_actor& self) : self_(self) {}
  ~exit_guard() {
    for (const caf::actor& a : actors_)
      self_->send_exit(a, caf::exit_reason::user_shutdown);
  }
  template <class Handle>
  Handle keep(Handle h) {
    actors_.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }

private:
  caf::scoped_actor& self_;
  std::vector<caf::actor> actors_;
};

/// Asks `handle` and waits for the answer; an error becomes an engine error of `code`.
template <class Reply, class Handle, class Msg>
engine::expected<Reply> ask(caf::scoped_actor& self, const Handle& handle, Msg msg, errc code) {
  engine::expected<Reply> out = fail(code, "no answer");
  self->request(handle, caf::infinite, std::move(msg))
      .receive([&](Reply& r) { out = std::move(r); },
               [&](caf::error& e) { out = fail(code, describe(e)); });
  return out;
}

/// Sends `msg` to every handle at once, then collects the replies in order: bench actors
/// start their workers and calibrate side by side rather than one after another.
template <class Reply, class Handle, class Msg>
std::vector<engine::expected<Reply>>
ask_each(caf::scoped_actor& self, const std::vector<Handle>& handles, const Msg& msg, errc code) {
  using request_handle =
      decltype(self->request(std::declval<Handle>(), caf::infinite, std::declval<Msg>()));
  std::vector<request_handle> pending;
  pending.reserve(handles.size());
  for (const Handle& h : handles)
    pending.push_back(self->request(h, caf::infinite, msg));
  std::vector<engine::expected<Reply>> out;
  for (request_handle& r : pending) {
    engine::expected<Reply> one = fail(code, "no answer");
    r.receive([&](Reply& reply) { one = std::move(reply); },
              [&](caf::error& e) { one = fail(code, describe(e)); });
    out.push_back(std::move(one));
  }
  return out;
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// One GPU of the campaign as its bench actor reported it.
struct gpu_slot {
  bench_actor bench;
  gpu_description description;
};

/// Spawns the bench actors and asks each for its device and calibration (step 3).
tl::expected<std::vector<gpu_slot>, campaign_error>
open_gpus(caf::actor_system& sys, caf::scoped_actor& self, exit_guard& guard,
          const config::campaign_config& config, const run_options& options, store_actor store,
          task_table_ptr tasks) {
  bench_settings settings;
  settings.verify.trials = static_cast<int32_t>(config.bench.trials);
  settings.timing.warmup_ms = config.bench.warmup_ms;
  settings.timing.min_trials = static_cast<int32_t>(config.bench.min_timing_trials);
  settings.timing.max_ms = config.bench.max_timing_ms;
  // The worker runs candidates: it gets no secret of ours, and a sandbox when asked for. A
  // sandbox that cannot be made stops the campaign here, before any worker runs without it.
  gpu::worker_boundary boundary;
  boundary.sandbox =
      config.bench.sandbox ? gpu::sandbox_mode::bubblewrap : gpu::sandbox_mode::off;
  boundary.secret_env = config.bench.secret_env;
  if (!config.agents.api_key_env.empty())
    boundary.secret_env.push_back(config.agents.api_key_env);
  boundary.readable = {options.cache_dir.empty() ? config.output_dir() / "cache"
                                                 : options.cache_dir};
  if (config.bench.sandbox) {
    if (auto sandbox = gpu::probe_sandbox(boundary); !sandbox) {
      campaign_error e{sandbox.error()};
      e.environment = true;
      return tl::unexpected(std::move(e));
    }
  }
  auto spawn_one = [&](int32_t index, int32_t device) {
    gpu::worker_options w;
    w.boundary = boundary;
    w.executable = options.worker_executable.empty() ? gpu::default_worker_executable()
                                                     : options.worker_executable;
    w.device = device;
    w.verify_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(1000 * config.bench.verify_timeout_s));
    w.time_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(1000 * config.bench.time_timeout_s));
    w.profile_timeout = w.time_timeout; // a profile replays a call a few dozen times at most
    return guard.keep(spawn_gpu_bench(sys, index, std::move(w), settings, tasks));
  };
  const bench_job info_job{bench_kind::info, {}, {}, {}, -1, "info"};
  auto info_from = [](const engine::expected<bench_result>& r,
                      int32_t device) -> tl::expected<gpu::device_info, campaign_error> {
    if (!r)
      return tl::unexpected(r.error());
    if (!r->ok) {
      auto kind = static_cast<gpu::failure_kind>(r->failure);
      std::string hint = kind == gpu::failure_kind::no_device
                             ? "\n  without a GPU, --dry-run plans, codes and compiles one round"
                             : "";
      campaign_error e{
          engine::error{kind == gpu::failure_kind::no_device ? errc::not_found : errc::subprocess,
                        "device " + std::to_string(device) + ": " + r->message + hint}};
      e.gpu_failure = kind;
      return tl::unexpected(std::move(e));
    }
    return r->device();
  };
  auto info_of = [&](const bench_actor& b, int32_t device) {
    return info_from(ask<bench_result>(self, b, info_job, errc::subprocess), device);
  };

  std::vector<int32_t> devices = config.gpus.devices;
  std::vector<gpu_slot> gpus;
  if (config.gpus.all) {
    gpu_slot first{spawn_one(0, 0), {}};
    auto info = info_of(first.bench, 0);
    if (!info)
      return tl::unexpected(info.error());
    first.description.info = *info;
    gpus.push_back(std::move(first));
    for (int32_t d = 1; d < info->device_count; ++d)
      devices.push_back(d);
    devices.insert(devices.begin(), 0);
  }
  // The other devices start their workers side by side.
  std::vector<bench_actor> others;
  for (size_t i = gpus.size(); i < devices.size(); ++i)
    others.push_back(spawn_one(static_cast<int32_t>(i), devices[i]));
  size_t first_other = gpus.size();
  auto infos = ask_each<bench_result>(self, others, info_job, errc::subprocess);
  for (size_t k = 0; k < others.size(); ++k) {
    auto info = info_from(infos[k], devices[first_other + k]);
    if (!info)
      return tl::unexpected(info.error());
    gpus.push_back(gpu_slot{others[k], {}});
    gpus.back().description.info = *info;
  }
  // Calibrated once per device (the store keeps it by uuid); the rest calibrate side by side.
  std::vector<size_t> uncalibrated;
  for (size_t i = 0; i < gpus.size(); ++i) {
    gpu_description& d = gpus[i].description;
    d.index = static_cast<int32_t>(i);
    d.device = devices[i];
    auto stored = ask<calibration_reply>(self, store, get_calibration{d.info.uuid}, errc::io);
    if (stored && stored->found)
      if (auto c = parse_calibration(stored->json)) {
        d.calibration = *c;
        continue;
      }
    uncalibrated.push_back(i);
  }
  std::vector<bench_actor> to_calibrate;
  for (size_t i : uncalibrated)
    to_calibrate.push_back(gpus[i].bench);
  auto calibrations = ask_each<bench_result>(
      self, to_calibrate, bench_job{bench_kind::calibrate, {}, {}, {}, -1, "calibrate"},
      errc::subprocess);
  for (size_t k = 0; k < uncalibrated.size(); ++k) {
    gpu_description& d = gpus[uncalibrated[k]].description;
    const auto& r = calibrations[k];
    if (!r || !r->ok) {
      console::line(console::stream::err,
                    "kernelskill: cannot calibrate device " + std::to_string(d.device) + " (" +
                        (r ? r->message : r.error().message()) +
                        "); its roofline fractions stay unknown");
      continue;
    }
    d.calibration = r->calibration();
    ask<ack>(self, store, put_calibration{d.info.uuid, calibration_json(d.calibration)}, errc::io);
  }
  return gpus;
}

engine::policy_options policy_options_for(const config::campaign_config& config) {
  engine::policy_options out;
  for (const engine::policy_info& info : engine::policy_registry())
    if (info.name == config.search.policy)
      for (const engine::policy_option& o : info.options)
        if (o.name == "exploration")
          out.emplace("exploration", config.search.exploration);
  return out;
}

// Prints the campaign's perf tree: where the supervisors' time went, by step. Steps of
// parallel branches overlap, so the totals add up to more than the wall time.
void print_perf(const perf_tree& perf) {
  if (perf.empty())
    return;
  std::ostringstream out;
  out << "where the supervisors' time went (steps of parallel branches overlap):\n";
  for (const auto& [step, s] : perf) {
    char line[160];
    std::snprintf(
        line, sizeof line, "  %-20s %6lld x  mean %9.2f ms  max %9.2f ms  total %8.2f s\n",
        step.c_str(), static_cast<long long>(s.count),
        s.count > 0 ? s.total_ms / static_cast<double>(s.count) : 0.0, s.max_ms, s.total_ms / 1000);
    out << line;
  }
  std::string text = out.str();
  console::line(console::stream::err, text.substr(0, text.size() - 1)); // without its last '\n'
}

engine::backend_settings backend_settings_for(const config::agents_section& a) {
  engine::backend_settings s;
  s.endpoint = a.endpoint;
  s.model = a.model;
  s.api_key_env = a.api_key_env;
  s.max_concurrency = a.max_concurrency;
  s.request_timeout_s = a.request_timeout_s;
  s.reply_tokens = a.reply_tokens;
  s.temperature = a.temperature;
  return s;
}

/// Copies what the model service counted into `summary`.
void count_model_use(campaign_summary& summary, const agents::gateway_stats& s) {
  summary.model_used = true;
  summary.model_requests = s.total.requests;
  summary.model_retries = s.retries;
  summary.model_input_tokens = s.total.input_tokens;
  summary.model_output_tokens = s.total.output_tokens;
  summary.model_cost = s.total.cost;
  summary.model_budget_spent = s.budget_spent;
}

/// The campaign's model service, prompts and gateway actor (step 5a), when the agents think
/// with a model; `folder` holds its transcripts and llm_usage.json (the dry run's own folder
/// for a dry run, which starts from nothing).
struct model_side {
  std::shared_ptr<agents::model_service> service;
  std::shared_ptr<const agents::prompt_library> prompts;
  llm_gateway_actor gateway;
  agents::model_wiring wiring;
};

engine::expected<model_side> open_model(caf::actor_system& sys, exit_guard& guard,
                                        const config::campaign_config& config,
                                        const fs::path& folder, bool dry) {
  model_side out;
  auto prompts = agents::prompt_library::load(
      config.prompts_dir().empty() ? agents::default_prompts_dir() : config.prompts_dir());
  if (!prompts)
    return tl::unexpected(prompts.error());
  out.prompts = std::make_shared<const agents::prompt_library>(std::move(*prompts));
  agents::service_settings s;
  s.backend = config.agents.backend;
  s.endpoint = config.agents.endpoint;
  s.model = config.agents.model;
  s.api_key_env = config.agents.api_key_env;
  s.max_concurrency = config.agents.max_concurrency;
  s.request_timeout_s = config.agents.request_timeout_s;
  s.max_retries = config.agents.max_retries;
  s.retry_base_s = config.agents.retry_base_s;
  s.retry_max_s = config.agents.retry_max_s;
  s.token_budget = config.campaign.token_budget;
  s.cost_budget = config.campaign.cost_budget;
  for (const config::model_price_entry& p : config.agents.prices)
    if (p.model == config.agents.model)
      s.price = agents::model_price{p.input_per_mtok, p.output_per_mtok};
  s.transcripts_dir = folder / "transcripts";
  s.usage_file = folder / "llm_usage.json";
  s.replay_dir = config.replay_dir();
  if (dry) {
    // A dry run counts its own requests only; the folder is emptied before it starts.
    std::error_code ec;
    fs::remove(s.usage_file, ec);
  }
  auto service = agents::make_model_service(s);
  if (!service)
    return tl::unexpected(service.error());
  out.service = std::move(*service);
  out.gateway = guard.keep(spawn_llm_gateway(sys, out.service));
  out.wiring = agents::model_wiring{gateway_client(sys, out.gateway), out.prompts};
  return out;
}

engine::retrieval_rules retrieval_rules_for(const config::memory_section& m) {
  return {m.exploration, m.demote_min_tries, m.demote_failure_rate, m.demote_min_acceptance};
}

/// The long-term skill memory of a campaign and the library loaded from it.
struct skill_memory {
  std::shared_ptr<memory::skill_store> store; ///< null in a dry run: nothing is written
  engine::skill_library_ptr library;
};

// Opens the skill memory ([memory] path) and seeds it from the built-in skills, so that a
// skill edited in skills/ is refreshed and one a user imported stays; the campaign uses the
// memory's skills. A dry run writes nothing: it reads the built-in folder alone.
engine::expected<skill_memory> open_skill_memory(const config::campaign_config& config, bool dry) {
  fs::path builtin = config.skills_dir().empty() ? engine::default_skills_dir() : config.skills_dir();
  auto folders = engine::read_skill_folders(builtin);
  if (!folders)
    return tl::unexpected(folders.error());
  skill_memory out;
  if (dry) {
    auto library = engine::load_skill_library(builtin);
    if (!library)
      return tl::unexpected(library.error());
    out.library = std::make_shared<const engine::skill_library>(std::move(*library));
    return out;
  }
  auto opened = memory::skill_store::open(config.memory_dir());
  if (!opened)
    return tl::unexpected(opened.error());
  out.store = std::make_shared<memory::skill_store>(std::move(*opened));
  if (auto seeded = out.store->seed(*folders, now_iso8601()); !seeded)
    return tl::unexpected(seeded.error());
  auto library = out.store->library();
  if (!library)
    return tl::unexpected(library.error());
  out.library = std::make_shared<const engine::skill_library>(std::move(*library));
  return out;
}

bool stop_seen(const run_options& options) {
  return options.stop_requested != nullptr && options.stop_requested->load();
}

// Tells the user, once, what a stop keeps: the first Ctrl-C's answer.
void say_stopping(bool dry) {
  console::line(console::stream::err,
                dry ? "kernelskill: stopping the dry run now; it keeps nothing but the compile "
                      "cache and the candidates written so far (Ctrl-C again to quit at once)"
                    : "kernelskill: stopping at the next step: the jobs in flight finish and are "
                      "saved, nothing new starts; the same command resumes (Ctrl-C again to "
                      "quit at once)");
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

// Writes what a dry run printed into <dry-run folder>/summary.txt, for `kernelskill status`
// and for whoever reads the output folder later.
void write_dry_run_summary(const fs::path& folder, const std::string& arch,
                           const std::vector<task_report>& reports, bool interrupted) {
  std::ofstream out(folder / "summary.txt", std::ios::binary | std::ios::trunc);
  out << "dry run of " << reports.size() << (reports.size() == 1 ? " task" : " tasks")
      << " for " << arch << ", " << now_iso8601()
      << (interrupted ? ", interrupted" : "")
      << ": compiled, planned, coded and compiled one round; nothing was measured, no state "
         "was saved\n";
  for (const task_report& r : reports)
    for (const std::string& line : r.dry_run_lines)
      out << line << "\n";
}

/// Runs the dry run of every task (step 7 of a dry run): a dry-run actor per task and the
/// reporter; returns their reports in task order once every one has answered, or as soon as
/// a stop was seen.
std::vector<task_report> run_dry_round(caf::actor_system& sys, caf::scoped_actor& self,
                                       exit_guard& guard, const std::vector<std::string>& order,
                                       const task_table_ptr& table, const team& members,
                                       const config::campaign_config& config,
                                       const run_options& options, const std::string& arch,
                                       const fs::path& folder, const fs::path& nvcc,
                                       const llm_gateway_actor& gateway, bool& interrupted) {
  std::vector<supervisor_actor> runs;
  for (const std::string& name : order) {
    dry_run_setup d;
    d.task = name;
    d.tasks = table;
    d.team = members;
    d.count = std::min(config.search.branches, config.campaign.candidates_per_task);
    d.arch = arch;
    d.folder = folder / name;
    runs.push_back(guard.keep(spawn_dry_run(sys, std::move(d))));
  }
  reporter_setup rs;
  rs.supervisors = runs;
  rs.tasks = order;
  rs.interval_s = options.progress_interval_s;
  rs.write_interval_s = 0;
  rs.dry_run = true;
  reporter_actor reporter = guard.keep(spawn_reporter(sys, std::move(rs)));

  // Requests are answered as ordinary messages here (sent, not requested): the wait below
  // takes them in any order and still polls the stop flag.
  std::map<std::string, task_report> reports;
  for (const supervisor_actor& r : runs)
    self->send(r, run_task{});
  bool stop_sent = false;
  while (reports.size() < runs.size()) {
    self->receive(
        [&](task_report& r) {
          self->send(reporter, r);
          reports[r.name] = std::move(r);
        },
        [&](caf::error& e) {
          // Never expected (a dry run answers with a report); keep the wait from hanging.
          task_report r;
          r.name = "?" + std::to_string(reports.size());
          r.phase = "failed";
          r.stop_text = describe(e);
          reports[r.name] = std::move(r);
        },
        caf::after(std::chrono::milliseconds(100)) >>
            [&] {
              if (!stop_sent && stop_seen(options)) {
                stop_sent = true;
                interrupted = true;
                say_stopping(true);
                for (const supervisor_actor& r : runs)
                  self->send(r, stop_msg{stop_kind::interrupt, "interrupted"});
                // Model requests in flight are cancelled, not waited for.
                if (gateway != nullptr)
                  self->send(gateway, stop_msg{stop_kind::interrupt, "interrupted (Ctrl-C)"});
              }
            });
  }
  if (interrupted) {
    // The pool first, so that it starts no queued compile in place of a killed one; then
    // the nvcc processes in flight, until none is left (a second or so at most).
    self->send_exit(members.compiler, caf::exit_reason::user_shutdown);
    for (int32_t round = 0; round < 40 && kill_compilers(nvcc) > 0; ++round)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ask<ack>(self, reporter, report_now{true}, errc::internal);
  std::vector<task_report> ordered;
  for (const std::string& name : order) {
    auto it = reports.find(name);
    if (it != reports.end())
      ordered.push_back(std::move(it->second));
  }
  return ordered;
}

} // namespace

tl::expected<campaign_summary, campaign_error> run_campaign(const config::campaign_config& config,
                                                            const run_options& options) {
  const bool dry = options.dry_run;
  // 1. The tasks.
  auto loaded = load_campaign_tasks(config);
  if (!loaded)
    return tl::unexpected(loaded.error());
  // 1b. The torch baselines: read and checked now, so a bad file costs no worker start.
  std::optional<torch_baselines> baselines;
  const fs::path baselines_file =
      options.baselines.empty() ? config.torch_baselines_file() : options.baselines;
  if (!baselines_file.empty()) {
    auto read = read_torch_baselines(baselines_file);
    if (!read)
      return fail(read.error().code(), (options.baselines.empty()
                                            ? config.source.string() + ": report.torch_baselines: "
                                            : std::string("--baselines: ")) +
                                           read.error().message());
    for (const std::string& warning : check_shapes(*read, *loaded))
      console::line(console::stream::err, "kernelskill: warning: " + warning);
    baselines = std::move(*read);
  }
  auto table = std::make_shared<task_table>();
  std::vector<std::string> order;
  for (engine::task& t : *loaded) {
    order.push_back(t.name);
    table->emplace(t.name, std::move(t));
  }
  engine::search_limits limits{config.search.branches,
                               config.search.depth,
                               config.campaign.candidates_per_task,
                               config.search.stop_roofline_fraction,
                               config.search.stop_patience,
                               config.search.min_gain};
  if (auto ok = engine::validate(limits); !ok)
    return tl::unexpected(ok.error());
  if (auto ok = engine::make_policy(config.search.policy, policy_options_for(config)); !ok)
    return tl::unexpected(ok.error());

  // 2. The output folder and the store.
  const fs::path output = config.output_dir();
  std::error_code ec;
  fs::create_directories(output, ec);
  if (ec)
    return fail(errc::io,
                "cannot create the output folder " + output.string() + ": " + ec.message());
  std::shared_ptr<memory::store> db;
  // The campaign's name in long-term memory's ledger of tries: its folder and start time.
  std::string started_at = now_iso8601();
  if (!dry) {
    auto opened = memory::store::open(output / "state");
    if (!opened)
      return tl::unexpected(opened.error());
    db = std::make_shared<memory::store>(std::move(*opened));
    if (auto earlier = db->campaign(); earlier && *earlier)
      started_at = (*earlier)->started_at;
    // The reports read the baselines from the output folder, as `status` does later.
    if (auto written = write_campaign_baselines(output, baselines ? &*baselines : nullptr);
        !written)
      return tl::unexpected(written.error());
  }
  // 2b. Long-term memory: the skills, seeded from the built-in folder, and their statistics.
  auto skills = open_skill_memory(config, dry);
  if (!skills)
    return tl::unexpected(skills.error());

  caf::actor_system_config cfg;
  caf::actor_system sys(cfg);
  caf::scoped_actor self(sys);
  exit_guard guard(self);
  store_actor store =
      dry ? store_actor{}
          : guard.keep(spawn_store(sys, db, spawn_mode::detached, skills->store,
                                   output.string() + "@" + started_at));
  campaign_reply prior;
  if (!dry) {
    auto r = ask<campaign_reply>(self, store, get_campaign{}, errc::io);
    if (!r)
      return tl::unexpected(r.error());
    prior = std::move(*r);
  }

  // 3. The GPUs.
  std::vector<gpu_slot> gpus;
  if (!dry) {
    auto opened = open_gpus(sys, self, guard, config, options, store, table);
    if (!opened)
      return tl::unexpected(opened.error());
    gpus = std::move(*opened);
  }
  // Baselines of another GPU are shown, flagged (torch_baselines.hpp says why not refused).
  std::vector<std::string> gpu_names;
  for (const gpu_slot& g : gpus)
    gpu_names.push_back(g.description.info.name);
  if (baselines && !dry)
    if (std::string note = device_mismatch(*baselines, gpu_names); !note.empty())
      console::line(console::stream::err, "kernelskill: warning: " + note);
  // Starting the workers can take seconds: a stop meanwhile ends the campaign before it starts.
  if (stop_seen(options)) {
    say_stopping(dry);
    campaign_summary stopped;
    stopped.interrupted = true;
    stopped.resumed = prior.found;
    return stopped;
  }

  // 4. The compile pool, for the first GPU's architecture.
  gpu::compiler_options co;
  co.nvcc = options.nvcc;
  co.include_dir = options.include_dir;
  co.cache_dir = options.cache_dir.empty() ? output / "cache" : options.cache_dir;
  co.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(1000 * config.bench.compile_timeout_s));
  if (!options.arch.empty())
    co.arch = options.arch;
  else if (!gpus.empty())
    co.arch = gpus.front().description.info.arch.empty()
                  ? gpu::arch_for(gpus.front().description.info.cc_major,
                                  gpus.front().description.info.cc_minor)
                  : gpus.front().description.info.arch;
  auto made = gpu::compiler::create(co);
  if (!made) {
    campaign_error e{made.error()};
    e.environment = true;
    return tl::unexpected(std::move(e));
  }
  auto compiler = std::make_shared<const gpu::compiler>(std::move(*made));
  int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());

  // 5. The agents.
  team members;
  members.store = store;
  members.compiler = guard.keep(spawn_compile_pool(sys, compiler, cores));
  int64_t agents = std::max<int64_t>(1, config.agents.max_concurrency);
  engine::backend_settings settings = backend_settings_for(config.agents);
  engine::backend_context context{skills->library, co.arch,
                                  read_text(compiler->options().include_dir / "kernelskill" /
                                            "abi.h")};
  // 5a. The model gateway: one for every role and task, so that the concurrency limit, the
  // retries and the budgets are the campaign's.
  std::optional<model_side> model;
  if (agents::needs_model(config.agents.backend)) {
    auto opened = open_model(sys, guard, config, dry ? output / "dry-run" : output, dry);
    if (!opened)
      return tl::unexpected(opened.error());
    model = std::move(*opened);
  }
  const agents::model_wiring wiring = model ? model->wiring : agents::model_wiring{};
  for (int64_t i = 0; i < agents; ++i) {
    std::shared_ptr<engine::agent_backend> backends[3];
    for (auto& b : backends) {
      auto made_backend = agents::make_backend(config.agents.backend, settings, context, wiring);
      if (!made_backend)
        return tl::unexpected(made_backend.error());
      b = std::move(*made_backend);
    }
    members.planners.push_back(guard.keep(spawn_planner(sys, backends[0], table,
                                                        spawn_mode::detached, skills->library,
                                                        retrieval_rules_for(config.memory))));
    members.coders.push_back(guard.keep(spawn_coder(sys, backends[1], table)));
    members.repairers.push_back(guard.keep(spawn_repairer(sys, backends[2], table)));
  }
  members.analyst = guard.keep(spawn_analyst(sys, table));
  members.judge = guard.keep(spawn_judge(sys, engine::judge_options{config.search.min_gain}));
  bench_dispatcher_actor dispatcher;
  if (!dry) {
    std::vector<bench_actor> benches;
    for (const gpu_slot& g : gpus)
      benches.push_back(g.bench);
    dispatcher = guard.keep(spawn_bench_dispatcher(sys, std::move(benches)));
    members.bench = dispatcher;
    members.homes = dispatcher;
  }

  // 6. The campaign record.
  std::vector<gpu_description> described;
  for (const gpu_slot& g : gpus)
    described.push_back(g.description);
  if (!dry) {
    memory::campaign_record record = prior.found ? prior.record : memory::campaign_record{};
    if (!prior.found) {
      record.started_at = started_at;
      record.config_text =
          config.source.empty() ? config::config_text(config) : read_text(config.source);
    }
    record.runs += 1;
    record.environment = environment_json(described, co.arch, compiler->nvcc_version(), dry);
    if (auto r = ask<ack>(self, store, put_campaign{record}, errc::io); !r)
      return tl::unexpected(r.error());
  }

  // 7. A dry run: one round per task, printed as it comes; nothing is kept but the compile
  // cache and the candidates' sources.
  if (dry) {
    const fs::path folder = output / "dry-run";
    fs::remove_all(folder, ec); // the candidates of an earlier dry run would mislead
    fs::create_directories(folder, ec);
    if (ec) {
      campaign_error e{engine::error{errc::io, "cannot create " + folder.string() + ": " +
                                                   ec.message()}};
      e.environment = true;
      return tl::unexpected(std::move(e));
    }
    auto start = std::chrono::steady_clock::now();
    campaign_summary summary;
    std::vector<task_report> reports = run_dry_round(sys, self, guard, order, table, members,
                                                     config, options, co.arch, folder,
                                                     compiler->options().nvcc,
                                                     model ? model->gateway : llm_gateway_actor{},
                                                     summary.interrupted);
    summary.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    summary.dry_run_dir = folder;
    for (const task_report& t : reports)
      summary.tasks.push_back(task_summary{t.name, t.stop_reason, t.nodes, 0, 0, 0, 0,
                                           t.phase == "failed", t.stop_text});
    write_dry_run_summary(folder, co.arch, reports, summary.interrupted);
    if (model)
      count_model_use(summary, model->service->stats());
    return summary;
  }

  // Long-term memory counts every settled try of this campaign's store once, the tries a kill
  // lost between the two stores' commits included, before any new try settles.
  if (!dry) {
    reconcile_tries m;
    m.arch = co.arch;
    for (const auto& [name, t] : *table)
      m.families.emplace(name, t.family);
    if (auto r = ask<ack>(self, store, std::move(m), errc::io); !r)
      return tl::unexpected(r.error());
  }

  // 7. The campaign: a supervisor per task. The dispatcher gives each its home GPU once its
  // reference is verified (least load first); GPU i mod n is only the fallback.
  std::vector<gpu_peaks> peaks;
  for (const gpu_description& d : described)
    peaks.push_back(gpu_peaks{d.info.name, d.calibration.dram_gbps, d.calibration.fp32_gflops});
  campaign_setup setup;
  for (size_t i = 0; i < order.size(); ++i) {
    supervisor_setup s;
    s.task = order[i];
    s.home_gpu = gpus.empty() ? 0 : static_cast<int32_t>(i % gpus.size());
    if (!gpus.empty()) {
      const gpu_description& home = gpus[static_cast<size_t>(s.home_gpu)].description;
      s.gpu_name = home.info.name;
      s.peak_gbps = home.calibration.dram_gbps;
      s.peak_gflops = home.calibration.fp32_gflops;
    }
    s.gpus = peaks;
    s.limits = limits;
    s.policy = config.search.policy;
    s.profile = config.search.profile;
    s.expand_max_fraction = config.search.expand_max_fraction;
    s.policy_options = policy_options_for(config);
    s.repair_rounds = config.agents.repair_rounds;
    s.finalists = config.search.finalists;
    s.arch = co.arch;
    s.tasks = table;
    s.team = members;
    setup.tasks.push_back(std::move(s));
  }
  setup.dispatcher = dispatcher;
  for (const gpu_description& d : described)
    setup.gpu_names.push_back(d.info.name);
  setup.store = store;
  setup.output_dir = output.string();
  setup.wall_time_s = config.campaign.wall_time_s;
  setup.gpu_seconds = config.campaign.gpu_seconds;
  setup.progress_interval_s = options.progress_interval_s;
  if (model) {
    setup.llm = model->gateway;
    setup.model_budget = config.campaign.token_budget > 0 || config.campaign.cost_budget > 0;
    setup.min_gain = config.search.min_gain;
    // Skill distillation: a learned skill goes to the long-term skill memory, so only where
    // there is one.
    if (config.agents.distill && skills->store != nullptr) {
      distiller_setup d;
      d.backend = std::make_shared<agents::llm_backend>(config.agents.backend, model->wiring.client,
                                                        model->prompts, settings, context);
      d.tasks = table;
      d.store = store;
      d.compiler = members.compiler;
      d.bench = dispatcher;
      d.skills = skills->library;
      d.arch = co.arch;
      d.run = output.string() + "@" + started_at;
      d.min_gain = config.search.min_gain;
      setup.distiller = guard.keep(spawn_distiller(sys, std::move(d)));
    }
  }
  campaign_actor campaign = guard.keep(spawn_campaign(sys, std::move(setup)));

  // run_all's answer comes back as an ordinary message (sent, not requested), so the wait can
  // poll stop_requested in between.
  self->send(campaign, run_all{});
  std::optional<campaign_report> report;
  std::optional<std::string> failure;
  bool stop_sent = false;
  while (!report && !failure) {
    self->receive([&](campaign_report& r) { report = std::move(r); },
                  [&](caf::error& e) { failure = describe(e); },
                  caf::after(std::chrono::milliseconds(100)) >>
                      [&] {
                        if (!stop_sent && stop_seen(options)) {
                          stop_sent = true;
                          say_stopping(false);
                          self->send(campaign, stop_msg{stop_kind::interrupt, "interrupted"});
                          // Queued bench jobs are dropped (the nodes wait for the resume):
                          // only the jobs running are waited for.
                          self->send(dispatcher, stop_msg{stop_kind::interrupt, "interrupted"});
                          // Model requests in flight are cancelled: their nodes are redone.
                          if (model)
                            self->send(model->gateway,
                                       stop_msg{stop_kind::interrupt, "interrupted (Ctrl-C)"});
                        }
                      });
  }
  if (failure)
    return fail(errc::internal, "the campaign failed: " + *failure);

  // The summary.
  campaign_summary summary;
  summary.interrupted = report->interrupted;
  summary.resumed = prior.found;
  summary.wall_s = report->wall_s;
  for (const task_report& t : report->tasks) {
    summary.tasks.push_back(task_summary{t.name, t.stop_reason, t.nodes, t.reference_ms, t.best_ms,
                                         t.speedup, t.fraction_of_roofline, t.phase == "failed",
                                         t.stop_text});
    summary.candidates_verified += t.verified;
    summary.candidates_timed += t.timed;
  }
  for (double busy_ms : report->bench.busy_ms)
    summary.gpu_busy_share.push_back(report->wall_s > 0 ? busy_ms / (1000 * report->wall_s) : 0);
  summary.gpu_names = std::move(gpu_names);
  summary.baselines = std::move(baselines);
  if (model)
    count_model_use(summary, model->service->stats());
  if (options.progress_interval_s > 0)
    print_perf(report->perf);
  return summary;
}

} // namespace ks::actors
