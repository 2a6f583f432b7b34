// ks-scripted-worker: a test double of ks-bench-worker that follows a script instead of
// touching a GPU, so that worker_client's handling of every failure can be tested anywhere.
//
// Usage: ks-scripted-worker --device N [--script SCRIPT] [--state PATH]
//
// The script comes from --script, else $KS_SCRIPT; "@PATH" reads it from a file. It is a
// list of actions separated by ';' or newlines. Each request (except shutdown) consumes the
// next action; a start consumes one too if the next action is a hello-* action. Past the
// end of the script every request is answered "ok". When --state or $KS_SCRIPT_STATE names
// a file, the position in the script is kept there, so that a worker started after a crash
// carries on with the next action instead of starting over.
//
//   ok            reply ok with a well-formed result of the job's type
//   ok:MS         as ok; a time job reports a median of MS milliseconds
//   slow:MS       sleep MS milliseconds, then as ok
//   crash         write to stderr, then raise SIGSEGV mid-job
//   killed        write to stderr, then raise SIGKILL mid-job: to the client, a worker killed
//                 from outside (another process, the OOM killer)
//   lost          reply failure cuda_error cudaErrorDevicesUnavailable (the GPU is gone)
//   hang          never answer
//   garbage       answer with a line that is not JSON (then carry on)
//   cut           write half of a reply, no newline, then exit 0
//   sticky        reply failure illegal_address, then exit 0 (as a sticky CUDA error does)
//   wrongid       reply ok with an id that is not the request's
//   version       reply ok with protocol version 99
//   exit:N        exit with code N without answering
//   fail:KIND     reply failure KIND (wrong_result carries verify details, launch_error a
//                 return code)
//   vendor        answer as the real worker does for a candidate that loaded cuBLAS: failure
//                 vendor_library naming it where the request refuses vendor libraries, else
//                 ok with the library in the verify or time result; either way the reply
//                 asks the client to retire the worker
//   hello-version (start) say hello with protocol version 99
//   hello-garbage (start) say something that is not a hello
//   hello-none    (start) never say hello
//   hello-exit    (start) write to stderr and exit 3 before the hello
//
// Campaign mode ($KS_SCRIPTED_MODE=campaign) answers like a plausible GPU instead, so that
// whole campaigns run through the real actors on a machine without one; --script is then
// ignored and faults are injected by rule:
//
//   $KS_SCRIPTED_DEVICES=N     the devices the "driver" reports (default 1); a worker whose
//                              --device is not below N fails every job with no_device, as
//                              the real worker does (0: no device at all)
//   $KS_SCRIPTED_JOB_MS=MS     each verify and time job takes this long (default 0)
//   $KS_SCRIPTED_BASE_MS=MS    the time of a kernel at its optimum (default 1.0)
//   $KS_SCRIPTED_STATE_DIR=DIR where the job counters live, shared (under flock) by every
//                              worker of the campaign and kept across worker restarts;
//                              unset: each process counts from 1 on its own
//   $KS_SCRIPTED_LOG=PATH      appends one line per job: JOB DEVICE KERNEL, KERNEL being
//                              the shared object verified, timed or profiled ("-" for
//                              other jobs)
//   $KS_SCRIPTED_FAULTS=RULES  RULE (';' RULE)*, RULE := WHEN '->' ACTION, where
//                              WHEN := JOB '#' N        the Nth job of that kind (1-based,
//                                                       counted over every worker)
//                                    | JOB '@' NAME '=' VALUE  every job of that kind on a
//                                                       kernel whose macro NAME is VALUE
//                              JOB := info | calibrate | verify | time | profile | probe
//                                     | any;
//                              ACTION is one
//                              of the script's actions above (crash, hang, fail:KIND, ...).
//                              Example: "verify#3->crash; time@KS_BLOCK_THREADS=1024->hang"
//   $KS_SCRIPTED_NOISY=D:F:N[-M]  GPU D turns noisy: its stability probes N to M (1-based,
//                              counted per device over every worker; no M: every one from N
//                              on) take F times the quiet probe's time (F = "split": their
//                              samples split, p90 1.5x their p10), and its time jobs while
//                              the noise is on (from after probe N - 1 to probe M) report F
//                              times their median (a split adds 30%)
//   $KS_SCRIPTED_ALIVE_DIR=DIR a worker (in either mode) creates DIR/<its pid> at start and
//                              holds an flock on it until it ends, however it ends: a test
//                              waits for a killed campaign's workers to be gone by taking
//                              those locks (tests/actors/campaign_test.cpp)
//
// A kernel's macros are read from kernel.cu beside its shared object (the compile cache keeps
// the source there): `// ks-flags: -DNAME=VALUE` first, then the first `#define KS_...` of
// each name, which wins over the reference's `#ifndef` default that follows it. A time job
// reports a median of BASE_MS * (1 + 0.2 * |log2(KS_BLOCK_THREADS / 128)|) (block 128 is
// the optimum; $KS_SCRIPTED_BEST_BLOCK moves it; no KS_BLOCK_THREADS counts as 256), times
// 1 + (0 .. 0.1) for every other KS_ macro, derived from its name and value: deterministic,
// so that a search over these macros finds the same optimum every run. Its trials scatter by
// +-1% around it, deterministically per kernel and trial, so the judge sees a spread.

