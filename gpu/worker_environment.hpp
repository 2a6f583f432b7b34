#pragma once

// The bench worker's environment: an allowlist, not a denylist. The worker runs untrusted
// candidate code, and the engine's environment will hold API keys (agents.api_key_env) and
// whatever else the user exported; a denylist would leak every secret nobody thought of. So
// the worker gets only the variables below, with their values from the engine:
//
//   PATH                    the worker needs nothing from it, but a candidate's host code
//                           may run a tool by name, and it is no secret
//   LD_LIBRARY_PATH         where hosts put libcuda/libcudart when not in the linker's path
//                           (conda, containers, WSL's /usr/lib/wsl/lib)
//   HOME                    the CUDA driver's JIT cache lives under it (~/.nv/ComputeCache)
//   LANG, LANGUAGE, LC_*    messages and number formats, as the user chose them
//   TZ                      times in messages
//   CUDA_*                  the runtime's and driver's settings: CUDA_VISIBLE_DEVICES,
//                           CUDA_DEVICE_ORDER, CUDA_MODULE_LOADING, CUDA_CACHE_*,
//                           CUDA_LAUNCH_BLOCKING, CUDA_MPS_*, CUDA_INJECTION64_PATH (tools)
//   NVIDIA_*                the container runtime's device settings (NVIDIA_VISIBLE_DEVICES)
//   __NV_*, __GL_*          the driver's own tuning variables
//   KS_*                    our own namespace: variables the worker (or its test double,
//                           tests/gpu/scripted_worker.cpp) reads
//
// and TMPDIR, set to the worker's private folder. Even an allowed name is withheld when it
// contains KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH (in any case), or is one
// the config names as secret (agents.api_key_env, bench.secret_env). Left out on purpose,
// among others: LD_PRELOAD and LD_AUDIT (code injected into the process that loads
// candidates is the engine user's business, not the worker's), USER, SHELL, TERM, DISPLAY,
// SSH_AUTH_SOCK, XDG_* and every proxy setting.

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ks::gpu {

/// Checks whether a variable called `name` may hold a secret: its name contains KEY, TOKEN,
/// SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH (case-insensitive), or it is one of `secret`.
bool is_secret_variable(std::string_view name, std::span<const std::string> secret);

/// Checks whether the allowlist above passes a variable called `name` (before the secret
/// test; TMPDIR is not on it, the worker gets its own).
bool is_worker_variable(std::string_view name);

/// Returns the worker's environment ("NAME=value" entries) made from `parent` (entries of
/// the same form, such as our `environ`): the allowed variables that are not secret, in
/// `parent`'s order, then TMPDIR=`temp_dir`.
std::vector<std::string> worker_environment(std::span<const std::string> parent,
                                            std::span<const std::string> secret,
                                            const std::filesystem::path& temp_dir);

/// Returns our own environment as "NAME=value" entries.
std::vector<std::string> current_environment();

} // namespace ks::gpu
