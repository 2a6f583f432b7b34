#include "gpu/worker_client.hpp"
#include "gpu/worker_sandbox.hpp"
#include "tests/test_context.hpp"

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace ks;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

/// Sets environment variables for one test and puts the old values back afterwards.
class scoped_env {
public:
  scoped_env() = default;
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

  ~scoped_env() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }

  /// Sets `name` to `value`.
  void set(const std::string& name, const std::string& value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name.c_str(), value.c_str(), 1);
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// Returns the environment of process `pid`, by name.
std::map<std::string, std::string> environment_of(int pid) {
  std::string blob = test::read_file("/proc/" + std::to_string(pid) + "/environ");
  std::map<std::string, std::string> env;
  std::istringstream in(blob);
  for (std::string entry; std::getline(in, entry, '\0');) {
    auto eq = entry.find('=');
    if (eq != std::string::npos)
      env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

// Returns the soft value of the limit called `name` in /proc/PID/limits ("Max core file size").
std::string limit_of(int pid, const std::string& name) {
  std::istringstream in(test::read_file("/proc/" + std::to_string(pid) + "/limits"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) == 0) {
      std::istringstream fields(line.substr(name.size()));
      std::string soft;
      fields >> soft;
      return soft;
    }
  }
  return {};
}

// Returns the names of the entries of `dir` that start with "ks-worker-".
std::vector<std::string> worker_folders_in(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename().string().rfind(gpu::worker_folder_prefix, 0) == 0)
      names.push_back(entry.path().filename().string());
  return names;
}

/// A TCP socket listening on 127.0.0.1 of the test's network.
class listener {
public:
  listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
  }
  ~listener() { ::close(fd_); }
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;

  /// Returns the port it listens on.
  int port() const noexcept { return port_; }

private:
  int fd_ = -1;
  int port_ = 0;
};

// A bash script that reports, one line each, what a candidate could reach from where it runs.
std::string reach_script(int port, const fs::path& outside_file) {
  return "echo \"ifaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | "
         "tr '\\n' ' ')\"\n"
         "if (exec 3<>/dev/tcp/127.0.0.1/" +
         std::to_string(port) +
         ") 2>/dev/null; then echo 'connect: yes'; else echo 'connect: no'; fi\n"
         "if touch /etc/ks-sandbox-probe 2>/dev/null; then echo 'root: writable'; "
         "rm -f /etc/ks-sandbox-probe; else echo 'root: read-only'; fi\n"
         "if echo x > \"$TMPDIR/probe\" && [ \"$(pwd)\" = \"$TMPDIR\" ]; then "
         "echo 'folder: writable'; else echo 'folder: not writable'; fi\n"
         "if [ -e '" +
         outside_file.string() +
         "' ]; then echo 'tmp: visible'; else echo 'tmp: hidden'; fi\n"
         "if touch /tmp/ks-sandbox-probe-$$ 2>/dev/null; then echo 'tmp: writable'; "
         "rm -f /tmp/ks-sandbox-probe-$$; else echo 'tmp: read-only'; fi\n"
         "echo \"pid: $$\"\n";
}

// Runs `script` with bash within `boundary`; returns its stdout, and its folder in `folder`.
std::string run_within(const gpu::worker_boundary& boundary, const std::string& script,
                       fs::path& folder) {
  auto launch = gpu::prepare_worker_launch({"/bin/bash", "-c", script}, boundary);
  REQUIRE(launch);
  folder = launch->spawn.folder.path();
  REQUIRE(fs::is_directory(folder));
  auto ran = gpu::run_to_completion(launch->argv, 30000ms, {}, std::move(launch->spawn));
  REQUIRE(ran);
  INFO("stderr: " << ran->err);
  CHECK(ran->status.success());
  return ran->out;
}

} // namespace

