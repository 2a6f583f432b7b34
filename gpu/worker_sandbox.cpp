#include "gpu/worker_sandbox.hpp"

#include "gpu/worker_environment.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

namespace ks::gpu {

namespace fs = std::filesystem;

namespace {

constexpr auto probe_timeout = std::chrono::seconds{15};

bool is_executable_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

// Returns `name` as given when it holds a '/', else found beside the running executable (so
// that a bwrap carried in an installed bin/ is used on a host that lacks the package), else in
// our PATH; nullopt when it is nowhere.
std::optional<fs::path> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return is_executable_file(name) ? std::optional<fs::path>(fs::absolute(name)) : std::nullopt;
  std::error_code ec;
  if (fs::path self = fs::read_symlink("/proc/self/exe", ec);
      !ec && is_executable_file(self.parent_path() / name))
    return self.parent_path() / name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    auto colon = dirs.find(':');
    auto dir = dirs.substr(0, colon);
    if (!dir.empty() && is_executable_file(fs::path(dir) / name))
      return fs::path(dir) / name;
    if (colon == std::string_view::npos)
      break;
    dirs.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

fs::path canonical_or_as_is(const fs::path& path) {
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? path : resolved;
}

// The folders the sandbox replaces with empty ones; /var/run only where it is not a link to
// /run (it usually is).
std::vector<fs::path> hidden_folders() {
  std::vector<fs::path> hidden;
  std::error_code ec;
  for (const char* dir : {"/tmp", "/var/tmp", "/run", "/var/run"})
    if (fs::is_directory(fs::symlink_status(dir, ec)))
      hidden.emplace_back(dir);
  return hidden;
}

bool lies_under(const fs::path& path, const fs::path& folder) {
  auto [end, _] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return end == folder.end();
}

std::string env_value(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& entry : env)
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=')
      return entry.substr(name.size() + 1);
  return {};
}

// Returns the device files a GPU process opens: /dev/nvidia0..N, nvidiactl, nvidia-uvm(-tools),
// nvidia-modeset, nvidia-nvswitch*, and the folders nvidia-caps and nvidia-caps-imex-channels.
std::vector<fs::path> nvidia_device_files() {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::directory_iterator it("/dev", ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().rfind("nvidia", 0) == 0)
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

// Returns "how to turn the sandbox off" for the setting that turned it on.
std::string turn_off(const worker_boundary& boundary) {
  if (boundary.requested_by.rfind("--", 0) == 0)
    return "run without " + boundary.requested_by;
  return "set sandbox = false";
}

// Returns the last non-empty line of `text`, or `fallback`.
std::string last_line(const std::string& text, std::string fallback) {
  auto end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos)
    return fallback;
  auto start = text.find_last_of('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

fs::path temp_root_of(const worker_boundary& boundary) {
  return canonical_or_as_is(boundary.temp_root.empty() ? default_temp_root() : boundary.temp_root);
}

// Sweeps each temp root once per process: a sweep reads the whole folder, and only a killed
// engine leaves anything behind, which happens before we start, not while we run.
void sweep_once(const fs::path& root) {
  static std::mutex mutex;
  static std::set<std::string> swept;
  std::lock_guard<std::mutex> lock(mutex);
  if (swept.insert(root.string()).second)
    sweep_private_folders(root, worker_folder_prefix);
}

// Runs `bwrap` with the arguments of `support` around a shell doing nothing (by absolute
// path: the environment's PATH may name nothing); returns bwrap's complaint, or "" when the
// sandbox works.
std::string try_sandbox(const sandbox_support& support, const worker_boundary& boundary) {
  auto folder = private_folder::create(temp_root_of(boundary), worker_folder_prefix);
  if (!folder)
    return folder.error().message();
  spawn_options options;
  options.env = worker_environment(current_environment(), boundary.secret_env, folder->path());
  std::vector<std::string> argv{support.bwrap.string()};
  for (std::string& arg : sandbox_arguments(support, boundary, folder->path(), *options.env))
    argv.push_back(std::move(arg));
  argv.insert(argv.end(), {"/bin/sh", "-c", ":"});
  options.folder = std::move(*folder);
  auto ran = run_to_completion(argv, probe_timeout, {}, std::move(options));
  if (!ran)
    return ran.error().message();
  if (ran->status.success())
    return {};
  return last_line(ran->err, "bwrap failed (" + ran->status.describe() + ")");
}

engine::expected<sandbox_support> probe_uncached(const worker_boundary& boundary) {
  auto bwrap = find_program(boundary.bwrap);
  if (!bwrap)
    return engine::fail(engine::errc::not_found,
                        boundary.requested_by + " but bubblewrap is not installed (no '" +
                            boundary.bwrap +
                            "' beside this program or in PATH): apt-get install bubblewrap, or " +
                            turn_off(boundary));
  // The fullest sandbox first; each fallback gives up a namespace this host may not allow.
  const std::array<sandbox_support, 3> variants = {
      sandbox_support{*bwrap, true, true},
      sandbox_support{*bwrap, false, true},
      sandbox_support{*bwrap, false, false},
  };
  std::string first_complaint;
  for (const sandbox_support& support : variants) {
    std::string complaint = try_sandbox(support, boundary);
    if (complaint.empty())
      return support;
    if (first_complaint.empty())
      first_complaint = std::move(complaint);
  }
  return engine::fail(
      engine::errc::subprocess,
      boundary.requested_by + " but bubblewrap cannot make a sandbox on this host (" +
          first_complaint +
          "): allow it to create namespaces (user namespaces for a user other than root: sysctl "
          "kernel.unprivileged_userns_clone=1, or on Ubuntu an AppArmor profile for bwrap; in a "
          "container, a seccomp profile that allows unshare and mount), or " +
          turn_off(boundary));
}

} // namespace

engine::expected<sandbox_support> probe_sandbox(const worker_boundary& boundary) {
  static std::mutex mutex;
  static std::map<std::string, engine::expected<sandbox_support>> probed;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key =
      boundary.bwrap + '\0' + temp_root_of(boundary).string() + '\0' + boundary.requested_by;
  auto it = probed.find(key);
  if (it == probed.end())
    it = probed.emplace(key, probe_uncached(boundary)).first;
  return it->second;
}

std::vector<std::string> namespace_arguments(const sandbox_support& support) {
  std::vector<std::string> args{"--die-with-parent", "--unshare-net"};
  if (support.ipc_uts)
    args.insert(args.end(), {"--unshare-ipc", "--unshare-uts"});
  if (support.pid_namespace)
    args.insert(args.end(), {"--unshare-pid", "--new-session"});
  // Root keeps its capabilities in bwrap unless told otherwise, and CAP_SYS_ADMIN would let a
  // candidate remount / read-write.
  if (::geteuid() == 0)
    args.insert(args.end(), {"--cap-drop", "ALL"});
  return args;
}

std::vector<std::string> sandbox_arguments(const sandbox_support& support,
                                           const worker_boundary& boundary, const fs::path& folder,
                                           const std::vector<std::string>& env) {
  std::vector<std::string> args = namespace_arguments(support);
  args.insert(args.end(), {"--ro-bind", "/", "/", "--dev", "/dev"});
  for (const fs::path& device : nvidia_device_files())
    args.insert(args.end(), {"--dev-bind-try", device.string(), device.string()});
  // Without a pid namespace the host's /proc stays, read-only, from the bind of /.
  if (support.pid_namespace)
    args.insert(args.end(), {"--proc", "/proc"});
  const std::vector<fs::path> hidden = hidden_folders();
  for (const fs::path& dir : hidden)
    args.insert(args.end(), {"--tmpfs", dir.string()});
  for (const fs::path& path : boundary.readable) {
    fs::path resolved = canonical_or_as_is(path);
    bool is_hidden = std::any_of(hidden.begin(), hidden.end(),
                                 [&](const fs::path& dir) { return lies_under(resolved, dir); });
    if (is_hidden && resolved.is_absolute())
      args.insert(args.end(), {"--ro-bind-try", resolved.string(), resolved.string()});
  }
  // An MPS client talks to its server through pipes in this folder.
  std::string mps = env_value(env, "CUDA_MPS_PIPE_DIRECTORY");
  fs::path mps_dir = canonical_or_as_is(mps.empty() ? "/tmp/nvidia-mps" : mps);
  if (mps_dir.is_absolute())
    args.insert(args.end(), {"--bind-try", mps_dir.string(), mps_dir.string()});
  args.insert(args.end(), {"--bind", folder.string(), folder.string()});
  // The hidden folders were writable tmpfs mounts: a candidate could leave files there for a
  // later worker of the sandbox's lifetime; the binds inside them keep their own flags.
  for (const fs::path& dir : hidden)
    args.insert(args.end(), {"--remount-ro", dir.string()});
  args.insert(args.end(), {"--chdir", folder.string(), "--"});
  return args;
}

engine::expected<worker_launch> prepare_worker_launch(std::vector<std::string> worker_argv,
                                                      const worker_boundary& boundary) {
  if (worker_argv.empty() || worker_argv.front().empty())
    return engine::fail(engine::errc::invalid_input, "cannot start a worker: empty command line");
  fs::path exe = worker_argv.front();
  if (worker_argv.front().find('/') != std::string::npos && exe.is_relative()) {
    exe = fs::absolute(exe);
    worker_argv.front() = exe.string();
  }
  const fs::path root = temp_root_of(boundary);
  sweep_once(root);
  std::optional<sandbox_support> support;
  if (boundary.sandbox == sandbox_mode::bubblewrap) {
    auto probed = probe_sandbox(boundary);
    if (!probed)
      return tl::unexpected(probed.error());
    support = *probed;
  }
  auto folder = private_folder::create(root, worker_folder_prefix);
  if (!folder)
    return tl::unexpected(folder.error());

  worker_launch launch;
  launch.spawn.env = worker_environment(current_environment(), boundary.secret_env, folder->path());
  launch.spawn.cwd = folder->path();
  if (support) {
    // The worker's own folder (bin/ and the lib/ beside it) may lie where the sandbox hides.
    worker_boundary bounded = boundary;
    if (exe.has_parent_path())
      bounded.readable.push_back(exe.parent_path().parent_path());
    // A bind is made once, at the start: a compile cache that does not exist yet (a campaign
    // starts its workers before its compiler) would never show up in this worker.
    for (const fs::path& path : bounded.readable) {
      std::error_code ec;
      if (!fs::exists(path, ec))
        fs::create_directories(path, ec);
    }
    launch.argv.push_back(support->bwrap.string());
    for (std::string& arg : sandbox_arguments(*support, bounded, folder->path(), *launch.spawn.env))
      launch.argv.push_back(std::move(arg));
  }
  launch.argv.insert(launch.argv.end(), worker_argv.begin(), worker_argv.end());
  launch.spawn.folder = std::move(*folder);
  return launch;
}

} // namespace ks::gpu
