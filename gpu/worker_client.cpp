// The client keeps at most one worker process alive and talks to it in request/response
// pairs. Every job follows the same path: make sure a worker is running (spawn it and wait
// for its hello line), send one request with a fresh id, then wait for exactly one reply
// line until the job's deadline. Whatever goes wrong on that path becomes a typed failure:
//
//   - the worker cannot be spawned                 -> crash ("cannot start the bench worker")
//   - no hello, or a hello of another protocol     -> protocol_error (or timeout / crash)
//   - no reply before the deadline                 -> timeout; the process group is killed
//   - end of file instead of a reply               -> crash, with how it ended and its stderr
//   - a reply that does not decode, or another id  -> protocol_error
//   - a reply with ok=false                        -> that reply's failure
//
// Faults of the host (host_fault.hpp): a worker that died by a signal its own code does not
// raise (SIGKILL, SIGTERM, ...; our own watchdog kill is a timeout, never seen as a death) is
// the host's as far as one more run on a fresh worker tells: the job runs again, and what that
// run says is the job's; a second such death is the candidate's crash. A start that fails for
// want of resources (a private folder that cannot be made, fork or pipe failing), and a device
// that answered before and then is gone, are host_fault.
//
// A reply that says "retire" (a vendor library came into the worker's process through a
// candidate, where a later candidate could reach it unseen) is answered as any other, and
// the worker is killed and reaped after it: the next job starts a fresh one.
//
// Invariant: after any failure that leaves the worker in an unknown state (kills_worker of
// its kind, or anything detected by the client itself) the process is killed and reaped
// before the failure is returned, so the next job starts from a fresh worker and a late
// reply of a killed job can never be read as the answer to the next one. The ids make the
// same guarantee on the wire.

#include "gpu/worker_client.hpp"

#include "gpu/host_fault.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <system_error>
#include <utility>

namespace ks::gpu {

namespace {

using clock_type = std::chrono::steady_clock;

// How long a worker that closed its stdout gets to finish exiting before we kill it.
constexpr std::chrono::milliseconds exit_grace{1000};

// Returns the last `max_lines` non-empty lines of `text`, each indented, or "" if none.
std::string last_lines(const std::string& text, int max_lines = 12) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos)
      lines.push_back(line);
  }
  if (lines.empty())
    return {};
  std::string out;
  size_t first = lines.size() > static_cast<size_t>(max_lines) ? lines.size() - max_lines : 0;
  for (size_t i = first; i < lines.size(); ++i)
    out += "\n  | " + lines[i];
  return out;
}

// Returns `line` cut to a length that fits in a message.
std::string excerpt(std::string_view line) {
  constexpr size_t max_chars = 200;
  if (line.size() <= max_chars)
    return std::string(line);
  return std::string(line.substr(0, max_chars)) + "... (" + std::to_string(line.size()) + " bytes)";
}

failure make_failure(failure_kind kind, std::string message) {
  failure f;
  f.kind = kind;
  f.message = std::move(message);
  return f;
}

// Returns the payload of type T of a successful response, or a protocol_error.
template <class T>
job_result<T> payload_of(response&& r, job_kind job) {
  if (auto* value = std::get_if<T>(&r.result))
    return std::move(*value);
  return tl::unexpected(make_failure(failure_kind::protocol_error,
                                     std::string("the bench worker answered the ") +
                                         to_string(job) + " job with a result of another type"));
}

bool is_executable_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

} // namespace

std::filesystem::path default_worker_executable() {
  constexpr const char* name = "ks-bench-worker";
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto beside = self.parent_path() / name;
    if (is_executable_file(beside))
      return beside;
  }
  if (const char* env = std::getenv("KS_WORKER"); env != nullptr && *env != '\0')
    return env;
  if (const char* path = std::getenv("PATH")) {
    std::string_view dirs(path);
    while (!dirs.empty()) {
      auto colon = dirs.find(':');
      auto dir = dirs.substr(0, colon);
      if (!dir.empty()) {
        auto candidate = std::filesystem::path(dir) / name;
        if (is_executable_file(candidate))
          return candidate;
      }
      if (colon == std::string_view::npos)
        break;
      dirs.remove_prefix(colon + 1);
    }
  }
  // Nothing found: name the place we looked first, so the failure message points there.
  return ec ? std::filesystem::path(name) : self.parent_path() / name;
}

