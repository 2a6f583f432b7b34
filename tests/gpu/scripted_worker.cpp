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
//   hang          never answer
//   garbage       answer with a line that is not JSON (then carry on)
//   cut           write half of a reply, no newline, then exit 0
//   sticky        reply failure illegal_address, then exit 0 (as a sticky CUDA error does)
//   wrongid       reply ok with an id that is not the request's
//   version       reply ok with protocol version 99
//   exit:N        exit with code N without answering
//   fail:KIND     reply failure KIND (wrong_result carries verify details, launch_error a
//                 return code)
//   hello-version (start) say hello with protocol version 99
//   hello-garbage (start) say something that is not a hello
//   hello-none    (start) never say hello
//   hello-exit    (start) write to stderr and exit 3 before the hello

#include "gpu/worker_protocol.hpp"

#include <boost/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

namespace {

using namespace ks::gpu;

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
    std::ifstream in(given.substr(1));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
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
    default:
      break;
  }
  return f;
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
    std::string action = action_at(at.peek());
    at.advance();
    std::string verb = action.substr(0, action.find(':'));

    if (verb == "ok" || verb == "slow" || verb == "wrongid" || verb == "version") {
      if (verb == "slow")
        std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(argument_of(action, 0)));
      r.ok = true;
      r.result = canned_result(*req, device, verb == "ok" ? argument_of(action, 1.0) : 1.0);
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
