// Child processes for nvcc and the bench worker.
//
// A child is started with posix_spawnp in a process group of its own (POSIX_SPAWN_SETPGROUP),
// so kill(-pid, SIGKILL) reaches everything it started: nvcc's cicc and ptxas, or whatever a
// hung worker forked. Our ends of the three pipes are created O_CLOEXEC by pipe2, so that a
// child spawned concurrently from another thread (compile_all runs several nvcc at once) never
// inherits them: an inherited write end would keep our reader from ever seeing end of file.
// Our ends are non-blocking and every wait is a poll() with a deadline.
//
// Deadlock reasoning: a child blocks when a pipe it writes is full. Whatever we wait for (a
// line of stdout, room in stdin, the child's exit) we therefore keep reading both stdout and
// stderr; stderr is cut to its last 64 KiB for long-lived children, kept whole by
// run_to_completion. SIGPIPE is ignored process-wide once (a child that dies while we write
// gives EPIPE, not our death), and reset to its default in the child, because ignored signals
// stay ignored across exec.
//
// Reaping: we detect an exit with waitid(WNOWAIT), which leaves the zombie in place. While it
// exists its pid, and so its process group id, cannot be reused, so the kill(-pid) that
// clears out leftovers (a background grandchild) can only reach processes of ours. Only then
// do we reap it with waitpid.
//
// What a child inherits: the three pipes and nothing else (every other descriptor is closed
// in the child before the exec, whether or not it was opened O_CLOEXEC: a library of the
// engine that forgot the flag must not hand the store's files to the bench worker); the
// environment it is given (the worker's is scrubbed, see worker_environment.hpp); and its
// own folder, which is removed right after the reap.

#include "gpu/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>

extern char** environ;

namespace ks::gpu {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr size_t stderr_tail_bytes = size_t{64} * 1024;

// How long run_to_completion keeps reading after the child exited while something it left
// behind still holds the pipes open; then the leftovers are killed.
constexpr auto leftover_grace = std::chrono::milliseconds{100};

void ignore_sigpipe() {
  static const bool ignored = [] {
    std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)ignored;
}

std::string errno_text(int err) {
  return std::strerror(err);
}

void close_fd(int& fd) noexcept {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

// Returns the milliseconds left until `deadline`, rounded up, or 0 if it has passed.
int ms_until(clock_type::time_point deadline) {
  auto left = deadline - clock_type::now();
  if (left <= clock_type::duration::zero())
    return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

// Moves `fd` above the standard descriptors so the child's dup2 calls cannot clobber it
// (possible when our own stdin/stdout/stderr are closed).
bool lift_fd(int& fd) {
  if (fd > 2)
    return true;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (moved < 0)
    return false;
  ::close(fd);
  fd = moved;
  return true;
}

bool set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

struct spawned {
  int pid = -1;
  int in = -1;  // write end of the child's stdin
  int out = -1; // read end of its stdout
  int err = -1; // read end of its stderr
};

engine::expected<spawned> spawn_piped(const std::vector<std::string>& argv,
                                      const std::filesystem::path& cwd = {},
                                      const std::vector<std::string>* env = nullptr) {
  if (argv.empty() || argv.front().empty())
    return engine::fail(engine::errc::invalid_input, "cannot start a child: empty command line");
  ignore_sigpipe();
  std::array<int, 6> fds{-1, -1, -1, -1, -1, -1}; // stdin r/w, stdout r/w, stderr r/w
  auto close_all = [&fds] {
    for (int& fd : fds)
      close_fd(fd);
  };
  for (size_t i = 0; i < 3; ++i) {
    if (::pipe2(&fds[2 * i], O_CLOEXEC) != 0) {
      int err = errno;
      close_all();
      return engine::fail(engine::errc::subprocess, "cannot create a pipe: " + errno_text(err));
    }
  }
  for (int& fd : fds) {
    if (!lift_fd(fd)) {
      int err = errno;
      close_all();
      return engine::fail(engine::errc::subprocess, "cannot move a pipe: " + errno_text(err));
    }
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears FD_CLOEXEC on the copy, so only these three survive the exec.
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[3], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[5], STDERR_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!cwd.empty())
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);

  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const auto& arg : argv)
    cargv.push_back(const_cast<char*>(arg.c_str()));
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  if (env != nullptr) {
    cenv.reserve(env->size() + 1);
    for (const auto& entry : *env)
      cenv.push_back(const_cast<char*>(entry.c_str()));
    cenv.push_back(nullptr);
  }

  pid_t pid = -1;
  // posix_spawnp searches argv[0] in our PATH, not in the child's environment.
  int rc = ::posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(),
                          env != nullptr ? cenv.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    close_all();
    auto code = rc == ENOENT || rc == EACCES ? engine::errc::not_found : engine::errc::subprocess;
    std::string where = cwd.empty() ? "" : " in " + cwd.string();
    return engine::fail(code,
                        "cannot start '" + argv.front() + "'" + where + ": " + errno_text(rc));
  }

