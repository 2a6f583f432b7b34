// ks-bench-worker: the only process that loads candidate code and touches a GPU.
//
// It speaks the worker protocol (gpu/worker_protocol.hpp) on stdin/stdout, one job at a
// time, for one device. Candidates are untrusted: they may print, crash, hang or corrupt the
// CUDA context. So the protocol gets a private copy of stdout and fd 1 is pointed at stderr
// before any candidate is loaded (a printf in a kernel's host code cannot break a reply);
// a crash or hang is the engine's client's to detect (EOF, watchdog); and after a sticky
// CUDA error the worker answers the job and exits, because nothing after it can be trusted.
// Before its hello (and so before any candidate) it lowers its own resource limits: no core
// dumps, no huge file, no fork bomb (gpu/worker_limits.hpp); the engine gave it a scrubbed
// environment and a private folder, and maybe a sandbox around it (gpu/worker_sandbox.hpp).

#include "gpu/worker/bench_session.hpp"
#include "gpu/worker_limits.hpp"
#include "gpu/worker_protocol.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace {

constexpr const char* usage = R"(usage: ks-bench-worker [--device N]

The kernelskill bench worker: runs verification and timing jobs for one GPU, speaking
versioned JSON lines (protocol 1) on stdin and stdout. It is started by kernelskill; run by
hand only to debug: type {"v":1,"id":1,"job":"info"} and read the reply.
)";

FILE* protocol_out = nullptr;

void send_line(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), protocol_out);
  std::fputc('\n', protocol_out);
  std::fflush(protocol_out);
}

} // namespace

int main(int argc, char** argv) {
  int device = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      char* end = nullptr;
      long value = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || value < 0) {
        std::fprintf(stderr, "ks-bench-worker: --device needs a device index, got '%s'\n", argv[i]);
        return 2;
      }
      device = static_cast<int>(value);
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "ks-bench-worker: unknown argument '%s'\n%s", arg.c_str(), usage);
      return 2;
    }
  }

  // A limit that cannot be set is said on stderr, not fatal: lowering a limit never fails.
  if (auto limited = ks::gpu::apply_worker_limits(); !limited)
    std::fprintf(stderr, "ks-bench-worker: %s\n", limited.error().message().c_str());

  int protocol_fd = dup(STDOUT_FILENO);
  if (protocol_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::perror("ks-bench-worker: cannot set up the protocol channel");
    return 3;
  }
  protocol_out = fdopen(protocol_fd, "w");
  if (!protocol_out) {
    std::perror("ks-bench-worker: fdopen");
    return 3;
  }

  send_line(ks::gpu::encode(ks::gpu::hello{static_cast<int64_t>(getpid()), device}));

  ks::gpu::worker::bench_session session(device);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty())
      continue;
    auto req = ks::gpu::decode_request(line);
    if (!req) {
      ks::gpu::response resp;
      resp.ok = false;
      resp.fail = ks::gpu::failure{
          ks::gpu::failure_kind::protocol_error, req.error().message(), {}, {}, {}};
      send_line(ks::gpu::encode(resp));
      continue;
    }
    auto resp = session.handle(*req);
    send_line(ks::gpu::encode(resp));
    if (req->job == ks::gpu::job_kind::shutdown)
      return 0;
    if (session.must_exit()) {
      std::fprintf(stderr, "ks-bench-worker: exiting after a sticky CUDA error\n");
      // _exit: the CUDA context is broken, and its teardown in atexit handlers can hang.
      _exit(4);
    }
  }
  return 0;
}
