// run_campaign: the wiring of a campaign, as named steps in the order they must happen. Each
// step is a function that takes what the steps before it made and returns what it makes.
//
//   1. load_tasks: the tasks (campaign.tasks globs), so that a typo costs no worker start; the
//      torch baselines file, if named (run_options.baselines, else report.torch_baselines),
//      read and its entries checked against the tasks' shapes, for the same reason;
//      then preflight: every other check that needs no GPU (the output folder, the skills,
//      the model's prompts and key, the sandbox), all reported at once, as `config --check`
//      reports them;
//   2. make_output_folder (locked for the run; refused when another run holds it, or when it
//      holds something else: output_folder.hpp), open_state: <output>/state is the store
//      (LMDB), every record checked before a resume builds on it (a damaged store, or a lost
//      one beside a campaign's results, refused unless --overwrite: campaign_store.hpp), and
//      the baselines'
//      checked copy goes beside it (torch_baselines.hpp); a store that holds the campaign
//      means a resume. open_skill_memory: the long-term skill memory, seeded from skills/;
//   3. open_gpus: one bench actor per GPU (detached: its worker calls block), each asked one
//      info job (with gpus = "all", device 0's info says how many devices there are);
//      calibrate: one calibrate job per device unless the store has its calibration (by
//      uuid);
//   4. make_compiler: the compile service for the first GPU's architecture (or
//      run_options.arch), <output>/cache its cache unless run_options.cache_dir;
//   5. open_model, spawn_team: the agents (planner, coder and repairer, each
//      agents.max_concurrency times with its own backend; the analyst and the judge), the
//      compile pool (one detached worker per CPU core) and the bench dispatcher. A model
//      backend (openai, anthropic, replay) first gets the campaign's one model service and
//      gateway actor (llm_gateway_actor.hpp), which every role's backend asks, its
//      transcripts and llm_usage.json in the output folder (each transcript in the store
//      too), and, for a campaign with a skill memory, a distiller;
//   6. write_campaign_record: the campaign record (runs + 1, the environment as read);
//      reconcile_skill_tries: long-term memory counts every settled try of this store once;
//   7. the campaign actor, which spawns a supervisor per task and the reporter, and answers
//      once every task has ended (wait_for_campaign). Meanwhile run_options.stop_requested is
//      polled every 100 ms (and between the steps above); once set, the user is told what is
//      kept and the campaign is told to stop (see supervisor_actor.cpp: each job in flight
//      finishes and is written, nothing new starts, unfinished nodes wait for a resume);
//   8. shutdown: every actor is sent an exit message (exit_guard: a detached actor still
//      receiving would keep the actor system alive), and the system waits for them.
//
// A dry run shares 1, 2's output folder and 4 and 5, and has its own file (dry_run.hpp): no
// GPU, no worker, no state.

#include "actors/run_campaign.hpp"

#include "actors/bench_dispatcher_actor.hpp"
#include "actors/campaign_actor.hpp"
#include "actors/campaign_steps.hpp"
#include "actors/distiller_actor.hpp"
#include "actors/dry_run.hpp"
#include "actors/messages.hpp"
#include "agents/llm_backend.hpp"
#include "base/text.hpp"
#include "campaign/preflight.hpp"
#include "engine/skill_stats_key.hpp"
#include "gpu/worker_sandbox.hpp"
#include "memory/store.hpp"
#include "report/bench_trace.hpp"
#include "report/campaign_store.hpp"
#include "report/console.hpp"
#include "report/gpu_stability.hpp"
#include "report/records_json.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>

#include <chrono>
#include <cstdio>
#include <sstream>