#include "base/text.hpp"
#include "gpu/worker_protocol.hpp"

#include <boost/json.hpp>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace ks::gpu;
using namespace ks;

std::vector<std::string> split_script(const std::string& text) {
  std::vector<std::string> actions;
  std::string current;
  auto flush = [&] {
    auto first = current.find_first_not_of(" \t\r");
    auto last = current.find_last_not_of(" \t\r");
    if (first != std::string::npos)
      actions.push_back(current.substr(first, last - first + 1));
    current.clear();
  };
  for (char c : text) {
    if (c == ';' || c == '\n')
      flush();
    else
      current += c;
  }
  flush();
  return actions;
}

std::string load_script(const std::string& given) {
  if (!given.empty() && given.front() == '@') {
    return base::read_text(given.substr(1)).value_or("");
  }
  return given;
}

/// Keeps the position in the script, in a state file if one is named.
class cursor {
public:
  explicit cursor(std::string state_path) : path_(std::move(state_path)) {}

  /// Returns the current position without moving.
  size_t peek() const {
    if (path_.empty())
      return position_;
    std::ifstream in(path_);
    size_t at = 0;
    if (in >> at)
      return at;
    return 0;
  }

  /// Moves one action on.
  void advance() {
    size_t next = peek() + 1;
    if (path_.empty()) {
      position_ = next;
      return;
    }
    std::ofstream(path_, std::ios::trunc) << next << '\n';
  }

private:
  std::string path_;
  size_t position_ = 0;
};

void write_line(const std::string& line) {
  std::cout << line << '\n' << std::flush;
}

[[noreturn]] void hang() {
  for (;;)
    std::this_thread::sleep_for(std::chrono::hours(1));
}

// Returns the number after "name:" in `action`, or `fallback`.
double argument_of(const std::string& action, double fallback) {
  auto colon = action.find(':');
  if (colon == std::string::npos)
    return fallback;
  return std::strtod(action.c_str() + colon + 1, nullptr);
}

// A profile of one kernel that moves the task's bytes at 72% of the DRAM peak: DRAM-bound by
// its counters, so that a campaign's diagnoses come from counters as on a real GPU.
engine::profile canned_profile(const request& req, double median_ms) {
  engine::profile p;
  engine::kernel_profile k;
  k.name = "scripted_kernel(float const*, float*, long)";
  k.launches = 1;
  k.duration_ms = median_ms;
  k.grid = {528, 1, 1};
  k.block = {256, 1, 1};
  k.registers = 32;
  double bytes = req.task ? req.task->cost.bytes : 0;
  k.metrics = {{"dram__bytes_read.sum", bytes / 2},
               {"dram__bytes_write.sum", bytes / 2},
               {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 72},
               {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 45},
               {"l1tex__throughput.avg.pct_of_peak_sustained_active", 20},
               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 15},
               {"sm__warps_active.avg.pct_of_peak_sustained_active", 80}};
  p.metrics = k.metrics;
  p.kernels.push_back(std::move(k));
  p.launches = 1;
  p.kernel_ms = median_ms;
  p.span_ms = median_ms;
  p.counters = true;
  p.range = "per_kernel";
  p.replay = "user";
  p.passes = 3;
  p.device.sms = 132;
  p.profile_ms = 1;
  return p;
}

