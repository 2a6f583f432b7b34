#pragma once

// How a bench worker is started as a boundary around untrusted candidate code: always with a
// scrubbed environment (worker_environment.hpp) in a private folder of its own
// (private_folder.hpp), which is its working directory and TMPDIR and is removed when the
// worker is reaped; and, with sandbox_mode::bubblewrap, inside bubblewrap (bwrap):
//
//   --unshare-net                 no network: only a loopback interface of its own, so no
//                                 connection to anything outside, the engine's host included
//   --unshare-pid --proc /proc    a pid namespace: the worker sees only its own processes,
//   --new-session                 and when bwrap dies everything inside dies (the namespace's
//                                 init goes, the kernel kills the rest), so the new session
//                                 (no controlling terminal to inject keystrokes into) does
//                                 not weaken our process-group kill
//   --unshare-ipc --unshare-uts   System V IPC and the host name of its own
//   --ro-bind / /                 the whole file system, read-only ...
//   --tmpfs /tmp /var/tmp /run    ... but an empty /tmp, /var/tmp and /run: these hold other
//                                 programs' sockets (tmux, X11, ssh-agent, docker.sock,
//                                 D-Bus), which a read-only mount does not stop anyone from
//                                 connecting to, and other processes' temporary files
//   --bind FOLDER FOLDER          its private folder, writable
//   --ro-bind-try PATH PATH       each readable folder the hidden ones would hide (a compile
//                                 cache under /tmp), read-only
//   --dev /dev                    a minimal /dev (null, zero, random, urandom, tty, shm, pts)
//   --dev-bind-try /dev/nvidia*   plus every NVIDIA device file and /dev/nvidia-caps
//   --bind-try MPS_DIR MPS_DIR    the CUDA MPS pipe folder, where there is one
//   --die-with-parent             no worker outlives bwrap
//   --cap-drop ALL                (as root) no capabilities, so no remounting / read-write
//
// Not every host lets bwrap make every namespace (a container may forbid a fresh /proc). The
// first start probes, once per process: the full set, then without the pid namespace (the
// host's /proc bound, no new session, which would let a process escape our group kill), then
// only the mandatory part (no network, the read-only view). When even that fails, or bwrap
// is not installed, the start fails with what to do: never a silent unsandboxed worker.

#include "engine/error.hpp"
#include "gpu/child_process.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks::gpu {

/// Says whether each bench worker runs inside bubblewrap.
enum class sandbox_mode { off, bubblewrap };

/// What bounds a bench worker, besides the limits it sets itself (worker_limits.hpp).
struct worker_boundary {
  sandbox_mode sandbox = sandbox_mode::off;
  std::vector<std::string> secret_env; ///< variables withheld besides those named like secrets
  /// Folders a sandboxed worker reads (the compile cache): bound read-only where the sandbox
  /// would hide them; made when missing, since the bind is made when the worker starts.
  std::vector<std::filesystem::path> readable;
  std::filesystem::path temp_root; ///< where private folders are made; empty: $TMPDIR or /tmp
  /// bubblewrap: a path, or a name looked for beside the running program, then in PATH
  std::string bwrap = "bwrap";
  /// The setting that asked for the sandbox, as the user wrote it: errors start with it and
  /// say how to turn it off ("bench.sandbox = true", or a flag such as "--sandbox").
  std::string requested_by = "bench.sandbox = true";
};

/// What bubblewrap can do on this host, as probed.
struct sandbox_support {
  std::filesystem::path bwrap; ///< the executable, resolved
  bool pid_namespace = false;  ///< --unshare-pid with a fresh /proc (and --new-session) work
  bool ipc_uts = false;        ///< --unshare-ipc and --unshare-uts work
};

/// The name every private folder of a worker starts with, before the engine's pid.
inline constexpr const char* worker_folder_prefix = "ks-worker-";

/// Checks that bubblewrap is installed and can make a sandbox on this host, and how much of
/// one; probes once per bwrap path and process. Fails with errc::not_found when bwrap is
/// missing, errc::subprocess when it cannot make the namespaces (with bwrap's own words);
/// both messages say what to do.
[[nodiscard]] engine::expected<sandbox_support> probe_sandbox(const worker_boundary& boundary);

/// Returns bwrap's arguments that make the namespaces `support` allows: no network, IPC and
/// UTS, a pid namespace and a new session, death with the parent, and (as root) no
/// capabilities. The worker's sandbox and nvcc's (compile_sandbox.hpp) both start with them.
std::vector<std::string> namespace_arguments(const sandbox_support& support);

/// Returns bwrap's arguments, up to and including "--", for a worker whose private folder is
/// `folder` and whose environment is `env` (it names the CUDA MPS pipe folder, if any).
std::vector<std::string> sandbox_arguments(const sandbox_support& support,
                                           const worker_boundary& boundary,
                                           const std::filesystem::path& folder,
                                           const std::vector<std::string>& env);

/// A worker's command line and how to start it.
struct worker_launch {
  std::vector<std::string> argv; ///< the worker's, or bwrap's around it
  spawn_options spawn;           ///< environment, working directory, private folder
};

/// Prepares the start of the worker `worker_argv` within `boundary`: makes its private folder
/// (after sweeping the folders killed engines left, once per process), builds its
/// environment, and in a sandbox wraps the command line in bwrap. A relative argv[0] with a
/// '/' is made absolute, since the worker starts in another folder. Fails when the folder
/// cannot be made or the sandbox is asked for and unavailable.
[[nodiscard]] engine::expected<worker_launch>
prepare_worker_launch(std::vector<std::string> worker_argv, const worker_boundary& boundary);

} // namespace ks::gpu
