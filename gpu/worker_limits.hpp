#pragma once

// The resource limits the bench worker puts on itself at startup, before it says hello and
// so before any candidate is loaded. They are set by the worker, not by the engine between
// fork and exec, because in a sandbox the engine's child is bubblewrap, not the worker. Each
// limit is lowered on both its soft and hard value, so a candidate cannot raise it again
// (unless it runs as root, which may raise hard limits).
//
//   RLIMIT_CORE   0: a crashing candidate leaves no core file (its memory holds the task's
//                 data and whatever the process could read) and costs no time dumping one.
//   RLIMIT_FSIZE  4 GiB: no file the worker or a candidate writes grows past it (the write
//                 fails with EFBIG after SIGXFSZ, which kills the worker: a crash). The
//                 worker itself writes no files; 4 GiB leaves room for a candidate's
//                 legitimate scratch file and stops one that fills the disk in one file. It
//                 bounds one file, not the total.
//   RLIMIT_NPROC  the processes and threads our user runs now plus 4096: stops a fork bomb
//                 in a candidate while leaving the CUDA runtime and other programs of the
//                 user (the compile pool's nvcc) room to start threads. The kernel counts
//                 every task of the user, not just the worker's, hence the headroom. The
//                 kernel ignores this limit for root (uid 0) and for processes holding
//                 CAP_SYS_RESOURCE or CAP_SYS_ADMIN.

#include "engine/error.hpp"

#include <cstdint>
#include <string>

namespace ks::gpu {

/// The limits apply_worker_limits sets.
struct worker_limits {
  int64_t max_file_bytes = int64_t{4} << 30; ///< RLIMIT_FSIZE
  int64_t process_headroom = 4096;           ///< RLIMIT_NPROC: tasks of our user now plus this
};

/// Sets RLIMIT_CORE to 0 and RLIMIT_FSIZE and RLIMIT_NPROC as `limits` says, soft and hard,
/// never raising one that is already lower. Fails (errc::subprocess, naming the limit) only
/// when setrlimit refuses, which lowering never should.
[[nodiscard]] engine::expected<void> apply_worker_limits(const worker_limits& limits = {});

/// Returns how many tasks (processes and threads) the user `uid` runs now, from /proc.
int64_t count_user_tasks(uint32_t uid);

} // namespace ks::gpu
