#pragma once

// Spawns child processes with pipes on stdin/stdout/stderr, in their own process group so
// that a kill reaches everything they started (nvcc's cicc and ptxas; a hung worker).

#include "engine/error.hpp"
#include "gpu/private_folder.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks::gpu {

/// How a finished child ended.
struct exit_status {
  int code = -1;          ///< exit code, or -1 when a signal ended it
  int signal = 0;         ///< terminating signal, or 0
  bool timed_out = false; ///< true when we killed it at its deadline
  int64_t timeout_ms = 0; ///< the deadline it ran past, when timed_out

  /// Returns "exit code 3", "killed by signal 11 (SIGSEGV)" or "timed out after 1500 ms".
  std::string describe() const;

  /// Checks whether the child exited by itself with code 0.
  bool success() const noexcept { return code == 0 && signal == 0 && !timed_out; }
};

/// The outcome of run_to_completion.
struct run_result {
  exit_status status;
  std::string out; ///< everything the child wrote to stdout
  std::string err; ///< everything the child wrote to stderr
  double wall_ms = 0;
};

/// How to start a child, besides its command line.
struct spawn_options {
  /// The child's whole environment, "NAME=value" entries; nullopt: a copy of ours.
  std::optional<std::vector<std::string>> env;
  /// The child's working directory; empty: ours.
  std::filesystem::path cwd;
  /// A folder of the child's own (its cwd, say): removed once the child is reaped, or at
  /// once when it cannot be started.
  private_folder folder;
};

/// Runs `argv` (argv[0] is searched in PATH when it has no '/'), feeds it `input` on stdin,
/// collects stdout and stderr, and kills its process group at `timeout`. Fails only when
/// the process cannot be started at all.
[[nodiscard]] engine::expected<run_result> run_to_completion(const std::vector<std::string>& argv,
                                                             std::chrono::milliseconds timeout,
                                                             const std::string& input = {});

/// Runs like the overload above, with `cwd` as the child's working directory (nvcc then
/// names its input by the relative path it was given, whatever folder it ran in).
[[nodiscard]] engine::expected<run_result> run_to_completion(const std::vector<std::string>& argv,
                                                             std::chrono::milliseconds timeout,
                                                             const std::string& input,
                                                             const std::filesystem::path& cwd);

/// Runs like the overloads above, started as `options` says; its folder is removed before
/// this returns.
[[nodiscard]] engine::expected<run_result> run_to_completion(const std::vector<std::string>& argv,
                                                             std::chrono::milliseconds timeout,
                                                             const std::string& input,
                                                             spawn_options options);

/// A long-lived child spoken to in lines: the bench worker. Not thread-safe: one owner
/// thread calls all members.
class child_process {
public:
  child_process() = default;
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  child_process(child_process&& other) noexcept;
  child_process& operator=(child_process&& other) noexcept;

  /// Kills the process group (SIGKILL) and reaps it, if still running; removes the child's
  /// folder.
  ~child_process();

  /// Starts `argv` with piped stdin/stdout/stderr in a new process group.
  [[nodiscard]] static engine::expected<child_process> spawn(const std::vector<std::string>& argv);

  /// Starts `argv` like the overload above, as `options` says; the child owns
  /// `options.folder` from now on.
  [[nodiscard]] static engine::expected<child_process> spawn(const std::vector<std::string>& argv,
                                                             spawn_options options);

  /// Writes `line` plus '\n' to the child's stdin, waiting at most 30 s for room in the
  /// pipe. Fails (errc::subprocess) if the child closed its stdin.
  [[nodiscard]] engine::expected<void> write_line(const std::string& line);

  /// Writes `line` plus '\n' to the child's stdin; errc::timeout when the child has not
  /// taken it within `timeout`. Buffers stdout and drains stderr while it waits, so a child
  /// that writes before it reads never deadlocks with us.
  [[nodiscard]] engine::expected<void> write_line(const std::string& line,
                                                  std::chrono::milliseconds timeout);

  /// Closes our end of the child's stdin, so that the child reads end of file.
  void close_stdin() noexcept;

  /// Reads one line of stdout (without '\n'). Returns nullopt at end of file (the child
  /// closed stdout or died), errc::timeout at the deadline; keeps stderr drained meanwhile.
  [[nodiscard]] engine::expected<std::optional<std::string>>
  read_line(std::chrono::milliseconds timeout);

  /// Returns the last bytes (at most 64 KiB) the child wrote to stderr so far.
  const std::string& stderr_tail() const noexcept { return err_; }

  /// Sends SIGKILL to the process group, reaps the child and removes its folder; returns how
  /// it ended (its own exit status if it had already exited). Returns the first status again
  /// when called twice.
  exit_status kill();

  /// Waits up to `timeout` for the child to exit by itself; kills it after that. Either way
  /// the child is reaped and its folder removed.
  exit_status wait(std::chrono::milliseconds timeout);

  /// Checks whether the child was started and has not been reaped.
  bool running() const noexcept { return pid_ > 0; }

  /// Returns the child's pid, or -1.
  int pid() const noexcept { return pid_; }

  /// Returns the child's own folder, or an empty path when it has none (any more).
  const std::filesystem::path& folder() const noexcept { return folder_.path(); }

private:
  void drain_stderr();
  void close_fds() noexcept;
  bool pump(int timeout_ms, bool want_write);
  exit_status reap();

  int pid_ = -1;
  int in_ = -1;  // our end of the child's stdin
  int out_ = -1; // our end of the child's stdout
  int err_fd_ = -1;
  std::string out_buf_;
  std::string err_;
  exit_status last_;      // how the child ended, once reaped
  private_folder folder_; // removed right after the reap, when the process group is dead
};

} // namespace ks::gpu