worker_client::worker_client(worker_options options) : options_(std::move(options)) {}

failure worker_client::discard_worker(failure_kind kind, std::string message) {
  if (process_ && process_->running())
    process_->kill();
  process_.reset();
  return make_failure(kind, std::move(message));
}

tl::expected<void, failure> worker_client::ensure_started() {
  if (process_ && process_->running())
    return {};
  process_.reset();
  const auto& exe = options_.executable;
  const std::string cannot_start = "cannot start the bench worker '" + exe.string() + "': ";
  std::error_code ec;
  if (exe.empty())
    return tl::unexpected(make_failure(failure_kind::crash, cannot_start + "no executable given"));
  if (exe.has_parent_path()) {
    if (!std::filesystem::exists(exe, ec))
      return tl::unexpected(make_failure(
          failure_kind::crash,
          cannot_start + "no such file (build the ks-bench-worker target, or name the worker "
                         "with --worker or $KS_WORKER)"));
    if (!is_executable_file(exe))
      return tl::unexpected(
          make_failure(failure_kind::crash, cannot_start + "not an executable file"));
  }

  std::vector<std::string> argv{exe.string(), "--device", std::to_string(options_.device)};
  argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  auto started = clock_type::now();
  // A fresh private folder and scrubbed environment for every start (worker_sandbox.hpp).
  auto launch = prepare_worker_launch(std::move(argv), options_.boundary);
  // A private folder that cannot be made (a full or unwritable disk), or a fork or pipe that
  // fails, is the host's; a worker or sandbox that is missing is the setup's.
  if (!launch)
    return tl::unexpected(make_failure(
        launch.error().code() == engine::errc::io ? failure_kind::host_fault : failure_kind::crash,
        cannot_start + launch.error().message()));
  auto spawned = child_process::spawn(launch->argv, std::move(launch->spawn));
  if (!spawned)
    return tl::unexpected(make_failure(spawned.error().code() == engine::errc::subprocess
                                           ? failure_kind::host_fault
                                           : failure_kind::crash,
                                       cannot_start + spawned.error().message()));
  ++starts_;
  process_.emplace(std::move(*spawned));
  tensor_jobs_ = 0;

  const std::string who =
      "the bench worker '" + exe.string() + "' (device " + std::to_string(options_.device) + ")";
  auto line = process_->read_line(options_.start_timeout);
  if (!line) {
    if (line.error().code() == engine::errc::timeout)
      return tl::unexpected(discard_worker(
          failure_kind::timeout, who + " did not say hello within " +
                                     std::to_string(options_.start_timeout.count()) +
                                     " ms; it was killed" + last_lines(process_->stderr_tail())));
    return tl::unexpected(discard_worker(failure_kind::crash, who + ": " + line.error().message()));
  }
  if (!*line) {
    // It exited before saying anything: report how, and what it wrote to stderr.
    exit_status status = process_->wait(exit_grace);
    std::string words = last_lines(process_->stderr_tail());
    process_.reset();
    // A worker that finds no device may say so by its exit code alone.
    if (status.code == exit_code_for(failure_kind::no_device))
      return tl::unexpected(
          make_failure(failure_kind::no_device, "no CUDA device: " + who + " found none" + words));
    return tl::unexpected(make_failure(failure_kind::crash, who + " exited before its hello (" +
                                                                status.describe() + ")" + words));
  }
  auto greeting = decode_hello(**line);
  if (!greeting)
    return tl::unexpected(discard_worker(failure_kind::protocol_error,
                                         who + " sent a bad hello: " + greeting.error().message() +
                                             "; the line was: " + excerpt(**line)));
  last_start_ms_ = std::chrono::duration<double, std::milli>(clock_type::now() - started).count();
  return {};
}