result_payload canned_result(const request& req, int32_t device, double median_ms) {
  switch (req.job) {
  case job_kind::info: {
    device_info d;
    d.index = device;
    d.device_count = 1;
    d.name = "Scripted GPU";
    d.uuid = "GPU-5c819ted-0000-0000-0000-00000000000" + std::to_string(device % 10);
    d.arch = "sm_90a";
    d.cc_major = 9;
    d.cc_minor = 0;
    d.sms = 132;
    d.memory_bytes = 80LL << 30;
    d.l2_bytes = 50LL << 20;
    d.smem_per_block_optin = 227LL << 10;
    d.sm_clock_khz = 1980000;
    d.mem_clock_khz = 2619000;
    d.mem_bus_bits = 5120;
    d.driver_version = 13000;
    d.runtime_version = 13000;
    return d;
  }
  case job_kind::calibrate: {
    calibration c;
    c.dram_gbps = 3000;
    c.fp32_gflops = 60000;
    c.copy_bytes = 1LL << 30;
    c.copy_ms = 0.7;
    c.fma_ms = 1.0;
    return c;
  }
  case job_kind::verify: {
    verify_result v;
    v.passed = true;
    v.trials = req.verify.trials;
    v.max_abs_err = 1e-7;
    v.max_rel_err = 2e-7;
    v.norm_rel_err = 1e-7;
    return v;
  }
  case job_kind::time: {
    timing_result t;
    t.median_ms = median_ms;
    t.p10_ms = median_ms * 0.98;
    t.p90_ms = median_ms * 1.03;
    t.min_ms = median_ms * 0.97;
    t.mean_ms = median_ms * 1.01;
    t.trials = req.timing.min_trials;
    t.host_ms_per_call = median_ms * 1.05;
    t.batch = req.timing.host_check_batch;
    return t;
  }
  case job_kind::profile:
    return canned_profile(req, median_ms);
  case job_kind::probe: {
    probe_result p;
    p.bytes = req.probe.bytes > 0 ? req.probe.bytes : 200LL << 20;
    p.samples = req.probe.samples;
    p.median_ms = median_ms;
    p.p10_ms = median_ms * 0.995;
    p.p90_ms = median_ms * 1.005;
    p.min_ms = median_ms * 0.99;
    p.max_ms = median_ms * 1.01;
    return p;
  }
  case job_kind::shutdown:
    break;
  }
  return std::monostate{};
}

failure canned_failure(const std::string& kind_name) {
  failure f;
  f.kind = parse_failure_kind(kind_name).value_or(failure_kind::crash);
  f.message = "scripted " + kind_name;
  switch (f.kind) {
  case failure_kind::launch_error:
    f.return_code = 7;
    f.message = "ks_forward returned 7";
    break;
  case failure_kind::illegal_address:
    f.cuda_error = "cudaErrorIllegalAddress";
    f.message = "an illegal memory access was encountered";
    break;
  case failure_kind::wrong_result: {
    verify_result v;
    v.passed = false;
    v.trials = 1;
    v.bad_trial = 0;
    v.bad_output = "y";
    v.first_bad_index = 4242;
    v.bad_count = 17;
    v.nan_count = 3;
    v.expected = 1.5;
    v.actual = -0.25;
    v.max_abs_err = 1.75;
    v.max_rel_err = 1.1666;
    v.norm_rel_err = 0.03;
    f.verify = v;
    f.message = "output y differs from the reference";
    break;
  }
  case failure_kind::no_device:
    f.message = "no CUDA device: cudaGetDeviceCount says no CUDA-capable device is detected";
    break;
  case failure_kind::vendor_library:
    f.message = "the candidate 'kernel.so' uses a vendor library: cublas "
                "(/usr/local/cuda/lib64/libcublas.so.13), which it loaded during a call of its "
                "ks_forward; only kernels of its own count";
    break;
  default:
    break;
  }
  return f;
}

