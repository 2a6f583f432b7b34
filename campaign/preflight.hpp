#pragma once

// Every check `run` makes before it needs a GPU, beyond loading the tasks: shared by `run`
// (which stops on them before anything is written) and `config --check` (which prints them
// all), so that "ok" from the check means `run` gets as far as the GPUs. See preflight.cpp.

#include "campaign/campaign_error.hpp"
#include "campaign/run_options.hpp"
#include "config/campaign_config.hpp"
#include "engine/error.hpp"

#include <vector>

namespace ks::campaign {

/// Returns every problem `run` with `options` would stop on before it needs a GPU, past its
/// tasks and baselines (load_tasks): the search limits and policy; the output folder (a file,
/// in use by another run, holding something else unless options.foreign allows it, not
/// writable; its store cut short, or lost beside a campaign's results, unless options.foreign
/// allows it: campaign_store.hpp); the built-in skills; the skill memory's folder (not
/// writable, or its data file cut short); with a model
/// backend, the prompts, the API key's variable, the replay folder and llm_usage.json; with
/// bench.sandbox (a dry run too: its nvcc runs there), bubblewrap; nvcc and kernelskill/abi.h,
/// and (not in a dry run) the bench worker executable. What the machine lacks is marked
/// campaign_error::environment (a worker that cannot start: gpu_failure crash). Leaves nothing
/// behind (a folder is tried with an unnamed file, dropped at once).
/// Empty: `run` gets as far as the GPUs.
[[nodiscard]] std::vector<campaign_error> preflight(const config::campaign_config& config,
                                                    const run_options& options);

} // namespace ks::campaign