job_result<response> worker_client::run(request req, std::chrono::milliseconds timeout) {
  const bool tensor_job =
      req.job == job_kind::verify || req.job == job_kind::time || req.job == job_kind::profile;
  const bool served_before = process_ && process_->running() && tensor_jobs_ > 0;
  job_result<response> result = run_once(req, timeout);
  if (tensor_job && process_)
    ++tensor_jobs_;
  // Killed from outside, or so it seems: a fresh worker runs the job again and its answer is
  // the job's. A candidate that kills its worker so twice is charged with the crash.
  if (!result && killed_from_outside_) {
    std::string first = result.error().message;
    last_kill_ = first;
    ++kill_retries_;
    result = run_once(req, timeout);
    if (process_)
      tensor_jobs_ = tensor_job ? 1 : 0;
    if (!result && killed_from_outside_)
      result.error().message += "; it died so the first time too (" + first +
                                "): a job whose worker dies twice is charged with the crash";
    if (result)
      device_answered_ = true;
    return std::move(result).map_error([this](failure f) { return as_host_fault(std::move(f)); });
  }
  if (result)
    device_answered_ = true;
  if (result || !tensor_job || !served_before || result.error().kind != failure_kind::out_of_memory)
    return std::move(result).map_error([this](failure f) { return as_host_fault(std::move(f)); });
  discard_worker(failure_kind::out_of_memory, {});
  ++memory_retries_;
  result = run_once(std::move(req), timeout);
  if (process_)
    tensor_jobs_ = 1;
  return std::move(result).map_error([this](failure f) { return as_host_fault(std::move(f)); });
}

failure worker_client::as_host_fault(failure f) {
  const std::string gpu = "GPU " + std::to_string(options_.device);
  device_lost_ = false;
  if (f.kind == failure_kind::no_device && device_answered_) {
    f.kind = failure_kind::host_fault;
    f.message = gpu + " answered earlier jobs and is gone now: " + f.message;
    device_lost_ = true;
  } else if (device_lost_error(f.cuda_error)) {
    f.kind = failure_kind::host_fault;
    f.message = gpu + " is unavailable (" + f.cuda_error + "): " + f.message;
    device_lost_ = true;
  }
  // A worker on a lost device is of no more use: the next job starts a fresh one.
  if (f.kind == failure_kind::host_fault)
    discard_worker(f.kind, {});
  return f;
}

job_result<response> worker_client::run_once(request req, std::chrono::milliseconds timeout) {
  killed_from_outside_ = false;
  if (auto ok = ensure_started(); !ok)
    return tl::unexpected(std::move(ok.error()));
  req.id = next_id_++;
  const std::string job = to_string(req.job);
  const std::string who = "the bench worker (device " + std::to_string(options_.device) + ", pid " +
                          std::to_string(process_->pid()) + ")";

  // A worker that died between jobs cannot take the request: report its death, not EPIPE.
  auto died = [&](const std::string& when) {
    exit_status status = process_->wait(exit_grace);
    // bubblewrap exits 128 + N when its child is killed by signal N: say which signal.
    if (options_.boundary.sandbox == sandbox_mode::bubblewrap && status.signal == 0 &&
        status.code > 128 && status.code < 128 + 65) {
      status.signal = status.code - 128;
      status.code = -1;
    }
    std::string words = last_lines(process_->stderr_tail());
    process_.reset();
    killed_from_outside_ = outside_signal(status.signal);
    std::string text = who + " died " + when + " (" + status.describe() + ")";
    if (!words.empty())
      text += "; its last words on stderr:" + words;
    return make_failure(failure_kind::crash, std::move(text));
  };

  if (auto sent = process_->write_line(encode(req)); !sent)
    return tl::unexpected(died("before it could take the " + job + " job"));

  auto line = process_->read_line(timeout);
  if (!line) {
    if (line.error().code() == engine::errc::timeout)
      return tl::unexpected(
          discard_worker(failure_kind::timeout, "the " + job + " job gave no answer after " +
                                                    std::to_string(timeout.count()) +
                                                    " ms; the worker was killed"));
    return tl::unexpected(
        discard_worker(failure_kind::crash, who + " could not be read: " + line.error().message()));
  }
  if (!*line)
    return tl::unexpected(died("during the " + job + " job"));

  auto decoded = decode_response(**line, req.job);
  if (!decoded)
    return tl::unexpected(
        discard_worker(failure_kind::protocol_error, who + " sent a malformed reply to the " + job +
                                                         " job: " + decoded.error().message() +
                                                         "; the line was: " + excerpt(**line)));
  response& r = *decoded;
  if (r.id != req.id)
    return tl::unexpected(discard_worker(failure_kind::protocol_error,
                                         who + " answered request " + std::to_string(r.id) +
                                             " while request " + std::to_string(req.id) + " (the " +
                                             job + " job) was waiting"));
  if (!r.ok) {
    failure f = r.fail ? std::move(*r.fail)
                       : make_failure(failure_kind::protocol_error,
                                      who + " reported a failure of the " + job +
                                          " job without "
                                          "saying which");
    if (kills_worker(f.kind) || !r.fail || r.retire) {
      // It may still be exiting by itself (a sticky error); either way it is not reused.
      discard_worker(f.kind, {});
    }
    return tl::unexpected(std::move(f));
  }
  if (r.retire)
    discard_worker(failure_kind::crash, {});
  return std::move(r);
}