// -- campaign mode ---------------------------------------------------------------------------

double env_number(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0')
    return fallback;
  return std::strtod(text, nullptr);
}

std::string env_text(const char* name) {
  const char* text = std::getenv(name);
  return text != nullptr ? text : "";
}

// Returns a 64-bit hash of `text`: FNV-1a, then splitmix64's finalizer so that texts that
// differ only in their last characters still land far apart.
uint64_t hash_of(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

// Returns a number in [0, 1) drawn from `text`, always the same for the same text.
double unit_of(const std::string& text) {
  return static_cast<double>(hash_of(text) >> 11) * (1.0 / 9007199254740992.0);
}

// Returns the source of the kernel whose shared object is `so` (kernel.cu beside it).
std::string kernel_source(const std::string& so) {
  if (so.empty())
    return {};
  return base::read_text(std::filesystem::path(so).parent_path() / "kernel.cu").value_or("");
}

// Returns the KS_ macros `source` sets: `// ks-flags: -DNAME=VALUE` first, then the first
// `#define NAME VALUE` of each name (a define placed before the reference's `#ifndef`
// default is the one the compiler keeps).
std::map<std::string, std::string> kernel_macros(const std::string& source) {
  std::map<std::string, std::string> macros;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    auto flags = line.find("ks-flags:");
    if (line.find("//") != std::string::npos && flags != std::string::npos) {
      std::istringstream tokens(line.substr(flags + 9));
      for (std::string token; tokens >> token;) {
        if (token.rfind("-DKS_", 0) != 0)
          continue;
        auto equals = token.find('=');
        std::string name =
            token.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
        macros.emplace(name, equals == std::string::npos ? "1" : token.substr(equals + 1));
      }
    }
  }
  lines.clear();
  lines.seekg(0);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream tokens(line);
    std::string directive, name, value;
    if (!(tokens >> directive) || directive != "#define" || !(tokens >> name) ||
        name.rfind("KS_", 0) != 0)
      continue;
    tokens >> value;
    macros.emplace(name, value.empty() ? "1" : value);
  }
  return macros;
}

// Returns the true time of a kernel with `macros` (see the top of the file).
double model_ms(const std::map<std::string, std::string>& macros) {
  double base = env_number("KS_SCRIPTED_BASE_MS", 1.0);
  double best_block = env_number("KS_SCRIPTED_BEST_BLOCK", 128);
  double block = 256;
  if (auto it = macros.find("KS_BLOCK_THREADS"); it != macros.end()) {
    double given = std::strtod(it->second.c_str(), nullptr);
    if (given > 0)
      block = given;
  }
  double ms = base * (1 + 0.2 * std::fabs(std::log2(block / best_block)));
  for (const auto& [name, value] : macros)
    if (name != "KS_BLOCK_THREADS")
      ms *= 1 + 0.1 * unit_of(name + "=" + value);
  return ms;
}

double quantile_of(const std::vector<double>& sorted, double q) {
  double at = q * static_cast<double>(sorted.size() - 1);
  auto low = static_cast<size_t>(std::floor(at));
  size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (at - static_cast<double>(low));
}