namespace ks::actors {

namespace console = report::console;

namespace fs = std::filesystem;
using engine::errc;
using engine::fail;

namespace {

/// The campaign's store (step 2) and the campaign's start, its name in long-term memory's
/// ledger of tries together with the output folder.
struct campaign_state {
  std::shared_ptr<memory::store> db;
  std::string started_at;
};

// Opens <output>/state, every record checked (campaign_store.hpp: a damaged store, or a lost
// one beside a campaign's results, is refused unless --overwrite); a campaign it holds keeps
// its start time. Writes the baselines' copy that the reports read, as `status` does later.
engine::expected<campaign_state>
open_state(const fs::path& output, const campaign::run_options& options,
           const std::optional<report::torch_baselines>& baselines) {
  std::string moved_aside;
  auto opened = open_campaign_store(output, options.foreign, &moved_aside);
  if (!opened)
    return tl::unexpected(opened.error());
  if (!moved_aside.empty())
    console::line(console::stream::err, "kernelskill: " + moved_aside);
  campaign_state out{std::make_shared<memory::store>(std::move(*opened)), now_iso8601()};
  if (auto earlier = out.db->campaign(); earlier && *earlier)
    out.started_at = (*earlier)->started_at;
  if (auto written = report::write_campaign_baselines(output, baselines ? &*baselines : nullptr);
      !written)
    return tl::unexpected(written.error());
  return out;
}

/// The store actor and what it held of the campaign before this run.
struct store_side {
  store_actor store;
  campaign_reply prior; ///< prior.found: this run resumes
};

engine::expected<store_side> start_store(caf::actor_system& sys, caf::scoped_actor& self,
                                         exit_guard& guard, const campaign_state& state,
                                         const skill_memory& skills, const fs::path& output) {
  store_actor store = guard.keep(spawn_store(sys, state.db, spawn_mode::detached, skills.store,
                                             output.string() + "@" + state.started_at));
  auto prior = ask<campaign_reply>(self, store, get_campaign{}, errc::io);
  if (!prior)
    return tl::unexpected(prior.error());
  return store_side{store, std::move(*prior)};
}

/// One GPU of the campaign as its bench actor reported it.
struct gpu_slot {
  bench_actor bench;
  report::gpu_description description;
};

bench_settings bench_settings_for(const config::campaign_config& config) {
  bench_settings settings;
  settings.verify.trials = static_cast<int32_t>(config.bench.trials);
  settings.timing.warmup_ms = config.bench.warmup_ms;
  settings.timing.min_trials = static_cast<int32_t>(config.bench.min_timing_trials);
  settings.timing.max_ms = config.bench.max_timing_ms;
  return settings;
}

gpu::worker_options worker_options_for(const config::campaign_config& config,
                                       const campaign::run_options& options,
                                       const gpu::worker_boundary& boundary, int32_t device) {
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
  w.vendor_libraries =
      config.bench.allow_vendor_libraries ? gpu::vendor_policy::allow : gpu::vendor_policy::refuse;
  return w;
}

// Returns the device an info job's reply `r` describes; a failed job is the campaign's error,
// with the worker's failure kind (no device: the hint that a dry run needs none).
tl::expected<gpu::device_info, campaign::campaign_error>
device_of(const engine::expected<bench_result>& r, int32_t device) {
  if (!r)
    return tl::unexpected(r.error());
  if (!r->ok) {
    auto kind = static_cast<gpu::failure_kind>(r->failure);
    std::string hint = kind == gpu::failure_kind::no_device
                           ? "\n  without a GPU, --dry-run plans, codes and compiles one round"
                           : "";
    campaign::campaign_error e{
        engine::error{kind == gpu::failure_kind::no_device ? errc::not_found : errc::subprocess,
                      "device " + std::to_string(device) + ": " + r->message + hint}};
    e.gpu_failure = kind;
    return tl::unexpected(std::move(e));
  }
  return r->device();
}

// Spawns a bench actor per GPU of config.gpus and asks each worker for its device (step 3).
// With gpus = "all", device 0's info says how many devices there are; the other devices start
// their workers side by side.
tl::expected<std::vector<gpu_slot>, campaign::campaign_error>
open_gpus(caf::actor_system& sys, caf::scoped_actor& self, exit_guard& guard,
          const config::campaign_config& config, const campaign::run_options& options,
          task_table_ptr tasks) {
  auto boundary = campaign::worker_boundary_for(config, options);
  if (!boundary)
    return tl::unexpected(boundary.error());
  const bench_settings settings = bench_settings_for(config);
  auto spawn_one = [&](int32_t index, int32_t device) {
    return guard.keep(spawn_gpu_bench(
        sys, index, worker_options_for(config, options, *boundary, device), settings, tasks));
  };
  const bench_job info_job{bench_kind::info, {}, {}, {}, -1, "info"};

  std::vector<int32_t> devices = config.gpus.devices;
  std::vector<gpu_slot> gpus;
  if (config.gpus.all) {
    gpu_slot first{spawn_one(0, 0), {}};
    auto info = device_of(ask<bench_result>(self, first.bench, info_job, errc::subprocess), 0);
    if (!info)
      return tl::unexpected(info.error());
    first.description.info = *info;
    gpus.push_back(std::move(first));
    for (int32_t d = 1; d < info->device_count; ++d)
      devices.push_back(d);
    devices.insert(devices.begin(), 0);
  }
  std::vector<bench_actor> others;
  for (size_t i = gpus.size(); i < devices.size(); ++i)
    others.push_back(spawn_one(static_cast<int32_t>(i), devices[i]));
  size_t first_other = gpus.size();
  auto infos = ask_each<bench_result>(self, others, info_job, errc::subprocess);
  for (size_t k = 0; k < others.size(); ++k) {
    auto info = device_of(infos[k], devices[first_other + k]);
    if (!info)
      return tl::unexpected(info.error());
    gpus.push_back(gpu_slot{others[k], {}});
    gpus.back().description.info = *info;
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].description.index = static_cast<int32_t>(i);
    gpus[i].description.device = devices[i];
  }
  return gpus;
}

// Returns `gpus` with their calibrations: each device is calibrated once (the store keeps it
// by uuid), the rest side by side. A device that cannot be calibrated keeps none: its
// roofline fractions stay unknown.
std::vector<gpu_slot> calibrate(caf::scoped_actor& self, store_actor store,
                                std::vector<gpu_slot> gpus) {
  std::vector<size_t> uncalibrated;
  for (size_t i = 0; i < gpus.size(); ++i) {
    report::gpu_description& d = gpus[i].description;
    auto stored = ask<calibration_reply>(self, store, get_calibration{d.info.uuid}, errc::io);
    if (stored && stored->found)
      if (auto c = report::parse_calibration(stored->json)) {
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
    report::gpu_description& d = gpus[uncalibrated[k]].description;
    const auto& r = calibrations[k];
    if (!r || !r->ok) {
      console::line(console::stream::err, "kernelskill: cannot calibrate device " +
                                              std::to_string(d.device) + " (" +
                                              (r ? r->message : r.error().message()) +
                                              "); its roofline fractions stay unknown");
      continue;
    }
    d.calibration = r->calibration();
    // A calibration the store failed to keep is measured again next time: no reason to stop.
    (void)ask<ack>(self, store,
                   put_calibration{d.info.uuid, report::calibration_json(d.calibration)}, errc::io);
  }
  return gpus;
}

std::vector<std::string> gpu_names_of(const std::vector<gpu_slot>& gpus) {
  std::vector<std::string> names;
  for (const gpu_slot& g : gpus)
    names.push_back(g.description.info.name);
  return names;
}

std::vector<report::gpu_description> descriptions_of(const std::vector<gpu_slot>& gpus) {
  std::vector<report::gpu_description> out;
  for (const gpu_slot& g : gpus)
    out.push_back(g.description);
  return out;
}

// Returns how the dispatcher watches the GPUs' stability (engine/card_stability.hpp): the
// config's bounds, gpu_stability.json in the output folder, the runs before a resume kept.
stability_setup stability_setup_for(const config::campaign_config& config, const fs::path& output,
                                    const std::vector<gpu_slot>& gpus, bool resumed) {
  stability_setup s;
  s.options.probe_interval_s = config.bench.stability_probe_s;
  s.options.drift_bound = config.bench.stability_drift;
  s.options.split_bound = config.bench.stability_split;
  s.options.pause_s = config.bench.stability_pause_s;
  s.options.limit_s = config.bench.stability_limit_s;
  s.file = output / report::gpu_stability_file;
  s.gpu_names = gpu_names_of(gpus);
  s.keep_prior_runs = resumed;
  return s;
}

// Returns the arch candidates are compiled for: run_options.arch, else the first GPU's.
std::string compile_arch(const campaign::run_options& options, const std::vector<gpu_slot>& gpus) {
  if (!options.arch.empty())
    return options.arch;
  if (gpus.empty())
    return gpu::compiler_options{}.arch;
  const gpu::device_info& first = gpus.front().description.info;
  return first.arch.empty() ? gpu::arch_for(first.cc_major, first.cc_minor) : first.arch;
}

// Writes the campaign record: runs + 1, and the environment as this run read it.
engine::expected<void>
write_campaign_record(caf::scoped_actor& self, const store_side& store, const campaign_state& state,
                      const config::campaign_config& config, const std::vector<gpu_slot>& gpus,
                      const std::string& arch, const gpu::compiler& compiler) {
  memory::campaign_record record =
      store.prior.found ? store.prior.record : memory::campaign_record{};
  // Resuming under another config is allowed (a longer wall time), but never silent: the
  // store's tasks stay in the campaign and its results whatever the new config lists.
  if (store.prior.found && record.config_text != config_text_of(config))
    console::line(console::stream::err,
                  "kernelskill: " + config.campaign.output + " holds a campaign started " +
                      record.started_at + " with another config: this run resumes it, and its " +
                      "tasks stay in the campaign and its results (name another [campaign] " +
                      "output to start afresh)");
  if (!store.prior.found) {
    record.started_at = state.started_at;
    record.config_text = config_text_of(config);
  }
  record.runs += 1;
  record.environment =
      report::environment_json(descriptions_of(gpus), arch, compiler.nvcc_version(), false);
  if (auto r = ask<ack>(self, store.store, put_campaign{record}, errc::io); !r)
    return tl::unexpected(r.error());
  return {};
}

// Has long-term memory count every settled try of this campaign's store once, the tries a
// kill lost between the two stores' commits included, before any new try settles.
engine::expected<void> reconcile_skill_tries(caf::scoped_actor& self, store_actor store,
                                             const campaign_tasks& tasks, const std::string& arch) {
  reconcile_tries m;
  m.arch = arch;
  for (const auto& [name, t] : *tasks.table) // a graph task's tries count on its main node's
    m.families.emplace(name, engine::skill_stats_key(t));
  if (auto r = ask<ack>(self, store, std::move(m), errc::io); !r)
    return tl::unexpected(r.error());
  return {};
}

// Spawns the distiller when the agents think with a model and agents.distill is set: a learned
// skill goes to the long-term skill memory, so only where there is one. Else a null handle.
distiller_actor spawn_distiller_if_asked(caf::actor_system& sys, exit_guard& guard,
                                         const config::campaign_config& config,
                                         const campaign_tasks& tasks, const skill_memory& skills,
                                         const std::optional<model_side>& model,
                                         const team& members,
                                         const engine::backend_context& context,
                                         const std::string& arch, const std::string& run) {
  if (!model || !config.agents.distill || skills.store == nullptr)
    return distiller_actor{};
  distiller_setup d;
  d.backend =
      std::make_shared<agents::llm_backend>(config.agents.backend, model->wiring.client,
                                            model->prompts, backend_settings_for(config), context);
  d.tasks = tasks.table;
  d.store = members.store;
  d.compiler = members.compiler;
  d.bench = members.bench;
  d.skills = skills.library;
  d.arch = arch;
  d.run = run;
  d.min_gain = config.search.min_gain;
  return guard.keep(spawn_distiller(sys, std::move(d)));
}

// Returns the fastest torch baseline of `task` (eager or torch.compile), the time its search
// must beat before the roofline may end it; 0 when there is none, or when the baselines were
// measured on another GPU than the campaign's (a target from another card would be wrong).
double torch_target_ms(const campaign_tasks& tasks, const std::string& task,
                       const std::vector<gpu_slot>& gpus) {
  if (!tasks.baselines || !report::device_mismatch(*tasks.baselines, gpu_names_of(gpus)).empty())
    return 0;
  report::torch_comparison c = report::compare_with_torch(&*tasks.baselines, task, 0);
  if (c.eager_ms > 0 && c.compile_ms > 0)
    return std::min(c.eager_ms, c.compile_ms);
  return std::max(c.eager_ms, c.compile_ms);
}

// Returns what each supervisor starts with. The dispatcher gives each task its home GPU once
// its reference is verified (least load first); GPU i mod n is only the fallback.
std::vector<supervisor_setup> supervisor_setups(const config::campaign_config& config,
                                                const campaign_tasks& tasks,
                                                const std::vector<gpu_slot>& gpus,
                                                const team& members, const std::string& arch) {
  std::vector<gpu_peaks> peaks;
  for (const gpu_slot& g : gpus)
    peaks.push_back(gpu_peaks{g.description.info.name, g.description.calibration.dram_gbps,
                              g.description.calibration.fp32_gflops});
  std::vector<supervisor_setup> out;
  for (size_t i = 0; i < tasks.order.size(); ++i) {
    supervisor_setup s;
    s.task = tasks.order[i];
    s.home_gpu = gpus.empty() ? 0 : static_cast<int32_t>(i % gpus.size());
    if (!gpus.empty()) {
      const report::gpu_description& home = gpus[static_cast<size_t>(s.home_gpu)].description;
      s.gpu_name = home.info.name;
      s.peak_gbps = home.calibration.dram_gbps;
      s.peak_gflops = home.calibration.fp32_gflops;
    }
    s.gpus = peaks;
    s.limits = tasks.limits;
    s.limits.torch_ms = torch_target_ms(tasks, s.task, gpus);
    s.policy = config.search.policy;
    s.profile = config.search.profile;
    s.expand_max_fraction = config.search.expand_max_fraction;
    s.policy_options = campaign::policy_options_for(config);
    s.repair_rounds = config.agents.repair_rounds;
    s.host_fault_retries = config.bench.host_fault_retries;
    s.host_fault_retry_s = config.bench.host_fault_retry_s;
    s.finalists = config.search.finalists;
    s.arch = arch;
    s.tasks = tasks.table;
    s.team = members;
    out.push_back(std::move(s));
  }
  return out;
}

// Returns what the campaign actor starts with (step 7).
campaign_setup campaign_setup_for(const config::campaign_config& config,
                                  const campaign::run_options& options, const campaign_tasks& tasks,
                                  const std::vector<gpu_slot>& gpus, const team& members,
                                  bench_dispatcher_actor dispatcher, const fs::path& output,
                                  const std::optional<model_side>& model, distiller_actor distiller,
                                  const std::string& arch) {
  campaign_setup setup;
  setup.tasks = supervisor_setups(config, tasks, gpus, members, arch);
  setup.dispatcher = dispatcher;
  setup.gpu_names = gpu_names_of(gpus);
  setup.store = members.store;
  setup.output_dir = output.string();
  setup.wall_time_s = config.campaign.wall_time_s;
  setup.gpu_seconds = config.campaign.gpu_seconds;
  setup.progress_interval_s = options.progress_interval_s;
  if (model) {
    setup.llm = model->gateway;
    setup.model_budget = config.campaign.token_budget > 0 || config.campaign.cost_budget > 0;
    setup.min_gain = config.search.min_gain;
    setup.distiller = distiller;
  }
  return setup;
}

// Tells the campaign, the dispatcher and the model gateway that Ctrl-C was pressed.
void interrupt(caf::scoped_actor& self, const campaign_actor& campaign,
               const bench_dispatcher_actor& dispatcher, const std::optional<model_side>& model) {
  self->send(campaign, stop_msg{stop_kind::interrupt, "interrupted"});
  // Queued bench jobs are dropped (the nodes wait for the resume): only the jobs running are
  // waited for.
  self->send(dispatcher, stop_msg{stop_kind::interrupt, "interrupted"});
  // Model requests in flight are cancelled: their nodes are redone.
  if (model)
    self->send(model->gateway, stop_msg{stop_kind::interrupt, "interrupted (Ctrl-C)"});
}

// Starts the campaign and waits for its report. run_all's answer comes back as an ordinary
// message (sent, not requested), so the wait can poll stop_requested in between.
engine::expected<campaign_report> wait_for_campaign(caf::scoped_actor& self,
                                                    const campaign_actor& campaign,
                                                    const bench_dispatcher_actor& dispatcher,
                                                    const std::optional<model_side>& model,
                                                    const campaign::run_options& options) {
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
                          say_stopping(run_kind::campaign);
                          interrupt(self, campaign, dispatcher, model);
                        }
                      });
  }
  if (failure)
    return fail(errc::internal, "the campaign failed: " + *failure);
  return std::move(*report);
}

