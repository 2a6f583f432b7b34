#pragma once

// One GPU's bench session inside the worker process: it owns the device, the worker's
// stream, the task's tensors and the loaded shared objects, and answers one request at a
// time. It never throws; every failure comes back as a typed response.

#include "gpu/worker_protocol.hpp"

#include <memory>

namespace ks::gpu::worker {

class bench_session {
public:
  /// Prepares a session for CUDA device `device`; touches no CUDA state yet.
  explicit bench_session(int32_t device);
  ~bench_session();
  bench_session(const bench_session&) = delete;
  bench_session& operator=(const bench_session&) = delete;

  /// Runs `req` and returns its response (same id).
  response handle(const request& req);

  /// Checks whether a sticky CUDA error left the context unusable: the process must exit.
  bool must_exit() const noexcept;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ks::gpu::worker