void simulate_work() {
  double ms = env_number("KS_SCRIPTED_JOB_MS", 0);
  if (ms > 0)
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

timing_result plausible_timing(const request& req) {
  std::string source = kernel_source(req.kernel);
  std::string identity = source.empty() ? req.kernel : source;
  double true_ms = model_ms(kernel_macros(source));
  int32_t trials = std::max<int32_t>(req.timing.min_trials, 1);
  std::vector<double> samples;
  double sum = 0;
  for (int32_t i = 0; i < trials; ++i) {
    double u = unit_of(identity + "#trial" + std::to_string(i));
    samples.push_back(true_ms * (1 + 0.02 * (u - 0.5)));
    sum += samples.back();
  }
  std::sort(samples.begin(), samples.end());
  timing_result t;
  t.median_ms = quantile_of(samples, 0.5);
  t.p10_ms = quantile_of(samples, 0.1);
  t.p90_ms = quantile_of(samples, 0.9);
  t.min_ms = samples.front();
  t.mean_ms = sum / trials;
  t.trials = trials;
  t.host_ms_per_call = t.median_ms * 1.02;
  t.batch = req.timing.host_check_batch;
  return t;
}

result_payload plausible_result(const request& req, int32_t device, int32_t devices) {
  result_payload r = canned_result(req, device, 1.0);
  if (auto* d = std::get_if<device_info>(&r))
    d->device_count = devices;
  if (req.job == job_kind::verify || req.job == job_kind::time)
    simulate_work();
  if (req.job == job_kind::time)
    r = plausible_timing(req);
  if (req.job == job_kind::profile)
    r = canned_profile(req, model_ms(kernel_macros(kernel_source(req.kernel))));
  return r;
}

/// Counts jobs per kind over every worker of a campaign: one file per kind in a shared
/// folder, read and written under an exclusive flock; without a folder, per process.
class job_counter {
public:
  explicit job_counter(std::string dir) : dir_(std::move(dir)) {}

  /// Returns how many jobs named `job` were counted so far.
  int64_t peek(const std::string& job) {
    if (dir_.empty())
      return local_[job];
    int64_t n = 0;
    std::ifstream(dir_ + "/" + job + ".count") >> n;
    return n;
  }

  /// Counts one more job named `job`; returns its number among its kind and among all jobs.
  std::pair<int64_t, int64_t> next(const std::string& job) {
    if (dir_.empty())
      return {++local_[job], ++local_["any"]};
    int fd = lock();
    std::pair<int64_t, int64_t> numbers{bump(job), bump("any")};
    if (fd >= 0)
      ::close(fd); // releases the lock
    return numbers;
  }

  /// Counts one more of `name` alone (not among all jobs); returns its number.
  int64_t count(const std::string& name) {
    if (dir_.empty())
      return ++local_[name];
    int fd = lock();
    int64_t n = bump(name);
    if (fd >= 0)
      ::close(fd);
    return n;
  }

private:
  int lock() {
    std::filesystem::create_directories(dir_);
    int fd = ::open((dir_ + "/.lock").c_str(), O_CREAT | O_RDWR, 0644);
    if (fd >= 0)
      ::flock(fd, LOCK_EX);
    return fd;
  }

  int64_t bump(const std::string& name) {
    std::string path = dir_ + "/" + name + ".count";
    int64_t n = 0;
    std::ifstream(path) >> n;
    std::ofstream(path, std::ios::trunc) << ++n << '\n';
    return n;
  }

  std::string dir_;
  std::map<std::string, int64_t> local_;
};

// Appends "JOB DEVICE KERNEL" to $KS_SCRIPTED_LOG, if set, in one write (O_APPEND keeps the
// lines of several workers whole).
void log_job(const request& req, int32_t device) {
  std::string path = env_text("KS_SCRIPTED_LOG");
  if (path.empty())
    return;
  std::string kernel = req.job == job_kind::verify ? req.candidate
                       : req.job == job_kind::time || req.job == job_kind::profile
                           ? req.kernel
                           : std::string("-");
  std::string line =
      std::string(to_string(req.job)) + " " + std::to_string(device) + " " + kernel + "\n";
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_APPEND, 0644);
  if (fd < 0)
    return;
  ssize_t ignored = ::write(fd, line.data(), line.size());
  (void)ignored;
  ::close(fd);
}

/// One rule of $KS_SCRIPTED_FAULTS.
struct fault_rule {
  std::string job;   ///< info, calibrate, verify, time or any
  int64_t nth = 0;   ///< JOB#N; 0 for JOB@NAME=VALUE
  std::string macro; ///< JOB@NAME=VALUE
  std::string value;
  std::string action;
};