job_result<device_info> worker_client::info() {
  request req;
  req.job = job_kind::info;
  return run(std::move(req), options_.info_timeout).and_then([](response&& r) {
    return payload_of<device_info>(std::move(r), job_kind::info);
  });
}

job_result<calibration> worker_client::calibrate() {
  request req;
  req.job = job_kind::calibrate;
  return run(std::move(req), options_.calibrate_timeout).and_then([](response&& r) {
    return payload_of<calibration>(std::move(r), job_kind::calibrate);
  });
}

job_result<probe_result> worker_client::probe(const probe_options& opt) {
  request req;
  req.job = job_kind::probe;
  req.probe = opt;
  return run(std::move(req), options_.info_timeout).and_then([](response&& r) {
    return payload_of<probe_result>(std::move(r), job_kind::probe);
  });
}

job_result<verify_result> worker_client::verify(const engine::task& t, const std::string& reference,
                                                const std::string& candidate,
                                                const verify_options& opt) {
  request req;
  req.job = job_kind::verify;
  req.task = t;
  req.reference = reference;
  req.candidate = candidate;
  req.verify = opt;
  req.vendor_libraries = options_.vendor_libraries;
  return run(std::move(req), options_.verify_timeout).and_then([](response&& r) {
    return payload_of<verify_result>(std::move(r), job_kind::verify);
  });
}

job_result<timing_result> worker_client::time(const engine::task& t, const std::string& kernel,
                                              const std::string& reference,
                                              const timing_options& opt) {
  request req;
  req.job = job_kind::time;
  req.task = t;
  req.kernel = kernel;
  req.reference = reference;
  req.timing = opt;
  req.vendor_libraries = options_.vendor_libraries;
  return run(std::move(req), options_.time_timeout).and_then([](response&& r) {
    return payload_of<timing_result>(std::move(r), job_kind::time);
  });
}

job_result<engine::profile> worker_client::profile(const engine::task& t, const std::string& kernel,
                                                   const profile_options& opt, uint64_t seed) {
  request req;
  req.job = job_kind::profile;
  req.task = t;
  req.kernel = kernel;
  req.profile = opt;
  req.verify.seed = seed;
  req.vendor_libraries = options_.vendor_libraries;
  return run(std::move(req), options_.profile_timeout).and_then([](response&& r) {
    return payload_of<engine::profile>(std::move(r), job_kind::profile);
  });
}

void worker_client::shutdown() {
  if (!process_ || !process_->running()) {
    process_.reset();
    return;
  }
  request req;
  req.id = next_id_++;
  req.job = job_kind::shutdown;
  // Whether or not it takes the request, it gets a moment to exit and is killed after that.
  (void)process_->write_line(encode(req));
  process_->wait(std::chrono::milliseconds(2000));
  process_.reset();
}

} // namespace ks::gpu