// Prints the campaign's perf tree: where the supervisors' time went, by step. Steps of
// parallel branches overlap, so the totals add up to more than the wall time.
void print_perf(const base::perf_tree& perf) {
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

campaign::campaign_summary summary_of(const campaign_report& report, const store_side& store,
                                      const std::vector<gpu_slot>& gpus,
                                      std::optional<report::torch_baselines> baselines,
                                      const std::optional<model_side>& model) {
  campaign::campaign_summary summary;
  summary.interrupted = report.interrupted;
  summary.host_fault = report.host_fault;
  summary.resumed = store.prior.found;
  summary.outputs_error = report.outputs_error;
  summary.wall_s = report.wall_s;
  for (const task_report& t : report.tasks) {
    summary.tasks.push_back(campaign::task_summary{t.name, t.stop_reason, t.nodes, t.reference_ms,
                                                   t.best_ms, t.speedup, t.fraction_of_roofline,
                                                   t.phase == engine::task_phase::failed,
                                                   t.stop_text, 0, t.best_p10_ms});
    summary.candidates_verified += t.verified;
    summary.candidates_timed += t.timed;
  }
  for (double busy_ms : report.bench.busy_ms)
    summary.gpu_busy_share.push_back(report.wall_s > 0 ? busy_ms / (1000 * report.wall_s) : 0);
  summary.gpu_warnings = report.bench.stability_warnings;
  summary.results_unreliable = report.bench.unreliable;
  summary.gpu_names = gpu_names_of(gpus);
  summary.baselines = std::move(baselines);
  if (model)
    count_model_use(summary, *model);
  return summary;
}

} // namespace