  spawned s;
  s.pid = pid;
  s.in = fds[1];
  s.out = fds[2];
  s.err = fds[4];
  close_fd(fds[0]);
  close_fd(fds[3]);
  close_fd(fds[5]);
  set_nonblocking(s.in);
  set_nonblocking(s.out);
  set_nonblocking(s.err);
  return s;
}

// Reads what `fd` has now into `into`; closes `fd` (sets it to -1) at end of file or error.
void read_available(int& fd, std::string& into) {
  char buf[65536];
  while (fd >= 0) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    close_fd(fd);
  }
}

void keep_tail(std::string& text) {
  if (text.size() > stderr_tail_bytes)
    text.erase(0, text.size() - stderr_tail_bytes);
}

// Checks whether `pid` has ended, leaving its zombie in place (see the top of the file).
bool has_exited(int pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  int rc;
  do {
    rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0)
    return true; // ECHILD: not ours to wait for any more
  return info.si_pid != 0;
}

// Kills whatever is left of `pid`'s process group, then reaps `pid`.
exit_status reap_group(int pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL); // in case it left its group
  int raw = 0;
  int rc;
  do {
    rc = ::waitpid(pid, &raw, 0);
  } while (rc < 0 && errno == EINTR);
  exit_status status;
  if (rc < 0)
    return status; // already reaped elsewhere: unknown
  if (WIFEXITED(raw)) {
    status.code = WEXITSTATUS(raw);
  } else if (WIFSIGNALED(raw)) {
    status.signal = WTERMSIG(raw);
  }
  return status;
}

} // namespace

// -- exit_status ----------------------------------------------------------------------------

std::string exit_status::describe() const {
  if (timed_out)
    return "timed out after " + std::to_string(timeout_ms) + " ms";
  if (signal != 0) {
    std::string text = "killed by signal " + std::to_string(signal);
    if (const char* abbrev = ::sigabbrev_np(signal))
      text += std::string(" (SIG") + abbrev + ")";
    return text;
  }
  if (code < 0)
    return "unknown exit status";
  return "exit code " + std::to_string(code);
}

// -- run_to_completion ------------------------------------------------------------------------

engine::expected<run_result> run_to_completion(const std::vector<std::string>& argv,
                                               std::chrono::milliseconds timeout,
                                               const std::string& input) {
  return run_to_completion(argv, timeout, input, spawn_options{});
}

engine::expected<run_result> run_to_completion(const std::vector<std::string>& argv,
                                               std::chrono::milliseconds timeout,
                                               const std::string& input,
                                               const std::filesystem::path& cwd) {
  spawn_options options;
  options.cwd = cwd;
  return run_to_completion(argv, timeout, input, std::move(options));
}