std::optional<std::vector<fault_rule>> parse_faults(const std::string& text) {
  std::vector<fault_rule> rules;
  for (const std::string& item : split_script(text)) {
    auto arrow = item.find("->");
    if (arrow == std::string::npos)
      return std::nullopt;
    fault_rule rule;
    std::string when = std::string(base::trim(item.substr(0, arrow)));
    rule.action = std::string(base::trim(item.substr(arrow + 2)));
    if (auto hash = when.find('#'); hash != std::string::npos) {
      rule.job = when.substr(0, hash);
      rule.nth = std::strtoll(when.c_str() + hash + 1, nullptr, 10);
      if (rule.nth <= 0)
        return std::nullopt;
    } else if (auto at = when.find('@'); at != std::string::npos) {
      rule.job = when.substr(0, at);
      auto equals = when.find('=', at);
      if (equals == std::string::npos)
        return std::nullopt;
      rule.macro = when.substr(at + 1, equals - at - 1);
      rule.value = when.substr(equals + 1);
    } else {
      return std::nullopt;
    }
    if (rule.job != "info" && rule.job != "calibrate" && rule.job != "verify" &&
        rule.job != "time" && rule.job != "profile" && rule.job != "probe" && rule.job != "any")
      return std::nullopt;
    rules.push_back(std::move(rule));
  }
  return rules;
}

/// $KS_SCRIPTED_NOISY: when a GPU turns noisy, and how.
struct noise_rule {
  int32_t device = -1; ///< -1: no rule
  double factor = 1;   ///< a probe's median over the quiet one
  bool split = false;  ///< the probe's samples split instead
  int64_t first = 1;   ///< the first noisy probe
  int64_t last = -1;   ///< the last noisy probe; -1: every later one
};

std::optional<noise_rule> parse_noise(const std::string& text) {
  noise_rule rule;
  if (text.empty())
    return rule;
  auto first_colon = text.find(':');
  auto second_colon = text.find(':', first_colon + 1);
  if (first_colon == std::string::npos || second_colon == std::string::npos)
    return std::nullopt;
  rule.device = std::atoi(text.substr(0, first_colon).c_str());
  std::string how = text.substr(first_colon + 1, second_colon - first_colon - 1);
  rule.split = how == "split";
  rule.factor = rule.split ? 1 : std::strtod(how.c_str(), nullptr);
  std::string range = text.substr(second_colon + 1);
  auto dash = range.find('-');
  rule.first = std::strtoll(range.c_str(), nullptr, 10);
  if (dash != std::string::npos)
    rule.last = std::strtoll(range.c_str() + dash + 1, nullptr, 10);
  if (rule.device < 0 || rule.first < 1 || (!rule.split && !(rule.factor > 0)))
    return std::nullopt;
  return rule;
}

// Checks whether probe number `n` of the rule's device is noisy.
bool noisy_probe(const noise_rule& rule, int64_t n) {
  return n >= rule.first && (rule.last < 0 || n <= rule.last);
}

// Returns the action of the first rule that matches the job, else "ok".
std::string campaign_action(const std::vector<fault_rule>& rules, const request& req,
                            std::pair<int64_t, int64_t> numbers) {
  std::string job = to_string(req.job);
  std::optional<std::map<std::string, std::string>> macros;
  for (const fault_rule& rule : rules) {
    if (rule.job != job && rule.job != "any")
      continue;
    if (rule.nth > 0) {
      if (rule.nth == (rule.job == "any" ? numbers.second : numbers.first))
        return rule.action;
      continue;
    }
    if (!macros)
      macros =
          kernel_macros(kernel_source(req.job == job_kind::verify ? req.candidate : req.kernel));
    if (auto it = macros->find(rule.macro); it != macros->end() && it->second == rule.value)
      return rule.action;
  }
  return "ok";
}

} // namespace

