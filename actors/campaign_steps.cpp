#include "actors/campaign_steps.hpp"

#include "agents/transcript.hpp"
#include "base/text.hpp"
#include "campaign/campaign_tasks.hpp"
#include "report/console.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <thread>

namespace ks::actors {

namespace console = report::console;

namespace fs = std::filesystem;
using engine::errc;
using engine::fail;

bool stop_seen(const campaign::run_options& options) {
  return options.stop_requested != nullptr && options.stop_requested->load();
}

void say_stopping(run_kind kind) {
  console::line(console::stream::err,
                kind == run_kind::dry_run
                    ? "kernelskill: stopping the dry run now; it keeps nothing but the compile "
                      "cache and the candidates written so far (Ctrl-C again to quit at once)"
                    : "kernelskill: stopping at the next step: the jobs in flight finish and are "
                      "saved, nothing new starts; the same command resumes (Ctrl-C again to "
                      "quit at once)");
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

std::string config_text_of(const config::campaign_config& config) {
  return config.source.empty() ? config::config_text(config)
                               : base::read_text(config.source).value_or("");
}

engine::expected<campaign_tasks> load_tasks(const config::campaign_config& config,
                                            const campaign::run_options& options) {
  auto loaded = campaign::load_campaign_tasks(config);
  if (!loaded)
    return tl::unexpected(loaded.error());
  std::optional<report::torch_baselines> baselines;
  const fs::path baselines_file =
      options.baselines.empty() ? config.torch_baselines_file() : options.baselines;
  if (!baselines_file.empty()) {
    auto read = report::read_torch_baselines(baselines_file);
    if (!read)
      return fail(read.error().code(),
                  (options.baselines.empty() ? config.source.string() + ": report.torch_baselines: "
                                             : std::string("--baselines: ")) +
                      read.error().message());
    for (const std::string& warning : report::check_shapes(*read, *loaded))
      console::line(console::stream::err, "kernelskill: warning: " + warning);
    baselines = std::move(*read);
  }
  auto table = std::make_shared<task_table>();
  std::vector<std::string> order;
  for (engine::task& t : *loaded) {
    order.push_back(t.name);
    table->emplace(t.name, std::move(t));
  }
  engine::search_limits limits = campaign::search_limits_of(config);
  if (auto ok = campaign::check_search(config); !ok)
    return tl::unexpected(ok.error());
  return campaign_tasks{std::move(table), std::move(order), std::move(baselines), limits};
}

engine::expected<report::output_folder> make_output_folder(const config::campaign_config& config,
                                                           const campaign::run_options& options,
                                                           run_kind kind) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0)
    host[0] = '\0';
  std::string owner = "pid " + std::to_string(::getpid()) + " on " +
                      (host[0] != '\0' ? std::string(host) : std::string("this machine")) + ", " +
                      (kind == run_kind::dry_run ? "a dry run" : "a campaign") + " started at " +
                      now_iso8601();
  return report::open_output_folder(config.output_dir(), options.foreign, owner);
}

