#pragma once

// Spawns child processes with pipes on stdin/stdout/stderr, in their own process group so
// that a kill reaches everything they started (nvcc's cicc and ptxas; a hung worker).

#include "engine/error.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ks::gpu {

/// How a finished child ended.
struct exit_status {
  int code = -1;            ///< exit code, or -1 when a signal ended it
  int signal = 0;           ///< terminating signal, or 0
  bool timed_out = false;   ///< true when we killed it at its deadline

  /// Returns "exit code 3", "signal 11 (Segmentation fault)", "timed out after ..." etc.
  std::string describe() const;
};

/// The outcome of run_to_completion.
struct run_result {
  exit_status status;
  std::string out;  ///< everything the child wrote to stdout
  std::string err;  ///< everything the child wrote to stderr
  double wall_ms = 0;
};

/// Runs `argv` (argv[0] is searched in PATH when it has no '/'), feeds it `input` on stdin,
/// collects stdout and stderr, and kills its process group at `timeout`. Fails only when
/// the process cannot be started at all.
engine::expected<run_result> run_to_completion(const std::vector<std::string>& argv,
                                               std::chrono::milliseconds timeout,
                                               const std::string& input = {});

/// A long-lived child spoken to in lines: the bench worker.
class child_process {
public:
  child_process() = default;
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  child_process(child_process&& other) noexcept;
  child_process& operator=(child_process&& other) noexcept;

  /// Kills the process group (SIGKILL) and reaps it, if still running.
  ~child_process();

  /// Starts `argv` with piped stdin/stdout/stderr in a new process group.
  static engine::expected<child_process> spawn(const std::vector<std::string>& argv);

  /// Writes `line` plus '\n' to the child's stdin. Fails if the child closed it.
  engine::expected<void> write_line(const std::string& line);

  /// Reads one line of stdout (without '\n'). Returns nullopt at end of file (the child
  /// closed stdout or died), errc::timeout at the deadline; keeps stderr drained meanwhile.
  engine::expected<std::optional<std::string>> read_line(std::chrono::milliseconds timeout);

  /// Returns the last bytes (at most 64 KiB) the child wrote to stderr so far.
  const std::string& stderr_tail() const noexcept { return err_; }

  /// Sends SIGKILL to the process group and reaps the child.
  exit_status kill();

  /// Waits up to `timeout` for the child to exit by itself; kills it after that.
  exit_status wait(std::chrono::milliseconds timeout);

  /// Checks whether the child was started and has not been reaped.
  bool running() const noexcept { return pid_ > 0; }

  /// Returns the child's pid, or -1.
  int pid() const noexcept { return pid_; }

private:
  void drain_stderr();
  void close_fds() noexcept;

  int pid_ = -1;
  int in_ = -1;   // our end of the child's stdin
  int out_ = -1;  // our end of the child's stdout
  int err_fd_ = -1;
  std::string out_buf_;
  std::string err_;
};

} // namespace ks::gpu