TEST_CASE("the bench worker starts with no secret in its environment, in a private folder, "
          "with limits",
          "[worker][boundary]") {
  test::test_context ctx;
  scoped_env env;
  env.set("OPENAI_API_KEY", "sk-boundary-test-1");
  env.set("MY_TOKEN", "boundary-test-2");
  env.set("KS_MODEL_BEARER", "boundary-test-3"); // passes the allowlist: withheld by the config
  env.set("EDITOR", "boundary-test-4");          // harmless, but not on the allowlist
  env.set("CUDA_KS_BOUNDARY_TEST", "harmless");
  env.set("KS_BOUNDARY_TEST", "harmless");
  env.set("LANG", "C.UTF-8");

  gpu::worker_options options;
  options.executable = test::bin_dir() / "ks-bench-worker";
  options.start_timeout = 20000ms;
  options.info_timeout = 20000ms;
  options.boundary.secret_env = {"KS_MODEL_BEARER"};
  options.boundary.temp_root = ctx.dir();
  gpu::worker_client client(options);
  auto info = client.info(); // no_device without a GPU; either way the worker is running
  if (!info)
    REQUIRE(info.error().kind == gpu::failure_kind::no_device);
  const int pid = client.worker_pid();
  REQUIRE(pid > 0);
  const fs::path folder = client.worker_folder();
  REQUIRE_FALSE(folder.empty());
  CHECK(fs::is_directory(folder));
  CHECK(folder.parent_path() == ctx.dir());

  auto seen = environment_of(pid);
  REQUIRE_FALSE(seen.empty());
  for (const char* name : {"OPENAI_API_KEY", "MY_TOKEN", "KS_MODEL_BEARER", "EDITOR"})
    CHECK(seen.count(name) == 0);
  for (const auto& [name, value] : seen)
    CHECK_THAT(value, !Contains("boundary-test-"));
  CHECK(seen["CUDA_KS_BOUNDARY_TEST"] == "harmless");
  CHECK(seen["KS_BOUNDARY_TEST"] == "harmless");
  CHECK(seen["LANG"] == "C.UTF-8");
  CHECK(seen.count("PATH") == 1);
  CHECK(seen["TMPDIR"] == folder.string());
  CHECK(fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd") == folder);

  CHECK(limit_of(pid, "Max core file size") == "0");
  CHECK(limit_of(pid, "Max file size") == std::to_string(int64_t{4} << 30));
  CHECK(limit_of(pid, "Max processes") != "unlimited");
  CHECK_FALSE(limit_of(pid, "Max processes").empty());

  client.shutdown();
  CHECK_FALSE(fs::exists(folder));
  CHECK(worker_folders_in(ctx.dir()).empty());
}

TEST_CASE("a worker's folder goes with it when it crashes, hangs or is dropped",
          "[worker][boundary]") {
  test::test_context ctx;
  const fs::path root = ctx.dir() / "tmp";
  fs::create_directory(root);
  gpu::worker_options options;
  options.executable = test::bin_dir() / "ks-scripted-worker";
  options.extra_args = {"--script", "ok;crash;ok;hang;ok", "--state",
                        (ctx.dir() / "script.state").string()};
  options.start_timeout = 5000ms;
  options.info_timeout = 1000ms;
  options.boundary.temp_root = root;
  fs::path first;
  {
    gpu::worker_client client(options);
    REQUIRE(client.info());
    first = client.worker_folder();
    CHECK(fs::is_directory(first));
    auto crashed = client.info();
    REQUIRE_FALSE(crashed);
    CHECK(crashed.error().kind == gpu::failure_kind::crash);
    CHECK_FALSE(fs::exists(first));
    CHECK(worker_folders_in(root).empty());

    REQUIRE(client.info());
    const fs::path second = client.worker_folder();
    CHECK(fs::is_directory(second));
    CHECK(second != first);
    auto hung = client.info();
    REQUIRE_FALSE(hung);
    CHECK(hung.error().kind == gpu::failure_kind::timeout);
    CHECK(worker_folders_in(root).empty());

    REQUIRE(client.info());
    CHECK(worker_folders_in(root).size() == 1);
  }
  // The client's destructor killed the last one.
  CHECK(worker_folders_in(root).empty());
}

TEST_CASE("asking for the sandbox without bubblewrap fails with what to do", "[boundary]") {
  test::test_context ctx;
  gpu::worker_boundary boundary;
  boundary.sandbox = gpu::sandbox_mode::bubblewrap;
  boundary.bwrap = (ctx.dir() / "no-such-bwrap").string();
  boundary.temp_root = ctx.dir();
  auto launch = gpu::prepare_worker_launch({"/bin/true"}, boundary);
  REQUIRE_FALSE(launch);
  CHECK(launch.error().code() == engine::errc::not_found);
  CHECK_THAT(launch.error().message(),
             Contains("bench.sandbox = true but bubblewrap is not installed") &&
                 Contains("apt-get install bubblewrap") && Contains("sandbox = false"));
  CHECK(worker_folders_in(ctx.dir()).empty());

  // The worker client reports it as the reason the worker cannot start.
  gpu::worker_options options;
  options.executable = test::bin_dir() / "ks-scripted-worker";
  options.boundary = boundary;
  options.boundary.requested_by = "--sandbox";
  gpu::worker_client client(options);
  auto info = client.info();
  REQUIRE_FALSE(info);
  CHECK(info.error().kind == gpu::failure_kind::crash);
  CHECK_THAT(info.error().message, Contains("--sandbox but bubblewrap is not installed") &&
                                       Contains("without --sandbox"));
}

TEST_CASE("a sandboxed worker reaches no network and writes only its own folder",
          "[boundary][sandbox]") {
  test::test_context ctx;
  // In /tmp itself, whatever $TMPDIR says: the sandbox hides /tmp.
  std::string outside = "/tmp/ks-sandbox-outside-XXXXXX";
  int outside_fd = ::mkstemp(outside.data());
  REQUIRE(outside_fd >= 0);
  ::close(outside_fd);
  struct remove_outside {
    std::string path;
    ~remove_outside() { ::unlink(path.c_str()); }
  } cleanup{outside};
  listener net;
  const std::string script = reach_script(net.port(), outside);

  gpu::worker_boundary boundary;
  boundary.temp_root = ctx.dir();
  boundary.sandbox = gpu::sandbox_mode::bubblewrap;
  auto support = gpu::probe_sandbox(boundary);
  if (!support)
    KS_SKIP("no sandbox here: " + support.error().message());
  // Unsandboxed first: the same script sees what the sandbox must take away.
  boundary.sandbox = gpu::sandbox_mode::off;
  fs::path folder;
  std::string open = run_within(boundary, script, folder);
  INFO("unsandboxed:\n" << open);
  CHECK_THAT(open,
             Contains("connect: yes") && Contains("folder: writable") && Contains("tmp: visible"));
  if (::geteuid() == 0)
    CHECK_THAT(open, Contains("root: writable"));
  CHECK_FALSE(fs::exists(folder));

  boundary.sandbox = gpu::sandbox_mode::bubblewrap;
  std::string boxed = run_within(boundary, script, folder);
  INFO("sandboxed:\n" << boxed);
  CHECK_THAT(boxed, Contains("ifaces: lo \n") && Contains("connect: no") &&
                        Contains("root: read-only") && Contains("folder: writable") &&
                        Contains("tmp: hidden") && Contains("tmp: read-only"));
  if (support->pid_namespace)
    CHECK_THAT(boxed, !Contains("pid: " + std::to_string(::getpid())));
  else
    WARN("this host allows no pid namespace in bubblewrap: the sandbox runs without one");
  CHECK_FALSE(fs::exists(folder));
}

TEST_CASE("a sandboxed bench worker sees the devices an unsandboxed one sees",
          "[worker][boundary][sandbox]") {
  test::test_context ctx;
  gpu::worker_options options;
  options.executable = test::bin_dir() / "ks-bench-worker";
  options.start_timeout = options.info_timeout = 30000ms;
  options.boundary.temp_root = ctx.dir();
  options.boundary.sandbox = gpu::sandbox_mode::bubblewrap;
  if (auto support = gpu::probe_sandbox(options.boundary); !support)
    KS_SKIP("no sandbox here: " + support.error().message());
  gpu::worker_client boxed(options);
  auto inside = boxed.info();
  boxed.shutdown();
  options.boundary.sandbox = gpu::sandbox_mode::off;
  gpu::worker_client open(options);
  auto outside = open.info();
  open.shutdown();
  if (!outside) {
    REQUIRE(outside.error().kind == gpu::failure_kind::no_device);
    REQUIRE_FALSE(inside);
    CHECK(inside.error().kind == gpu::failure_kind::no_device);
    return;
  }
  INFO("sandboxed: " << (inside ? inside->name : inside.error().message));
  REQUIRE(inside);
  CHECK(inside->name == outside->name);
  CHECK(inside->uuid == outside->uuid);
  CHECK(inside->device_count == outside->device_count);
}

TEST_CASE("killing a sandboxed worker kills what it started, even in another session",
          "[boundary][sandbox]") {
  test::test_context ctx;
  gpu::worker_boundary boundary;
  boundary.temp_root = ctx.dir();
  boundary.sandbox = gpu::sandbox_mode::bubblewrap;
  auto support = gpu::probe_sandbox(boundary);
  if (!support)
    KS_SKIP("no sandbox here: " + support.error().message());
  if (!support->pid_namespace)
    KS_SKIP("no pid namespace for bubblewrap here: a process in another session may escape");
  // Each process carries the tag in its argv[0], so that it can be found from outside.
  const std::string tag = "ks-escape-test-" + std::to_string(::getpid());
  const std::string script = "setsid bash -c 'exec -a " + tag + " sleep 1000' & echo started; " +
                             "exec -a " + tag + " sleep 1000";
  auto launch = gpu::prepare_worker_launch({"/bin/bash", "-c", script}, boundary);
  REQUIRE(launch);
  auto child = gpu::child_process::spawn(launch->argv, std::move(launch->spawn));
  REQUIRE(child);
  auto line = child->read_line(10000ms);
  REQUIRE(line);
  REQUIRE(*line);
  CHECK(**line == "started");
  auto tagged = [&] {
    int64_t found = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      std::string cmdline = test::read_file(entry.path() / "cmdline");
      if (cmdline.rfind(tag, 0) == 0)
        ++found;
    }
    return found;
  };
  // Polls, at most 30 s however loaded the machine: both processes started; then both gone.
  for (int i = 0; i < 1500 && tagged() < 2; ++i)
    std::this_thread::sleep_for(20ms);
  REQUIRE(tagged() == 2);
  child->kill();
  int64_t left = tagged();
  for (int i = 0; i < 3000 && left > 0; ++i) {
    std::this_thread::sleep_for(10ms);
    left = tagged();
  }
  CHECK(left == 0);
}