engine::expected<run_result> run_to_completion(const std::vector<std::string>& argv,
                                               std::chrono::milliseconds timeout,
                                               const std::string& input, spawn_options options) {
  auto start = clock_type::now();
  // Dropped (and so removed) when this returns, after the child's group is dead.
  private_folder folder = std::move(options.folder);
  auto child = spawn_piped(argv, options.cwd, options.env ? &*options.env : nullptr);
  if (!child)
    return tl::unexpected(child.error());
  auto [pid, in, out, err] = *child;
  auto deadline = start + timeout;

  run_result result;
  size_t written = 0;
  if (input.empty())
    close_fd(in);
  bool exited = false;
  bool timed_out = false;
  clock_type::time_point exited_at;
  for (;;) {
    if (!exited && has_exited(pid)) {
      exited = true;
      exited_at = clock_type::now();
    }
    if (exited && out < 0 && err < 0)
      break;
    if (exited && clock_type::now() - exited_at >= leftover_grace)
      break;
    int left = ms_until(deadline);
    if (left == 0) {
      timed_out = !exited;
      break;
    }
    // Pipes at end of file while the child lives: it is about to exit, so look again soon.
    // Otherwise the pipes wake us; the tick only bounds how late we notice a bare exit.
    int tick = exited ? static_cast<int>(leftover_grace.count()) : (out < 0 && err < 0 ? 1 : 20);
    std::array<pollfd, 3> fds{};
    nfds_t n = 0;
    if (out >= 0)
      fds[n++] = {out, POLLIN, 0};
    if (err >= 0)
      fds[n++] = {err, POLLIN, 0};
    if (in >= 0)
      fds[n++] = {in, POLLOUT, 0};
    if (::poll(fds.data(), n, std::min(left, tick)) < 0 && errno != EINTR)
      break;
    read_available(out, result.out);
    read_available(err, result.err);
    while (in >= 0 && written < input.size()) {
      ssize_t w = ::write(in, input.data() + written, input.size() - written);
      if (w > 0) {
        written += static_cast<size_t>(w);
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        close_fd(in); // EPIPE: the child does not want the rest
      }
    }
    if (in >= 0 && written == input.size())
      close_fd(in);
  }
  result.status = reap_group(pid);
  // The group is dead, so what is still in the pipes is all there will be.
  read_available(out, result.out);
  read_available(err, result.err);
  close_fd(in);
  close_fd(out);
  close_fd(err);
  if (timed_out) {
    result.status.timed_out = true;
    result.status.timeout_ms = timeout.count();
  }
  result.wall_ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
  return result;
}

// -- child_process ----------------------------------------------------------------------------

child_process::child_process(child_process&& other) noexcept
  : pid_(std::exchange(other.pid_, -1)), in_(std::exchange(other.in_, -1)),
    out_(std::exchange(other.out_, -1)), err_fd_(std::exchange(other.err_fd_, -1)),
    out_buf_(std::move(other.out_buf_)), err_(std::move(other.err_)), last_(other.last_),
    folder_(std::move(other.folder_)) {}

child_process& child_process::operator=(child_process&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0)
      reap();
    close_fds();
    pid_ = std::exchange(other.pid_, -1);
    in_ = std::exchange(other.in_, -1);
    out_ = std::exchange(other.out_, -1);
    err_fd_ = std::exchange(other.err_fd_, -1);
    out_buf_ = std::move(other.out_buf_);
    err_ = std::move(other.err_);
    last_ = other.last_;
    folder_ = std::move(other.folder_);
  }
  return *this;
}

child_process::~child_process() {
  if (pid_ > 0)
    reap();
  close_fds();
  folder_.remove();
}

engine::expected<child_process> child_process::spawn(const std::vector<std::string>& argv) {
  return spawn(argv, spawn_options{});
}

engine::expected<child_process> child_process::spawn(const std::vector<std::string>& argv,
                                                     spawn_options options) {
  auto child = spawn_piped(argv, options.cwd, options.env ? &*options.env : nullptr);
  if (!child)
    return tl::unexpected(child.error()); // options.folder goes with options
  child_process result;
  result.pid_ = child->pid;
  result.in_ = child->in;
  result.out_ = child->out;
  result.err_fd_ = child->err;
  result.folder_ = std::move(options.folder);
  return result;
}

engine::expected<void> child_process::write_line(const std::string& line) {
  return write_line(line, std::chrono::milliseconds{30000});
}

