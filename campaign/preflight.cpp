// The checks of preflight(), each independent of the others, so that every problem is found
// in one pass. None leaves anything behind: whether a folder can be written is tried with an
// unnamed file that is dropped at once, and one that does not exist yet is judged by the
// nearest folder above it that does (can it be created there?); the lock of the output folder
// is tested with a shared flock that is dropped at once; the skill memory is not opened
// (opening creates it).
// Each check is the one the step of run_campaign that would stop on it makes, called the same
// way, so the two cannot drift apart: where run_campaign has a function for a step, this calls
// it; where the step writes, this checks what the write needs.

#include "campaign/preflight.hpp"

#include "agents/backend_registry.hpp"
#include "agents/prompt_library.hpp"
#include "agents/usage_file.hpp"
#include "base/folder_lock.hpp"
#include "base/writable_folder.hpp"
#include "campaign/settings.hpp"
#include "engine/skill_library.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_client.hpp"
#include "memory/skill_store.hpp"
#include "report/campaign_store.hpp"
#include "report/output_folder.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace ks::campaign {

namespace fs = std::filesystem;
using engine::errc;

namespace {

/// Returns `e` as a fault of the machine (exit 3), not of the config.
campaign_error of_environment(engine::error e) {
  campaign_error out{std::move(e)};
  out.environment = true;
  return out;
}

void check_output(const config::campaign_config& config, const run_options& options,
                  std::vector<campaign_error>& out) {
  const fs::path folder = config.output_dir();
  std::error_code ec;
  if (fs::exists(folder, ec) && !fs::is_directory(folder, ec)) {
    out.emplace_back(errc::invalid_input,
                     "campaign.output " + folder.string() + " is a file, not a folder");
    return;
  }
  if (auto holder = base::folder_lock::holder(folder, report::output_lock_file))
    out.emplace_back(errc::io, base::folder_lock::busy_message(folder, *holder));
  if (auto refused = report::refuse_foreign(folder, options.foreign))
    out.push_back(*refused);
  // A damaged store, or a lost one beside a campaign's results (a dry run has no store).
  if (!options.dry_run)
    if (auto refused = report::refuse_lost_store(folder, options.foreign))
      out.push_back(*refused);
  if (auto why = base::cannot_create_in(folder))
    out.emplace_back(errc::io, "campaign.output " + folder.string() + ": " + *why);
  if (!options.cache_dir.empty())
    if (auto why = base::cannot_create_in(options.cache_dir))
      out.emplace_back(errc::io, "--cache-dir " + options.cache_dir.string() + ": " + *why);
}

void check_skills(const config::campaign_config& config, const run_options& options,
                  std::vector<campaign_error>& out) {
  fs::path builtin =
      config.skills_dir().empty() ? engine::default_skills_dir() : config.skills_dir();
  if (auto library = engine::load_skill_library(builtin); !library)
    out.push_back(library.error());
  if (!options.dry_run) {
    if (auto why = base::cannot_create_in(config.memory_dir()))
      out.emplace_back(errc::io, "memory.path " + config.memory_dir().string() + ": " + *why);
    else if (auto file = memory::skill_store::check_file(config.memory_dir()); !file)
      out.push_back(file.error());
  }
}

void check_model(const config::campaign_config& config, std::vector<campaign_error>& out) {
  if (!agents::needs_model(config.agents.backend))
    return;
  if (auto prompts = agents::prompt_library::load(
          config.prompts_dir().empty() ? agents::default_prompts_dir() : config.prompts_dir());
      !prompts)
    out.push_back(prompts.error());
  const std::string& variable = config.agents.api_key_env;
  if (config.agents.backend != "replay" && !variable.empty()) {
    const char* key = std::getenv(variable.c_str());
    if (key == nullptr || *key == '\0')
      out.emplace_back(errc::invalid_input,
                       "agents.api_key_env names " + variable +
                           ", which is not set in the environment (export it, or set "
                           "api_key_env = \"\" for an endpoint that needs no key)");
  }
  if (config.agents.backend == "replay") {
    std::error_code ec;
    if (config.replay_dir().empty())
      out.emplace_back(errc::invalid_input, "agents.backend \"replay\" needs agents.replay (the "
                                            "transcripts folder of the run to replay)");
    else if (!fs::is_directory(config.replay_dir(), ec))
      out.emplace_back(errc::not_found,
                       "agents.replay " + config.replay_dir().string() + " is not a folder");
  }
  if (auto usage = agents::read_usage(config.output_dir() / "llm_usage.json"); !usage)
    out.push_back(usage.error());
}

// The tools run needs besides a GPU: nvcc and kernelskill/abi.h (make_compiler), and the bench
// worker (open_gpus), which a dry run does not start.
void check_tools(const run_options& options, std::vector<campaign_error>& out) {
  gpu::compiler_options tools;
  tools.nvcc = options.nvcc;
  tools.include_dir = options.include_dir;
  if (!options.arch.empty())
    tools.arch = options.arch;
  if (auto found = gpu::compiler::check_tools(tools); !found)
    out.push_back(of_environment(found.error()));
  if (options.dry_run)
    return;
  fs::path worker = options.worker_executable.empty() ? gpu::default_worker_executable()
                                                      : options.worker_executable;
  std::error_code ec;
  // The failure a worker that cannot start gives (crash, as `devices` reports it), found here
  // before anything is written.
  if (!fs::is_regular_file(worker, ec) || ::access(worker.c_str(), X_OK) != 0) {
    campaign_error missing{errc::not_found,
                           "cannot start the bench worker " + worker.string() +
                               ": it is not an executable file (build ks-bench-worker beside "
                               "kernelskill, or name it with --worker PATH or KS_WORKER)"};
    missing.gpu_failure = gpu::failure_kind::crash;
    out.push_back(std::move(missing));
  }
}

void check_sandbox(const config::campaign_config& config, const run_options& options,
                   std::vector<campaign_error>& out) {
  // A dry run starts no worker, but its compiles run in the sandbox too.
  if (!config.bench.sandbox)
    return;
  if (auto boundary = worker_boundary_for(config, options); !boundary)
    out.push_back(boundary.error());
}

} // namespace

std::vector<campaign_error> preflight(const config::campaign_config& config,
                                      const run_options& options) {
  std::vector<campaign_error> problems;
  if (auto ok = check_search(config); !ok)
    problems.push_back(ok.error());
  check_output(config, options, problems);
  check_skills(config, options, problems);
  check_model(config, problems);
  check_sandbox(config, options, problems);
  check_tools(options, problems);
  return problems;
}

} // namespace ks::campaign