tl::expected<campaign::campaign_summary, campaign::campaign_error>
run_campaign(const config::campaign_config& config, const campaign::run_options& options) {
  // The tasks and the baselines first: a typo or a bad file costs no worker start.
  auto tasks = load_tasks(config, options);
  if (!tasks)
    return tl::unexpected(tasks.error());
  // Every other check that needs no GPU, all at once, before anything is written: the same
  // that `config --check` makes (preflight.hpp).
  if (std::vector<campaign::campaign_error> problems = campaign::preflight(config, options);
      !problems.empty()) {
    std::string message;
    for (const campaign::campaign_error& e : problems)
      message += (message.empty() ? "" : "\n") + e.message();
    // The first problem decides the exit code, as it is the first line the user reads.
    campaign::campaign_error all{problems.front().code(), message};
    all.environment = problems.front().environment;
    all.gpu_failure = problems.front().gpu_failure;
    return tl::unexpected(std::move(all));
  }
  // Held until this function returns: no other run writes into the folder meanwhile.
  auto folder =
      make_output_folder(config, options, options.dry_run ? run_kind::dry_run : run_kind::campaign);
  if (!folder)
    return tl::unexpected(folder.error());
  const fs::path* output = &folder->path;
  if (options.dry_run)
    return run_dry_campaign(config, options, *tasks, *output);

  // The store: a campaign it holds means a resume. Then long-term memory: the skills, seeded
  // from the built-in folder, and their statistics.
  auto state = open_state(*output, options, tasks->baselines);
  if (!state)
    return tl::unexpected(state.error());
  auto skills = open_skill_memory(config, run_kind::campaign);
  if (!skills)
    return tl::unexpected(skills.error());

  caf::actor_system_config cfg;
  caf::actor_system sys(cfg);
  caf::scoped_actor self(sys);
  exit_guard guard(self);
  auto store = start_store(sys, self, guard, *state, *skills, *output);
  if (!store)
    return tl::unexpected(store.error());

  // The GPUs: their workers and devices, then each device's peaks for the roofline.
  auto opened = open_gpus(sys, self, guard, config, options, tasks->table);
  if (!opened)
    return tl::unexpected(opened.error());
  const std::vector<gpu_slot> gpus = calibrate(self, store->store, std::move(*opened));
  // Baselines of another GPU are shown, flagged (torch_baselines.hpp says why not refused).
  if (tasks->baselines)
    if (std::string note = report::device_mismatch(*tasks->baselines, gpu_names_of(gpus));
        !note.empty())
      console::line(console::stream::err, "kernelskill: warning: " + note);
  // Starting the workers can take seconds: a stop meanwhile ends the campaign before it starts.
  if (stop_seen(options)) {
    say_stopping(run_kind::campaign);
    campaign::campaign_summary stopped;
    stopped.interrupted = true;
    stopped.resumed = store->prior.found;
    return stopped;
  }

  // The compile service, for the first GPU's architecture.
  const std::string arch = compile_arch(options, gpus);
  auto compiler = make_compiler(config, options, *output, arch);
  if (!compiler)
    return tl::unexpected(compiler.error());
  // The agents (with the model gateway when they think with a model) and the bench dispatcher.
  // The budgets go on from what the store's transcripts say was spent, whatever llm_usage.json
  // says (it is a file in the output folder: deleted, it would reset them).
  auto model = open_model(sys, guard, config, *output, run_kind::campaign, store->store,
                          spent_in_store(*state->db, tasks->order));
  if (!model)
    return tl::unexpected(model.error());
  std::vector<bench_actor> benches;
  for (const gpu_slot& g : gpus)
    benches.push_back(g.bench);
  bench_dispatcher_actor dispatcher = guard.keep(spawn_bench_dispatcher(
      sys, std::move(benches), steady_bench_clock(), *output / report::bench_trace_file,
      stability_setup_for(config, *output, gpus, store->prior.found)));
  const engine::backend_context context = backend_context_for(*skills, arch, **compiler);
  auto members = spawn_team(sys, guard, config, *tasks, *skills, *compiler, context, *model,
                            store->store, dispatcher);
  if (!members)
    return tl::unexpected(members.error());

  // The campaign record, then long-term memory's count of the tries this store settled.
  if (auto written = write_campaign_record(self, *store, *state, config, gpus, arch, **compiler);
      !written)
    return tl::unexpected(written.error());
  if (auto reconciled = reconcile_skill_tries(self, store->store, *tasks, arch); !reconciled)
    return tl::unexpected(reconciled.error());

  // The campaign: a supervisor per task, until every task has ended.
  distiller_actor distiller =
      spawn_distiller_if_asked(sys, guard, config, *tasks, *skills, *model, *members, context, arch,
                               output->string() + "@" + state->started_at);
  campaign_actor campaign = guard.keep(
      spawn_campaign(sys, campaign_setup_for(config, options, *tasks, gpus, *members, dispatcher,
                                             *output, *model, distiller, arch)));
  auto report = wait_for_campaign(self, campaign, dispatcher, *model, options);
  if (!report)
    return tl::unexpected(report.error());
  if (options.progress_interval_s > 0)
    print_perf(report->perf);
  return summary_of(*report, *store, gpus, tasks->baselines, *model);
}

} // namespace ks::actors