engine::expected<skill_memory> open_skill_memory(const config::campaign_config& config,
                                                 run_kind kind) {
  fs::path builtin =
      config.skills_dir().empty() ? engine::default_skills_dir() : config.skills_dir();
  auto folders = engine::read_skill_folders(builtin);
  if (!folders)
    return tl::unexpected(folders.error());
  skill_memory out;
  if (kind == run_kind::dry_run) {
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

tl::expected<std::shared_ptr<const gpu::compiler>, campaign::campaign_error>
make_compiler(const config::campaign_config& config, const campaign::run_options& options,
              const fs::path& output, const std::string& arch) {
  gpu::compiler_options co;
  co.nvcc = options.nvcc;
  co.include_dir = options.include_dir;
  co.cache_dir = options.cache_dir.empty() ? output / "cache" : options.cache_dir;
  co.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(1000 * config.bench.compile_timeout_s));
  co.arch = arch;
  co.min_free_bytes = static_cast<int64_t>(config.bench.min_free_disk_mb * 1024 * 1024);
  // The sources come from a model: with bench.sandbox, nvcc runs in a sandbox as the workers
  // do (a dry run's too), and gets their environment.
  auto boundary = campaign::worker_boundary_for(config, options);
  if (!boundary)
    return tl::unexpected(boundary.error());
  co.boundary = std::move(*boundary);
  auto made = gpu::compiler::create(co);
  if (!made) {
    campaign::campaign_error e{made.error()};
    e.environment = true;
    return tl::unexpected(std::move(e));
  }
  return std::make_shared<const gpu::compiler>(std::move(*made));
}

engine::expected<std::optional<model_side>> open_model(caf::actor_system& sys, exit_guard& guard,
                                                       const config::campaign_config& config,
                                                       const fs::path& folder, run_kind kind,
                                                       store_actor store,
                                                       const agents::usage_totals& spent_floor) {
  if (!agents::needs_model(config.agents.backend))
    return std::optional<model_side>{};
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
  s.spent_floor = spent_floor;
  if (kind == run_kind::dry_run) {
    std::error_code ec;
    fs::remove(s.usage_file, ec);
  }
  auto service = agents::make_model_service(s);
  if (!service)
    return tl::unexpected(service.error());
  out.service = std::move(*service);
  out.at_start = out.service->stats();
  out.gateway = guard.keep(spawn_llm_gateway(sys, out.service, std::move(store)));
  out.wiring = agents::model_wiring{gateway_client(sys, out.gateway), out.prompts};
  return std::optional<model_side>(std::move(out));
}

engine::backend_context backend_context_for(const skill_memory& skills, const std::string& arch,
                                            const gpu::compiler& compiler) {
  return engine::backend_context{
      skills.library, arch,
      base::read_text(compiler.options().include_dir / "kernelskill" / "abi.h").value_or("")};
}

engine::backend_settings backend_settings_for(const config::campaign_config& config) {
  const config::agents_section& a = config.agents;
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

namespace {

engine::retrieval_rules retrieval_rules_for(const config::memory_section& m) {
  return {m.exploration, m.demote_min_tries, m.demote_failure_rate, m.demote_min_acceptance};
}

} // namespace

engine::expected<team> spawn_team(caf::actor_system& sys, exit_guard& guard,
                                  const config::campaign_config& config,
                                  const campaign_tasks& tasks, const skill_memory& skills,
                                  std::shared_ptr<const gpu::compiler> compiler,
                                  const engine::backend_context& context,
                                  const std::optional<model_side>& model, store_actor store,
                                  bench_dispatcher_actor dispatcher) {
  int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  team out;
  out.store = store;
  out.bench = dispatcher;
  out.homes = dispatcher;
  out.compiler = guard.keep(spawn_compile_pool(sys, std::move(compiler), cores));
  const engine::backend_settings settings = backend_settings_for(config);
  const agents::model_wiring wiring = model ? model->wiring : agents::model_wiring{};
  int64_t agents = std::max<int64_t>(1, config.agents.max_concurrency);
  for (int64_t i = 0; i < agents; ++i) {
    std::shared_ptr<engine::agent_backend> backends[3];
    for (auto& b : backends) {
      auto made = agents::make_backend(config.agents.backend, settings, context, wiring);
      if (!made)
        return tl::unexpected(made.error());
      b = std::move(*made);
    }
    out.planners.push_back(
        guard.keep(spawn_planner(sys, backends[0], tasks.table, spawn_mode::detached,
                                 skills.library, retrieval_rules_for(config.memory))));
    out.coders.push_back(guard.keep(spawn_coder(sys, backends[1], tasks.table)));
    out.repairers.push_back(guard.keep(spawn_repairer(sys, backends[2], tasks.table)));
  }
  out.analyst = guard.keep(spawn_analyst(sys, tasks.table));
  out.judge = guard.keep(
      spawn_judge(sys, engine::judge_options{.min_gain = config.search.min_gain,
                                             .torch_min_gain = config.search.torch_min_gain}));
  return out;
}

agents::usage_totals spent_in_store(const memory::store& db,
                                    const std::vector<std::string>& tasks) {
  agents::usage_totals spent;
  std::vector<std::string> names = tasks;
  names.emplace_back("_campaign");
  for (const std::string& task : names) {
    auto records = db.transcripts(task);
    if (!records)
      continue;
    for (const memory::transcript_record& r : *records) {
      auto t = agents::parse_transcript(r.json);
      if (!t || t->outcome != "ok")
        continue;
      agents::model_reply counted;
      counted.input_tokens = std::clamp<int64_t>(t->input_tokens, 0, agents::max_reply_tokens);
      counted.output_tokens = std::clamp<int64_t>(t->output_tokens, 0, agents::max_reply_tokens);
      counted.cost = std::isfinite(t->cost) && t->cost > 0 ? t->cost : 0;
      spent.add(counted);
    }
  }
  return spent;
}

void count_model_use(campaign::campaign_summary& summary, const model_side& model) {
  const agents::gateway_stats s = model.service->stats();
  summary.model_used = true;
  summary.model_answered_now = s.succeeded - model.at_start.succeeded;
  summary.model_failed_now = s.failed - model.at_start.failed;
  summary.model_last_error = s.last_error;
  summary.model_requests = s.total.requests;
  summary.model_retries = s.retries;
  summary.model_input_tokens = s.total.input_tokens;
  summary.model_output_tokens = s.total.output_tokens;
  summary.model_cost = s.total.cost;
  summary.model_budget_spent = s.budget_spent;
}

} // namespace ks::actors