int main(int argc, char** argv) {
  int32_t device = 0;
  std::string script_text;
  if (const char* env = std::getenv("KS_SCRIPT"))
    script_text = env;
  std::string state_path;
  if (const char* env = std::getenv("KS_SCRIPT_STATE"))
    state_path = env;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc)
      device = std::atoi(argv[++i]);
    else if (arg == "--script" && i + 1 < argc)
      script_text = argv[++i];
    else if (arg == "--state" && i + 1 < argc)
      state_path = argv[++i];
    else {
      std::cerr << "ks-scripted-worker: unknown argument '" << arg << "'\n";
      return 2;
    }
  }
  if (std::string alive = env_text("KS_SCRIPTED_ALIVE_DIR"); !alive.empty()) {
    // Never closed: the kernel drops the lock when this process ends.
    std::filesystem::create_directories(alive);
    std::string mark = alive + "/" + std::to_string(::getpid());
    int fd = ::open(mark.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
      std::cerr << "ks-scripted-worker: cannot lock " << mark << "\n";
      return 2;
    }
  }
  // Campaign mode answers from the model and the fault rules; the script is not used.
  const bool campaign = env_text("KS_SCRIPTED_MODE") == "campaign";
  const auto devices = static_cast<int32_t>(env_number("KS_SCRIPTED_DEVICES", 1));
  std::vector<fault_rule> faults;
  if (campaign) {
    auto parsed = parse_faults(env_text("KS_SCRIPTED_FAULTS"));
    if (!parsed) {
      std::cerr << "ks-scripted-worker: bad KS_SCRIPTED_FAULTS '" << env_text("KS_SCRIPTED_FAULTS")
                << "': want RULE;RULE..., RULE = JOB#N->ACTION or JOB@NAME=VALUE->ACTION\n";
      return 2;
    }
    faults = std::move(*parsed);
    script_text.clear();
    state_path.clear();
  }
  std::optional<noise_rule> noise = parse_noise(env_text("KS_SCRIPTED_NOISY"));
  if (!noise) {
    std::cerr << "ks-scripted-worker: bad KS_SCRIPTED_NOISY '" << env_text("KS_SCRIPTED_NOISY")
              << "': want DEVICE:FACTOR:FIRST[-LAST] or DEVICE:split:FIRST[-LAST]\n";
    return 2;
  }
  job_counter counter(campaign ? env_text("KS_SCRIPTED_STATE_DIR") : std::string());
  const std::string noisy_probes = "probe-gpu" + std::to_string(device);
  // A noisy GPU (campaign mode): its probes and its timings while the noise is on.
  auto add_noise = [&](const request& req, result_payload& result) {
    if (!campaign || noise->device != device)
      return;
    if (auto* p = std::get_if<probe_result>(&result)) {
      if (!noisy_probe(*noise, counter.count(noisy_probes)))
        return;
      if (noise->split) {
        p->p10_ms = p->median_ms * 0.95;
        p->p90_ms = p->median_ms * 1.45;
        p->max_ms = p->median_ms * 1.5;
        return;
      }
      for (double* ms : {&p->median_ms, &p->p10_ms, &p->p90_ms, &p->min_ms, &p->max_ms})
        *ms *= noise->factor;
      return;
    }
    auto* t = std::get_if<timing_result>(&result);
    int64_t probes = counter.peek(noisy_probes);
    if (t == nullptr || req.job != job_kind::time || probes < noise->first - 1 ||
        (noise->last >= 0 && probes >= noise->last))
      return;
    double factor = noise->split ? 1.3 : noise->factor;
    for (double* ms : {&t->median_ms, &t->p10_ms, &t->p90_ms, &t->min_ms, &t->mean_ms})
      *ms *= factor;
    for (double& ms : t->samples_ms)
      ms *= factor;
  };
  const std::vector<std::string> script = split_script(load_script(script_text));
  cursor at(state_path);
  auto action_at = [&](size_t i) { return i < script.size() ? script[i] : std::string("ok"); };

  // The start may be scripted too.
  std::string start = action_at(at.peek());
  hello h{static_cast<int64_t>(::getpid()), device};
  if (start.rfind("hello-", 0) == 0) {
    at.advance();
    if (start == "hello-version") {
      auto v = boost::json::parse(encode(h)).as_object();
      v["v"] = 99;
      write_line(boost::json::serialize(v));
    } else if (start == "hello-garbage") {
      write_line("hello there, I am not JSON");
    } else if (start == "hello-none") {
      hang();
    } else if (start == "hello-exit") {
      std::cerr << "ks-scripted-worker: giving up before the hello, as scripted\n";
      return 3;
    } else {
      write_line(encode(h));
    }
  } else {
    write_line(encode(h));
  }

  for (std::string line; std::getline(std::cin, line);) {
    auto req = decode_request(line);
    if (!req) {
      std::cerr << "ks-scripted-worker: bad request: " << req.error().message() << '\n';
      return 2;
    }
    response r;
    r.id = req->id;
    if (req->job == job_kind::shutdown) {
      r.ok = true;
      write_line(encode(r));
      return 0;
    }
    std::string action;
    if (campaign) {
      log_job(*req, device);
      action = campaign_action(faults, *req, counter.next(to_string(req->job)));
      if (device < 0 || device >= devices) {
        // As the real worker: every job fails on a device the driver does not have.
        r.ok = false;
        r.fail = canned_failure("no_device");
        if (devices > 0)
          r.fail->message = "no CUDA device " + std::to_string(device) + ": only " +
                            std::to_string(devices) + " present";
        write_line(encode(r));
        continue;
      }
    } else {
      action = action_at(at.peek());
      at.advance();
    }
    std::string verb = action.substr(0, action.find(':'));

    if (verb == "ok" || verb == "slow" || verb == "wrongid" || verb == "version") {
      if (verb == "slow")
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::milli>(argument_of(action, 0)));
      r.ok = true;
      r.result = campaign
                     ? plausible_result(*req, device, devices)
                     : canned_result(*req, device, verb == "ok" ? argument_of(action, 1.0) : 1.0);
      add_noise(*req, r.result);
      if (verb == "wrongid")
        r.id = req->id + 1000;
      std::string text = encode(r);
      if (verb == "version") {
        auto v = boost::json::parse(text).as_object();
        v["v"] = 99;
        text = boost::json::serialize(v);
      }
      write_line(text);
    } else if (verb == "crash") {
      std::cerr << "ks-scripted-worker: about to crash in the " << to_string(req->job)
                << " job, as scripted\n"
                << std::flush;
      std::signal(SIGSEGV, SIG_DFL);
      std::raise(SIGSEGV);
      return 1;
    } else if (verb == "killed") {
      std::cerr << "ks-scripted-worker: killed in the " << to_string(req->job)
                << " job, as scripted\n"
                << std::flush;
      std::raise(SIGKILL);
      return 1;
    } else if (verb == "lost") {
      r.ok = false;
      r.fail = canned_failure("cuda_error");
      r.fail->cuda_error = "cudaErrorDevicesUnavailable";
      r.fail->message = "all CUDA-capable devices are busy or unavailable";
      write_line(encode(r));
    } else if (verb == "hang") {
      hang();
    } else if (verb == "garbage") {
      write_line("Segmentation fault? no: just garbage");
    } else if (verb == "cut") {
      r.ok = true;
      r.result = canned_result(*req, device, 1.0);
      std::string text = encode(r);
      std::cout << text.substr(0, text.size() / 2) << std::flush;
      std::_Exit(0);
    } else if (verb == "sticky") {
      r.ok = false;
      r.fail = canned_failure("illegal_address");
      write_line(encode(r));
      return 0;
    } else if (verb == "exit") {
      std::cerr << "ks-scripted-worker: exiting as scripted\n";
      return static_cast<int>(argument_of(action, 1));
    } else if (verb == "vendor") {
      r.retire = true;
      if (req->vendor_libraries == vendor_policy::refuse) {
        r.ok = false;
        r.fail = canned_failure("vendor_library");
      } else {
        const std::string library = "/usr/local/cuda/lib64/libcublas.so.13";
        r.ok = true;
        r.result =
            campaign ? plausible_result(*req, device, devices) : canned_result(*req, device, 1.0);
        if (auto* v = std::get_if<verify_result>(&r.result))
          v->vendor_libraries = {library};
        if (auto* t = std::get_if<timing_result>(&r.result))
          t->vendor_libraries = {library};
      }
      write_line(encode(r));
    } else if (verb == "fail") {
      r.ok = false;
      r.fail = canned_failure(action.substr(action.find(':') + 1));
      write_line(encode(r));
    } else {
      std::cerr << "ks-scripted-worker: unknown action '" << action << "'\n";
      return 2;
    }
  }
  return 0;
}
