#pragma once

// The steps of starting a campaign that a campaign (run_campaign.cpp) and a dry run
// (dry_run.cpp) share. Each step takes what the steps before it made and returns what it
// makes; none keeps state between calls. Internal to actors/: the public entry point is
// run_campaign.hpp.

#include "actors/actor_error.hpp"
#include "actors/fwd.hpp"
#include "actors/llm_gateway_actor.hpp"
#include "actors/run_campaign.hpp"
#include "actors/team.hpp"
#include "agents/backend_registry.hpp"
#include "agents/model_service.hpp"
#include "agents/prompt_library.hpp"
#include "campaign/settings.hpp"
#include "config/campaign_config.hpp"
#include "engine/agent_backend.hpp"
#include "engine/retrieval.hpp"
#include "engine/search_limits.hpp"
#include "engine/search_policy.hpp"
#include "engine/skill_library.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_sandbox.hpp"
#include "memory/skill_store.hpp"
#include "memory/store.hpp"
#include "report/output_folder.hpp"
#include "report/torch_baselines.hpp"

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ks::actors {

// -- talking to actors from run_campaign's thread --------------------------------------------

/// Sends every actor it holds an exit message when it goes, so that the actor system, which
/// waits for all actors, can shut down on every path out of run_campaign.
class exit_guard {
public:
  explicit exit_guard(caf::scoped_actor& self) : self_(self) {}
  exit_guard(const exit_guard&) = delete;
  exit_guard& operator=(const exit_guard&) = delete;
  ~exit_guard() {
    for (const caf::actor& a : actors_)
      self_->send_exit(a, caf::exit_reason::user_shutdown);
  }

  /// Returns `h`, kept to be sent an exit message.
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
[[nodiscard]] engine::expected<Reply> ask(caf::scoped_actor& self, const Handle& handle, Msg msg,
                                          engine::errc code) {
  engine::expected<Reply> out = engine::fail(code, "no answer");
  self->request(handle, caf::infinite, std::move(msg))
      .receive([&](Reply& r) { out = std::move(r); },
               [&](caf::error& e) { out = engine::fail(code, describe(e)); });
  return out;
}

/// Sends `msg` to every handle at once, then collects the replies in order: bench actors
/// start their workers and calibrate side by side rather than one after another.
template <class Reply, class Handle, class Msg>
std::vector<engine::expected<Reply>> ask_each(caf::scoped_actor& self,
                                              const std::vector<Handle>& handles, const Msg& msg,
                                              engine::errc code) {
  using request_handle =
      decltype(self->request(std::declval<Handle>(), caf::infinite, std::declval<Msg>()));
  std::vector<request_handle> pending;
  pending.reserve(handles.size());
  for (const Handle& h : handles)
    pending.push_back(self->request(h, caf::infinite, msg));
  std::vector<engine::expected<Reply>> out;
  for (request_handle& r : pending) {
    engine::expected<Reply> one = engine::fail(code, "no answer");
    r.receive([&](Reply& reply) { one = std::move(reply); },
              [&](caf::error& e) { one = engine::fail(code, describe(e)); });
    out.push_back(std::move(one));
  }
  return out;
}

// -- stopping ----------------------------------------------------------------------------------

/// Which kind of run a step serves: a campaign keeps state, a dry run keeps nothing.
enum class run_kind { campaign, dry_run };

/// Checks whether options.stop_requested (Ctrl-C) is set.
bool stop_seen(const campaign::run_options& options);

/// Tells the user, once, what a stop of a run of `kind` keeps: the first Ctrl-C's answer.
void say_stopping(run_kind kind);

/// Returns the current UTC time as "YYYY-MM-DDTHH:MM:SSZ".
std::string now_iso8601();

/// Returns the text of `config` as the user wrote it (its file), or as its defaults write it
/// when it came from no file.
std::string config_text_of(const config::campaign_config& config);

// -- the steps -------------------------------------------------------------------------------

/// The tasks of a campaign (step 1): the table the actors share, the task names in the order
/// the config lists them, the torch baselines read with them, and the search limits.
struct campaign_tasks {
  task_table_ptr table;
  std::vector<std::string> order;
  std::optional<report::torch_baselines> baselines;
  engine::search_limits limits;
};

/// Loads the tasks of `config`, reads the torch baselines file (options.baselines, else the
/// config's report.torch_baselines) and checks it against the tasks' shapes (a mismatch is a
/// warning on stderr), and checks the search limits and policy: so that a typo costs no
/// worker start.
[[nodiscard]] engine::expected<campaign_tasks> load_tasks(const config::campaign_config& config,
                                                          const campaign::run_options& options);

/// Creates the output folder of `config` (step 2) and locks it for this run (output_folder.hpp):
/// a folder another run holds, or one that holds something else (unless options.foreign says
/// overwrite), is refused before anything is written.
[[nodiscard]] engine::expected<report::output_folder>
make_output_folder(const config::campaign_config& config, const campaign::run_options& options,
                   run_kind kind);

/// The long-term skill memory of a campaign and the library loaded from it.
struct skill_memory {
  std::shared_ptr<memory::skill_store> store; ///< null in a dry run: nothing is written
  engine::skill_library_ptr library;
};

/// Opens the skill memory ([memory] path) and seeds it from the built-in skills, so that a
/// skill edited in skills/ is refreshed and one a user imported stays; the campaign uses the
/// memory's skills. A dry run writes nothing: it reads the built-in folder alone.
[[nodiscard]] engine::expected<skill_memory>
open_skill_memory(const config::campaign_config& config, run_kind kind);

/// Creates the compile service for `arch` (step 4): options.nvcc, options.include_dir, the
/// compile cache options.cache_dir (else <output>/cache), nvcc in the workers' sandbox with
/// bench.sandbox (worker_boundary_for). A machine without what compiling needs fails with
/// campaign_error::environment set.
[[nodiscard]] tl::expected<std::shared_ptr<const gpu::compiler>, campaign::campaign_error>
make_compiler(const config::campaign_config& config, const campaign::run_options& options,
              const std::filesystem::path& output, const std::string& arch);

/// The campaign's model service, prompts and gateway actor, when the agents think with a
/// model.
struct model_side {
  std::shared_ptr<agents::model_service> service;
  std::shared_ptr<const agents::prompt_library> prompts;
  llm_gateway_actor gateway;
  agents::model_wiring wiring;
  agents::gateway_stats at_start; ///< the service's counters before this run (earlier runs')
};

/// Opens the model side when config.agents.backend thinks with a model (step 5a), else
/// returns nullopt: one gateway for every role and task, so that the concurrency limit, the
/// retries and the budgets are the campaign's. `folder` holds its transcripts and
/// llm_usage.json; a dry run's usage file starts empty (it counts its own requests only).
/// The gateway keeps every transcript in `store` too, unless that is a null handle (a dry
/// run has no store). The budgets start from `spent_floor` at least (spent_in_store), so that
/// a deleted llm_usage.json does not reset them.
[[nodiscard]] engine::expected<std::optional<model_side>>
open_model(caf::actor_system& sys, exit_guard& guard, const config::campaign_config& config,
           const std::filesystem::path& folder, run_kind kind, store_actor store,
           const agents::usage_totals& spent_floor = {});

/// Returns what every backend of the campaign is made with: the skills, the arch and the
/// text of the compiler's kernelskill/abi.h.
engine::backend_context backend_context_for(const skill_memory& skills, const std::string& arch,
                                            const gpu::compiler& compiler);

/// Returns the settings every agent backend of `config` gets.
engine::backend_settings backend_settings_for(const config::campaign_config& config);

/// Spawns the team of step 5: the compile pool (one detached worker per CPU core), then
/// agents.max_concurrency planners, coders and repairers, each with its own backend, the
/// analyst and the judge. `store` and `dispatcher` are null handles in a dry run.
[[nodiscard]] engine::expected<team>
spawn_team(caf::actor_system& sys, exit_guard& guard, const config::campaign_config& config,
           const campaign_tasks& tasks, const skill_memory& skills,
           std::shared_ptr<const gpu::compiler> compiler, const engine::backend_context& context,
           const std::optional<model_side>& model, store_actor store,
           bench_dispatcher_actor dispatcher);

/// Returns what the transcripts `db` keeps for `tasks` (and for no task) say was spent: the
/// answered requests, their tokens and cost. A transcript that does not read is skipped.
agents::usage_totals spent_in_store(const memory::store& db, const std::vector<std::string>& tasks);

/// Copies what the model service of `model` counted into `summary`, over every run of the
/// campaign, and what this run's requests came to.
void count_model_use(campaign::campaign_summary& summary, const model_side& model);

} // namespace ks::actors