engine::expected<void> child_process::write_line(const std::string& line,
                                                 std::chrono::milliseconds timeout) {
  if (in_ < 0)
    return engine::fail(engine::errc::subprocess, "the child's stdin is closed");
  std::string data = line;
  data.push_back('\n');
  auto deadline = clock_type::now() + timeout;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(in_, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int left = ms_until(deadline);
      if (left == 0)
        return engine::fail(engine::errc::timeout, "the child (pid " + std::to_string(pid_) +
                                                       ") took no input for " +
                                                       std::to_string(timeout.count()) + " ms");
      pump(left, true);
      continue;
    }
    int err = errno;
    close_fd(in_);
    return engine::fail(engine::errc::subprocess, "cannot write to the child (pid " +
                                                      std::to_string(pid_) +
                                                      "): " + errno_text(err));
  }
  return {};
}

void child_process::close_stdin() noexcept {
  close_fd(in_);
}

engine::expected<std::optional<std::string>>
child_process::read_line(std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  bool expired = false;
  for (;;) {
    if (auto nl = out_buf_.find('\n'); nl != std::string::npos) {
      std::string line = out_buf_.substr(0, nl);
      out_buf_.erase(0, nl + 1);
      return line;
    }
    if (out_ < 0) {
      if (out_buf_.empty())
        return std::nullopt;
      // A last line without '\n': hand it out, end of file comes next time.
      return std::optional<std::string>{std::exchange(out_buf_, {})};
    }
    if (expired)
      return engine::fail(engine::errc::timeout, "no line from the child (pid " +
                                                     std::to_string(pid_) + ") within " +
                                                     std::to_string(timeout.count()) + " ms");
    int left = ms_until(deadline);
    expired = left == 0; // one more look without waiting, then give up
    pump(left, false);
  }
}

exit_status child_process::kill() {
  if (pid_ > 0)
    return reap();
  return last_;
}

exit_status child_process::wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0)
    return last_;
  // Our silence would be a reason for a line-reading child to wait forever.
  close_stdin();
  auto deadline = clock_type::now() + timeout;
  for (;;) {
    if (has_exited(pid_))
      return reap();
    int left = ms_until(deadline);
    if (left == 0) {
      exit_status status = reap();
      status.timed_out = true;
      status.timeout_ms = timeout.count();
      last_ = status;
      return status;
    }
    // Keep reading so that a child blocked on a full pipe can get to its exit.
    pump(std::min(left, out_ < 0 && err_fd_ < 0 ? 1 : 20), false);
  }
}

// -- private ------------------------------------------------------------------------------------

void child_process::drain_stderr() {
  read_available(err_fd_, err_);
  keep_tail(err_);
}

void child_process::close_fds() noexcept {
  close_fd(in_);
  close_fd(out_);
  close_fd(err_fd_);
}

// Waits up to `timeout_ms` for stdout or stderr to have data (or stdin room, with
// `want_write`), reads what there is, and returns whether stdin can take more.
bool child_process::pump(int timeout_ms, bool want_write) {
  std::array<pollfd, 3> fds{};
  nfds_t n = 0;
  if (out_ >= 0)
    fds[n++] = {out_, POLLIN, 0};
  if (err_fd_ >= 0)
    fds[n++] = {err_fd_, POLLIN, 0};
  int in_index = -1;
  if (want_write && in_ >= 0) {
    in_index = static_cast<int>(n);
    fds[n++] = {in_, POLLOUT, 0};
  }
  int rc = ::poll(fds.data(), n, timeout_ms);
  if (rc < 0)
    return false; // EINTR: the caller loops with its deadline
  read_available(out_, out_buf_);
  drain_stderr();
  return in_index >= 0 && (fds[static_cast<size_t>(in_index)].revents & (POLLOUT | POLLERR)) != 0;
}

exit_status child_process::reap() {
  exit_status status = reap_group(pid_);
  pid_ = -1;
  // The group is dead: keep what it wrote last, so read_line still returns buffered lines.
  close_fd(in_);
  read_available(out_, out_buf_);
  drain_stderr();
  close_fds();
  folder_.remove();
  last_ = status;
  return status;
}

} // namespace ks::gpu
