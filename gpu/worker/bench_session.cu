// The bench session: verification and timing of candidates on one GPU.
//
// Verification (DESIGN.md, "Measurement"): for each trial, inputs are drawn afresh from a
// seed (trial i uses seed + i; even trials draw from the input's own init, odd trials from
// the other mixed-sign distribution), copied aside, and given to the reference (whose
// outputs are cached per seed and task) and then to the candidate, whose outputs are first
// poisoned with NaN. Every element of every output is compared on the device, and the inputs
// are compared bitwise with their copies. The device, not just the stream, is synchronized
// before comparing, so a candidate that strays from the stream is still judged on its
// finished result; the timing's host-clock check is what flags it.
//
// Timing: the inputs are uniform on [0, 1) (KernelBench's torch.rand) unless the task needs
// positive or integer inputs. Two input sets are drawn (different buffers, different
// contents) and the calls alternate between them, warm-up included, all writing the same
// output buffers: a cache keyed on pointers or on content never hits, and a call that skips
// its work leaves the other set's result behind. The reference's outputs for both sets are
// computed once per task and reference. After a warm-up, trials run in batches: before each
// call the L2 is flushed by writing a buffer four times its size, a pair of events brackets
// the call on the worker's stream, and any persisting-L2 window or set-aside the candidate
// made is undone. The last call of every batch and one other chosen at random are compared
// with the reference's outputs (wrong_result "during timing"). After each batch, one
// synchronization; batches continue until the median moves by less than stable_rel (or the
// first batch is already that tight), or the time or trial cap is reached. After every batch
// the device must be idle once the worker's stream is. Then a back-to-back batch of about
// 5 ms of calls is audited: CUPTI's activity records must put every kernel, copy and memset
// on the worker's stream (escaped_stream otherwise, whatever the kernel's length), and the
// host clock must see no tail; its last call is checked too. Finally the inputs must hold
// what was drawn. Checks of multi-gigabyte tensors read a few random windows of them.
// Compute-bound tasks are timed on inputs drawn afresh for every call instead (see
// fresh_inputs below). Warm-up synchronizes the device after every call, so a
// stray candidate cannot queue unbounded work before it is caught.
//
// Profiling (a job of its own, never part of a timing): one call after a warm-up is recorded
// under CUPTI's activity API (every kernel with its launch configuration and duration), then
// replayed under the range profiler for the hardware metrics (profiler.cpp), L2 flushed by a
// read before each call as before a timed call. Counters the device refuses are no failure:
// the profile says why and holds the activity part.
//
// Vendor libraries (docs/measurement.md, "Only our kernels count"): every shared object is
// opened, and every call of ks_forward made, through the session's library_watch
// (gpu/library_watch.hpp). A candidate that needs or loads cuBLAS or any other vendor library
// fails with vendor_library, or, where the request allows them, its result names them; once
// a candidate brought one into the process, every reply asks the client to replace the worker
// (response.retire), for a later candidate could reach it unseen.
//
// Errors: a sticky CUDA error (illegal address, a trap, a launch failure) poisons the whole
// context, so the session answers the job and marks itself for exit; the engine's client
// then starts a fresh worker for the next job.

#include "engine/bench_memory.hpp"
#include "gpu/library_watch.hpp"
#include "gpu/vendor_libraries.hpp"
#include "gpu/worker/bench_session.hpp"
#include "gpu/worker/calibration.hpp"
#include "gpu/worker/device_kernels.hpp"
#include "gpu/worker/profiler.hpp"
#include "gpu/worker/stream_audit.hpp"
#include "kernelskill/abi.h"

#include <climits>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace ks::gpu::worker {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

// Errors after which the context cannot be used again (CUDA documents these as sticky).
bool is_sticky(cudaError_t err) {
  switch (err) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorHardwareStackError:
  case cudaErrorAssert:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
    return true;
  default:
    return false;
  }
}

failure_kind kind_of(cudaError_t err) {
  switch (err) {
  case cudaErrorIllegalAddress:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
    return failure_kind::illegal_address;
  case cudaErrorMemoryAllocation:
    return failure_kind::out_of_memory;
  default:
    return failure_kind::launch_error;
  }
}

// Thrown inside this file only; handle() turns it into a failure response.
struct job_failure {
  failure value;
};

[[noreturn]] void fail_with(failure_kind kind, std::string message, cudaError_t err = cudaSuccess) {
  failure f;
  f.kind = kind;
  f.message = std::move(message);
  if (err != cudaSuccess) {
    f.cuda_error = cudaGetErrorName(err);
    f.message += std::string(" (") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err) + ")";
  }
  throw job_failure{std::move(f)};
}

struct device_buffer {
  void* ptr = nullptr;
  int64_t bytes = 0;
  device_buffer() = default;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr; }
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(ptr, o.ptr);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~device_buffer() {
    if (ptr)
      cudaFree(ptr);
  }
};

device_buffer allocate(int64_t bytes, const std::string& what) {
  device_buffer b;
  // Zero-sized tensors still get a valid, distinct pointer.
  auto err = cudaMalloc(&b.ptr, static_cast<size_t>(std::max<int64_t>(bytes, 256)));
  if (err != cudaSuccess) {
    cudaGetLastError(); // allocation failures are not sticky: clear and report
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    fail_with(failure_kind::out_of_memory,
              "cannot allocate " + std::to_string(bytes) + " bytes for " + what + " (" +
                  std::to_string(free_bytes) + " of " + std::to_string(total) + " bytes free)",
              err);
  }
  b.bytes = bytes;
  return b;
}

// A key that changes whenever the tensors of a task would differ.
std::string signature_of(const engine::task& t) {
  std::ostringstream key;
  for (const auto* list : {&t.inputs, &t.outputs}) {
    key << '|';
    for (const auto& s : *list) {
      key << static_cast<int>(s.type) << ':';
      for (auto d : s.shape)
        key << d << ',';
      key << ';';
    }
  }
  return key.str();
}

ks_tensor make_tensor(const engine::tensor_spec& s, void* data) {
  ks_tensor t{};
  t.data = data;
  t.dtype = static_cast<int32_t>(s.type);
  t.ndim = static_cast<int32_t>(s.shape.size());
  int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    t.shape[i] = s.shape[i];
    t.stride[i] = stride;
    stride *= s.shape[i];
  }
  return t;
}

distribution verify_distribution(engine::init_kind init, int32_t trial) {
  auto d = static_cast<distribution>(init);
  if (trial % 2 == 0)
    return d;
  // Odd trials switch between the two mixed-sign distributions.
  if (d == distribution::normal)
    return distribution::uniform;
  if (d == distribution::uniform)
    return distribution::normal;
  return d;
}

distribution timing_distribution(engine::init_kind init) {
  if (init == engine::init_kind::positive || init == engine::init_kind::randint)
    return static_cast<distribution>(init);
  return distribution::uniform01;
}

uint64_t input_seed(uint64_t seed, size_t input_index) {
  return seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull * (input_index + 1);
}

double bits_to_double(unsigned long long bits) {
  double d;
  static_assert(sizeof(d) == sizeof(bits));
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}

std::string format_uuid(const cudaUUID_t& uuid) {
  char out[64];
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::snprintf(out, sizeof(out),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return out;
}

double percentile(std::vector<double> sorted, double p) {
  if (sorted.empty())
    return 0;
  double pos = p * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  auto hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] * (1 - frac) + sorted[hi] * frac;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return percentile(std::move(v), 0.5);
}

} // namespace

// -- the session ---------------------------------------------------------------------------

struct bench_session::impl {
  int32_t device;
  bool initialized = false;
  bool poisoned = false; // a sticky error happened: the process must exit
  cudaStream_t stream = nullptr;
  cudaDeviceProp prop{};

  // The current task's tensors, reused while the task's signature stays the same. What they
  // and the buffers below take is counted in engine/bench_memory.hpp, which `task check` and the
  // dry run compare with a GPU's memory: keep the two in step.
  std::string signature;
  std::vector<device_buffer> inputs, input_copies, outputs, ref_outputs;
  device_buffer flush_buffer;
  device_buffer scratch; // compare_stats and byte-compare counters

  // Reference outputs per (reference, signature, seed), on the device, within a byte budget.
  struct cached_outputs {
    std::vector<device_buffer> outputs;
    int64_t bytes = 0;
  };
  std::map<std::string, cached_outputs> ref_cache;
  int64_t ref_cache_bytes = 0;
  static constexpr int64_t ref_cache_budget = engine::bench_reference_cache_bytes;

  std::map<std::string, ks_forward_fn> loaded;
  std::map<ks_forward_fn, std::string> path_of; // the shared object of each loaded ks_forward

  // What each kernel brought into the process: a candidate that needs or loads a vendor
  // library is refused, or labelled where the job allows it (gpu/library_watch.hpp).
  library_watch libraries;

  // Masks every reference output resident on the device (see device_kernels.hpp, mask()).
  const uint64_t answer_key = [] {
    std::random_device entropy;
    uint64_t key = (uint64_t{entropy()} << 32) ^ entropy();
    return key != 0 ? key : 0x5DEECE66Dull;
  }();

  explicit impl(int32_t dev) : device(dev) {}

  ~impl() {
    if (stream && !poisoned)
      cudaStreamDestroy(stream);
  }

  // Raises on a CUDA error; sticky ones mark the session for exit.
  void check(cudaError_t err, const std::string& what) {
    if (err == cudaSuccess)
      return;
    if (is_sticky(err))
      poisoned = true;
    else
      cudaGetLastError();
    fail_with(kind_of(err), what, err);
  }

  void init() {
    if (initialized)
      return;
    int count = 0;
    auto err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      std::string why = err != cudaSuccess
                            ? std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err)
                            : "the driver reports 0 devices";
      // Without any driver the runtime says "insufficient driver", which misleads: say so.
      if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); driver == nullptr)
        why = "no NVIDIA driver is installed (libcuda.so.1 cannot be loaded)";
      else
        dlclose(driver);
      fail_with(failure_kind::no_device, "no CUDA device: " + why);
    }
    if (device < 0 || device >= count)
      fail_with(failure_kind::no_device, "no CUDA device " + std::to_string(device) + ": only " +
                                             std::to_string(count) + " present");
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating the stream");
    scratch = allocate(4096, "comparison statistics");
    initialized = true;
  }

  // -- info and calibration --------------------------------------------------------------

  device_info info() {
    init();
    device_info d;
    d.index = device;
    cudaGetDeviceCount(&d.device_count);
    d.name = prop.name;
    d.uuid = format_uuid(prop.uuid);
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    // Architecture-specific features (wgmma, setmaxnreg) need the "a" targets from 9.0 on.
    d.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
             (prop.major >= 9 ? "a" : "");
    d.sms = prop.multiProcessorCount;
    d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    d.l2_bytes = prop.l2CacheSize;
    d.smem_per_block_optin = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
    cudaDeviceGetAttribute(&d.sm_clock_khz, cudaDevAttrClockRate, device);
    cudaDeviceGetAttribute(&d.mem_clock_khz, cudaDevAttrMemoryClockRate, device);
    cudaDeviceGetAttribute(&d.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
    cudaDriverGetVersion(&d.driver_version);
    cudaRuntimeGetVersion(&d.runtime_version);
    cudaGetLastError();
    return d;
  }

  calibration calibrate() {
    init();
    calibration c;
    check(calibrate_device(device, stream, c), "calibrating the device");
    return c;
  }

  probe_result probe(const request& req) {
    init();
    probe_result p;
    check(probe_device(device, stream, req.probe, p), "timing the stability probe");
    return p;
  }

  // -- tensors and kernels ---------------------------------------------------------------

  void prepare(const engine::task& t) {
    auto sig = signature_of(t);
    if (sig == signature)
      return;
    // Free the previous task's tensors before allocating the next ones.
    inputs.clear();
    input_copies.clear();
    outputs.clear();
    ref_outputs.clear();
    ref_cache.clear();
    ref_cache_bytes = 0;
    for (auto& set : timing_ref)
      set.clear();
    timing_ref_key.clear();
    signature.clear();
    // Memory the default pool keeps for earlier tasks' workspaces (a graph's intermediates stay
    // reserved between its calls) goes back to the device; this task's grows it again.
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess)
      cudaMemPoolTrimTo(pool, 0);
    cudaGetLastError();
    for (const auto& s : t.inputs) {
      inputs.push_back(allocate(s.bytes(), "input '" + s.name + "'"));
      input_copies.push_back(allocate(s.bytes(), "a copy of input '" + s.name + "'"));
    }
    for (const auto& s : t.outputs) {
      outputs.push_back(allocate(s.bytes(), "output '" + s.name + "'"));
      ref_outputs.push_back(allocate(s.bytes(), "reference output '" + s.name + "'"));
    }
    signature = sig;
  }

  ks_forward_fn load(const std::string& path) {
    if (auto it = loaded.find(path); it != loaded.end())
      return it->second;
    auto handle = libraries.open(path);
    if (!handle)
      throw job_failure{std::move(handle.error())};
    auto fn = reinterpret_cast<ks_forward_fn>(dlsym(*handle, "ks_forward"));
    if (!fn)
      fail_with(failure_kind::load_error,
                "'" + path +
                    "' exports no ks_forward (declare it extern \"C\" with the ABI of "
                    "kernelskill/abi.h)");
    loaded.emplace(path, fn);
    path_of[fn] = path;
    return fn;
  }

  void fill_inputs(const engine::task& t, uint64_t seed, int32_t trial, bool for_timing) {
    for (size_t i = 0; i < t.inputs.size(); ++i) {
      const auto& s = t.inputs[i];
      auto dist = for_timing ? timing_distribution(s.init) : verify_distribution(s.init, trial);
      check(fill_random(inputs[i].ptr, static_cast<int32_t>(s.type), s.numel(), dist,
                        input_seed(seed, i), s.low, s.high, stream),
            "drawing input '" + s.name + "'");
    }
  }

  // Calls ks_forward on `ins` and `outs` and returns its return code; launch errors raise.
  int call(ks_forward_fn fn, const engine::task& t, const std::vector<device_buffer>& ins,
           std::vector<device_buffer>& outs, const char* who) {
    std::vector<ks_tensor> in_tensors, out_tensors;
    for (size_t i = 0; i < t.inputs.size(); ++i)
      in_tensors.push_back(make_tensor(t.inputs[i], ins[i].ptr));
    for (size_t i = 0; i < t.outputs.size(); ++i)
      out_tensors.push_back(make_tensor(t.outputs[i], outs[i].ptr));
    libraries.before_call();
    int rc = fn(in_tensors.data(), static_cast<int32_t>(in_tensors.size()), out_tensors.data(),
                static_cast<int32_t>(out_tensors.size()), stream);
    // What the call loaded is accounted for first: a refusal outranks its return code.
    if (auto ok = libraries.after_call(path_of[fn]); !ok)
      throw job_failure{std::move(ok.error())};
    check(cudaGetLastError(), std::string("launching the ") + who);
    return rc;
  }

  void run_and_sync(ks_forward_fn fn, const engine::task& t, std::vector<device_buffer>& outs,
                    const char* who) {
    run_and_sync(fn, t, inputs, outs, who);
  }

  void run_and_sync(ks_forward_fn fn, const engine::task& t, const std::vector<device_buffer>& ins,
                    std::vector<device_buffer>& outs, const char* who) {
    for (size_t i = 0; i < outs.size(); ++i)
      check(poison(outs[i].ptr, outs[i].bytes, stream), "poisoning the outputs");
    check(cudaStreamSynchronize(stream), "preparing the run");
    int rc = call(fn, t, ins, outs, who);
    // The device, not the stream: work the kernel strayed onto other streams must finish.
    check(cudaDeviceSynchronize(), std::string("running the ") + who);
    if (rc != 0) {
      failure f;
      f.kind = failure_kind::launch_error;
      f.return_code = rc;
      f.message = std::string("the ") + who + "'s ks_forward returned " + std::to_string(rc);
      throw job_failure{std::move(f)};
    }
  }

  // Returns the reference outputs for `seed`, computing and caching them when needed.
  std::vector<device_buffer>& reference_outputs(ks_forward_fn ref, const std::string& ref_path,
                                                const engine::task& t, uint64_t seed,
                                                int32_t trial) {
    std::string key = ref_path + "#" + std::to_string(seed) + "#" + std::to_string(trial % 2);
    if (auto it = ref_cache.find(key); it != ref_cache.end())
      return it->second.outputs;
    run_and_sync(ref, t, ref_outputs, "reference");
    for (auto& b : ref_outputs)
      check(mask(b.ptr, b.bytes, answer_key, stream), "masking the reference's outputs");
    int64_t bytes = 0;
    for (const auto& b : ref_outputs)
      bytes += b.bytes;
    if (ref_cache_bytes + bytes > ref_cache_budget)
      return ref_outputs;
    cached_outputs entry;
    for (size_t i = 0; i < ref_outputs.size(); ++i) {
      auto copy = allocate(ref_outputs[i].bytes, "the reference cache");
      check(cudaMemcpyAsync(copy.ptr, ref_outputs[i].ptr, ref_outputs[i].bytes,
                            cudaMemcpyDeviceToDevice, stream),
            "caching reference outputs");
      entry.outputs.push_back(std::move(copy));
    }
    entry.bytes = bytes;
    ref_cache_bytes += bytes;
    return ref_cache.emplace(key, std::move(entry)).first->second.outputs;
  }

  // -- verify ----------------------------------------------------------------------------

  verify_result verify(const request& req) {
    init();
    const auto& t = *req.task;
    prepare(t);
    auto ref = load(req.reference);
    auto cand = load(req.candidate);
    verify_result result;
    result.passed = true;
    auto* stats = static_cast<compare_stats*>(scratch.ptr);
    auto* byte_counters =
        reinterpret_cast<unsigned long long*>(static_cast<char*>(scratch.ptr) + 1024);
    for (int32_t trial = 0; trial < req.verify.trials; ++trial) {
      uint64_t seed = req.verify.seed + static_cast<uint64_t>(trial);
      result.trials = trial + 1;
      fill_inputs(t, seed, trial, false);
      for (size_t i = 0; i < inputs.size(); ++i)
        check(cudaMemcpyAsync(input_copies[i].ptr, inputs[i].ptr, inputs[i].bytes,
                              cudaMemcpyDeviceToDevice, stream),
              "copying inputs aside");
      auto& expected = reference_outputs(ref, req.reference, t, seed, trial);
      run_and_sync(cand, t, outputs, "candidate");

      for (size_t o = 0; o < t.outputs.size(); ++o) {
        const auto& spec = t.outputs[o];
        compare_stats host{};
        host.first_bad = ULLONG_MAX;
        check(cudaMemcpyAsync(stats, &host, sizeof(host), cudaMemcpyHostToDevice, stream),
              "resetting statistics");
        check(compare(outputs[o].ptr, expected[o].ptr, answer_key, static_cast<int32_t>(spec.type),
                      spec.numel(), t.tol.atol, t.tol.rtol, stats, stream),
              "comparing outputs");
        check(cudaMemcpyAsync(&host, stats, sizeof(host), cudaMemcpyDeviceToHost, stream),
              "reading statistics");
        check(cudaStreamSynchronize(stream), "comparing outputs");
        double norm_rel = host.sum_sq_ref > 0 ? std::sqrt(host.sum_sq_diff / host.sum_sq_ref)
                                              : std::sqrt(host.sum_sq_diff);
        if (host.nan_count > 0)
          norm_rel = INFINITY;
        result.max_abs_err = std::max(result.max_abs_err, bits_to_double(host.max_abs_bits));
        result.max_rel_err = std::max(result.max_rel_err, bits_to_double(host.max_rel_bits));
        result.norm_rel_err = std::max(result.norm_rel_err, norm_rel);
        bool bad_elements = host.bad_count > 0;
        bool bad_norm = !(norm_rel <= t.tol.norm_rel);
        if (bad_elements || bad_norm) {
          result.passed = false;
          result.bad_output = spec.name;
          result.bad_trial = trial;
          result.bad_count = static_cast<int64_t>(host.bad_count);
          result.nan_count = static_cast<int64_t>(host.nan_count);
          if (bad_elements) {
            result.first_bad_index = static_cast<int64_t>(host.first_bad);
            check(read_element(outputs[o].ptr, static_cast<int32_t>(spec.type),
                               result.first_bad_index, &result.actual, stream),
                  "reading the first bad element");
            check(read_element(expected[o].ptr, static_cast<int32_t>(spec.type),
                               result.first_bad_index, &result.expected, stream, answer_key),
                  "reading the first bad element");
          }
          return result;
        }
      }
      for (size_t i = 0; i < t.inputs.size(); ++i) {
        unsigned long long host[2] = {0, ULLONG_MAX};
        check(cudaMemcpyAsync(byte_counters, host, sizeof(host), cudaMemcpyHostToDevice, stream),
              "resetting counters");
        check(compare_bytes(inputs[i].ptr, input_copies[i].ptr, inputs[i].bytes, byte_counters,
                            byte_counters + 1, stream),
              "checking inputs");
        check(cudaMemcpyAsync(host, byte_counters, sizeof(host), cudaMemcpyDeviceToHost, stream),
              "reading counters");
        check(cudaStreamSynchronize(stream), "checking inputs");
        if (host[0] > 0) {
          const auto& spec = t.inputs[i];
          result.passed = false;
          result.input_changed = true;
          result.bad_output = spec.name;
          result.bad_trial = trial;
          result.bad_count = static_cast<int64_t>(host[0]);
          result.first_bad_index = static_cast<int64_t>(host[1]) / engine::size_of(spec.type);
          check(read_element(inputs[i].ptr, static_cast<int32_t>(spec.type), result.first_bad_index,
                             &result.actual, stream),
                "reading the changed input");
          check(read_element(input_copies[i].ptr, static_cast<int32_t>(spec.type),
                             result.first_bad_index, &result.expected, stream),
                "reading the changed input");
          return result;
        }
      }
    }
    return result;
  }

  // -- time ------------------------------------------------------------------------------

  // Timing alternates between two input sets, so that no two consecutive calls see the same
  // inputs and the output buffer always holds the other set's result when a call starts: a
  // skipped call leaves a wrong output behind without any marker a candidate could look for
  // (poisoning only the checked calls would tell it which calls are checked). Set 0 lives in
  // `inputs`, set 1 in `input_copies`; verification refills both before it uses them.
  static constexpr int timing_sets = static_cast<int>(engine::bench_input_sets);

  std::vector<device_buffer>& timing_inputs(int set) { return set == 0 ? inputs : input_copies; }

  static uint64_t timing_seed(uint64_t seed, int set) {
    return seed ^ (0xA5A5'0000'0000'0000ull + static_cast<uint64_t>(set + 1) * 0x1'0001ull);
  }

  // Reference outputs of each timing set, valid for timing_ref_key (reference and seed).
  std::vector<device_buffer> timing_ref[timing_sets];
  std::string timing_ref_key;
  // Statistics of the checked calls of one batch, or counts of changed input elements.
  device_buffer check_scratch;
  static constexpr int32_t checks_per_batch = 2;

  std::mt19937_64 rng{std::random_device{}()};
  uint32_t worker_stream_id = activity::invalid_stream;

  // Every call but a checked one first gets a few of its input elements redrawn at random
  // positions with fresh values (the previous call's redrawn elements of that set get their
  // drawn values back): no two calls see the same inputs, so a memo of results keyed on
  // sampled content returns a stale result, which the checks see, and one keyed on all of
  // the content never hits. Checked calls see their set as drawn, whose reference outputs
  // are at hand. The elements now redrawn, per set and input:
  static constexpr int32_t perturbed_elements = 8;
  std::vector<element_positions> perturbed[timing_sets];
  uint64_t timing_job_seed = 0;

  // A compute-bound task (more than fresh_intensity flops per byte) is timed on fresh inputs
  // instead: every call's set is redrawn whole, so nothing a candidate remembers predicts
  // its inputs. Sparse redraws would not do there: reading every input to find what changed
  // (and updating the last result, or telling the pristine calls from the others) is cheap
  // next to the work. Redrawing writes a set's bytes once, little next to the work here.
  //
  // Two kinds of check. A pristine check gives the call its set as drawn and compares with
  // the reference's cached outputs: cheap, so the last call of every batch gets one (sparse
  // mode only). A blind check is made on an ordinary call, redrawn like the others, so no
  // candidate can tell it from an unchecked one (a candidate that hashes its inputs would
  // otherwise learn that pristine states recur, and work only on those): the reference runs
  // on the same buffers right after it (an answer of inputs that never recur is left behind,
  // for nothing). A blind check costs a reference call, so the first batch always gets one,
  // and later batches one each while they stay within check_budget of the timed GPU time.
  static constexpr double fresh_intensity = engine::bench_fresh_intensity;
  static constexpr double check_budget = 0.1;
  bool fresh_inputs = false;
  ks_forward_fn timing_reference = nullptr;
  cudaEvent_t check_events[2 * 2] = {};
  double check_ms = 0;       // reference calls of this job's checks, in all
  double check_call_ms = -1; // the last one measured

  void prepare_call_inputs(const engine::task& t, int set, bool pristine) {
    auto& ins = timing_inputs(set);
    if (fresh_inputs) {
      uint64_t seed = rng();
      for (size_t i = 0; i < t.inputs.size(); ++i) {
        const auto& spec = t.inputs[i];
        check(fill_random(ins[i].ptr, static_cast<int32_t>(spec.type), spec.numel(),
                          timing_distribution(spec.init), input_seed(seed, i), spec.low, spec.high,
                          stream),
              "drawing timing input '" + spec.name + "'");
      }
      return;
    }
    auto& current = perturbed[set];
    current.resize(t.inputs.size());
    for (size_t i = 0; i < t.inputs.size(); ++i) {
      const auto& spec = t.inputs[i];
      element_positions fresh;
      int64_t n = spec.numel();
      if (!pristine && n > 0) {
        std::uniform_int_distribution<int64_t> position(0, n - 1);
        fresh.count = static_cast<int32_t>(std::min<int64_t>(perturbed_elements, n));
        for (int32_t k = 0; k < fresh.count; ++k)
          fresh.index[k] = position(rng);
      }
      check(perturb(ins[i].ptr, static_cast<int32_t>(spec.type), timing_distribution(spec.init),
                    spec.low, spec.high, input_seed(timing_seed(timing_job_seed, set), i),
                    current[i], rng(), fresh, stream),
            "redrawing timing input elements");
      current[i] = fresh;
    }
  }

  // Draws the timing sets and makes sure the reference's outputs for them are at hand.
  void prepare_timing_sets(const engine::task& t, ks_forward_fn ref, const std::string& ref_path,
                           uint64_t seed) {
    timing_job_seed = seed;
    timing_reference = ref;
    fresh_inputs = t.cost.bytes > 0 && t.cost.flops > fresh_intensity * t.cost.bytes;
    check_ms = 0;
    check_call_ms = -1;
    for (auto& e : check_events)
      if (e == nullptr)
        check(cudaEventCreate(&e), "creating events");
    if (fresh_inputs)
      return;
    for (int set = 0; set < timing_sets; ++set) {
      perturbed[set].clear();
      auto& ins = timing_inputs(set);
      for (size_t i = 0; i < t.inputs.size(); ++i) {
        const auto& spec = t.inputs[i];
        check(fill_random(ins[i].ptr, static_cast<int32_t>(spec.type), spec.numel(),
                          timing_distribution(spec.init), input_seed(timing_seed(seed, set), i),
                          spec.low, spec.high, stream),
              "drawing timing input '" + spec.name + "'");
      }
    }
    std::string ref_key = ref_path + "#" + signature + "#" + std::to_string(seed);
    if (timing_ref_key == ref_key)
      return;
    timing_ref_key.clear();
    for (int set = 0; set < timing_sets; ++set) {
      if (timing_ref[set].empty())
        for (const auto& spec : t.outputs)
          timing_ref[set].push_back(
              allocate(spec.bytes(), "the reference's output '" + spec.name + "' for timing"));
      run_and_sync(ref, t, timing_inputs(set), timing_ref[set], "reference");
      for (auto& b : timing_ref[set])
        check(mask(b.ptr, b.bytes, answer_key, stream), "masking the reference's outputs");
    }
    timing_ref_key = ref_key;
  }

  // The ranges of an n-element tensor that one check reads: all of it up to window_bytes,
  // else a few windows at random offsets (a skipped call leaves the other set's result,
  // wrong nearly everywhere; reading a whole multi-gigabyte output per check would cost as
  // much as a call).
  static constexpr int64_t window_bytes = int64_t{64} << 20;
  static constexpr int32_t windows_per_check = 4;

  std::vector<std::pair<int64_t, int64_t>> windows(int64_t n, int64_t element_bytes) {
    int64_t whole = window_bytes / std::max<int64_t>(element_bytes, 1);
    if (n <= whole)
      return {{0, n}};
    int64_t each = whole / windows_per_check;
    std::uniform_int_distribution<int64_t> offset(0, n - each);
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int32_t w = 0; w < windows_per_check; ++w)
      out.emplace_back(offset(rng), each);
    return out;
  }

  // Undoes what a candidate may have done to keep data in L2 across the flush: the stream's
  // access-policy window and a persisting-L2 set-aside. Returns whether there was anything
  // to undo. The set-aside is reset only after the device is idle, so that the lines the
  // candidate's last call marked persisting are demoted before the next flush runs.
  bool undo_l2_persistence() {
    bool undone = false;
    cudaStreamAttrValue window{};
    if (cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &window) ==
            cudaSuccess &&
        window.accessPolicyWindow.num_bytes != 0) {
      cudaStreamAttrValue none{};
      check(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &none),
            "resetting the stream's access-policy window");
      undone = true;
    }
    size_t set_aside = 0;
    if (cudaDeviceGetLimit(&set_aside, cudaLimitPersistingL2CacheSize) == cudaSuccess &&
        set_aside != 0) {
      check(cudaDeviceSynchronize(), "waiting before resetting persisting L2");
      check(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0), "resetting persisting L2");
      undone = true;
    }
    if (undone)
      check(cudaCtxResetPersistingL2Cache(), "resetting persisting L2 lines");
    cudaGetLastError();
    return undone;
  }

  // Enqueues a check of the call just made on `set` into `slot`: blind (the reference runs
  // on the same inputs now) or pristine (its cached outputs for the set as drawn).
  void enqueue_check(const engine::task& t, int set, int32_t slot, bool blind) {
    auto* stats = static_cast<compare_stats*>(check_scratch.ptr) + slot * t.outputs.size();
    if (blind) {
      check(cudaEventRecord(check_events[2 * slot], stream), "recording an event");
      if (int rc = call(timing_reference, t, timing_inputs(set), ref_outputs, "reference"); rc != 0)
        fail_with(failure_kind::launch_error, "the reference's ks_forward returned " +
                                                  std::to_string(rc) +
                                                  " while checking a timed call");
      check(cudaEventRecord(check_events[2 * slot + 1], stream), "recording an event");
    }
    for (size_t o = 0; o < t.outputs.size(); ++o) {
      const auto& spec = t.outputs[o];
      check(cudaMemsetAsync(stats + o, 0, sizeof(compare_stats), stream), "resetting statistics");
      check(cudaMemsetAsync(&stats[o].first_bad, 0xFF, sizeof(unsigned long long), stream),
            "resetting statistics");
      const void* expected = blind ? ref_outputs[o].ptr : timing_ref[set][o].ptr;
      for (auto [first, count] : windows(spec.numel(), engine::size_of(spec.type)))
        check(compare_range(outputs[o].ptr, expected, blind ? 0 : answer_key,
                            static_cast<int32_t>(spec.type), first, count, t.tol.atol, t.tol.rtol,
                            stats + o, stream),
              "checking a timed call");
    }
  }

  struct timed_check {
    int64_t call = 0; // the call's number in the job, warm-up included
    int set = 0;
    std::string what; // "timed call 37", "the last call of the back-to-back batch"
    bool blind = false;
  };

  // Reads the statistics of `checks` (enqueued into slots 0, 1, ...) after the stream is
  // done; the first wrong output fails the job.
  void evaluate_checks(const engine::task& t, const std::vector<timed_check>& checks) {
    if (checks.empty())
      return;
    std::vector<compare_stats> host(checks.size() * t.outputs.size());
    check(cudaMemcpyAsync(host.data(), check_scratch.ptr, sizeof(compare_stats) * host.size(),
                          cudaMemcpyDeviceToHost, stream),
          "reading the checks");
    check(cudaStreamSynchronize(stream), "reading the checks");
    for (size_t c = 0; c < checks.size(); ++c)
      for (size_t o = 0; o < t.outputs.size(); ++o) {
        const compare_stats& st = host[c * t.outputs.size() + o];
        double norm_rel = st.sum_sq_ref > 0 ? std::sqrt(st.sum_sq_diff / st.sum_sq_ref)
                                            : std::sqrt(st.sum_sq_diff);
        if (st.bad_count == 0 && st.nan_count == 0 && norm_rel <= t.tol.norm_rel)
          continue;
        const auto& spec = t.outputs[o];
        std::ostringstream msg;
        msg << "wrong result found during timing: output '" << spec.name << "' of "
            << checks[c].what << " (input set " << checks[c].set
            << (checks[c].blind ? ", as redrawn for that call" : ", as drawn") << ")";
        if (st.bad_count > 0 && checks[c].blind) {
          msg << " is wrong in " << st.bad_count << " of " << spec.numel() << " elements";
          if (st.nan_count > 0)
            msg << " (" << st.nan_count << " NaN)";
          msg << ", first at index " << st.first_bad;
        } else if (st.bad_count > 0) {
          double expected = 0;
          check(read_element(timing_ref[checks[c].set][o].ptr, static_cast<int32_t>(spec.type),
                             static_cast<int64_t>(st.first_bad), &expected, stream, answer_key),
                "reading the expected element");
          msg << " is wrong in " << st.bad_count << " of " << spec.numel() << " elements";
          if (st.nan_count > 0)
            msg << " (" << st.nan_count << " NaN)";
          msg << ", first at index " << st.first_bad << " (expected " << expected << ")";
        } else {
          msg << " has norm-relative error " << norm_rel << " above the task's " << t.tol.norm_rel;
        }
        msg << "; it passed verification, so its timed calls do not all compute their "
               "result: every call must do the whole work for the inputs it is given";
        fail_with(failure_kind::wrong_result, msg.str());
      }
  }

  // Adds what the reference calls of blind checks cost to the budget's account.
  void account_blind_checks(const std::vector<timed_check>& checks) {
    check(cudaStreamSynchronize(stream), "reading the checks");
    for (size_t c = 0; c < checks.size(); ++c) {
      float ms = 0;
      if (checks[c].blind &&
          cudaEventElapsedTime(&ms, check_events[2 * c], check_events[2 * c + 1]) == cudaSuccess) {
        check_ms += ms;
        check_call_ms = ms;
      }
    }
  }

  // Checks whether one more blind check fits the budget.
  bool check_affordable(double timed_ms) const {
    return check_call_ms < 0 || check_ms + check_call_ms <= check_budget * timed_ms;
  }

  // Sparse mode, after the last call: both sets, their redrawn elements restored, must
  // hold what was drawn (windows of each input; inputs are read-only).
  void check_inputs_unchanged(const engine::task& t) {
    auto* counts = reinterpret_cast<unsigned long long*>(check_scratch.ptr);
    size_t slots = timing_sets * t.inputs.size();
    check(cudaMemsetAsync(counts, 0, sizeof(unsigned long long) * slots, stream),
          "resetting counters");
    for (int set = 0; set < timing_sets; ++set) {
      prepare_call_inputs(t, set, true);
      auto& ins = timing_inputs(set);
      for (size_t i = 0; i < t.inputs.size(); ++i) {
        const auto& spec = t.inputs[i];
        for (auto [first, count] : windows(spec.numel(), engine::size_of(spec.type)))
          check(count_undrawn(ins[i].ptr, static_cast<int32_t>(spec.type),
                              timing_distribution(spec.init), spec.low, spec.high,
                              input_seed(timing_seed(timing_job_seed, set), i), first, count,
                              counts + set * t.inputs.size() + i, stream),
                "checking the inputs");
      }
    }
    std::vector<unsigned long long> host(slots);
    check(cudaMemcpyAsync(host.data(), counts, sizeof(unsigned long long) * slots,
                          cudaMemcpyDeviceToHost, stream),
          "reading counters");
    check(cudaStreamSynchronize(stream), "checking the inputs");
    for (size_t k = 0; k < slots; ++k)
      if (host[k] > 0)
        fail_with(failure_kind::wrong_result,
                  "the candidate changed input '" + t.inputs[k % t.inputs.size()].name +
                      "' of input set " + std::to_string(k / t.inputs.size()) + " during timing (" +
                      std::to_string(host[k]) +
                      " elements differ from those drawn); inputs are "
                      "read-only");
  }

  // Names the work that ran off the worker's stream, at most three pieces of it.
  static std::string describe_escape(const std::vector<activity>& off, uint32_t own, size_t total) {
    std::ostringstream msg;
    msg << "work escaped the worker's stream: " << off.size() << " of " << total
        << " pieces of GPU work of the audited calls ran elsewhere than the cuda_stream "
           "argument (CUPTI stream "
        << own << "), e.g. ";
    for (size_t i = 0; i < off.size() && i < 3; ++i) {
      const activity& a = off[i];
      if (i > 0)
        msg << "; ";
      std::string name = a.name.size() > 80 ? a.name.substr(0, 77) + "..." : a.name;
      msg << (a.kind == activity::kind_type::kernel ? "kernel '" + name + "'" : name);
      if (a.bytes)
        msg << " of " << a.bytes << " bytes";
      if (a.stream == activity::invalid_stream)
        msg << " (synchronous, on the legacy default stream)";
      else
        msg << " on stream " << a.stream;
    }
    msg << "; launch all work on the cuda_stream argument (host-side computation through "
           "synchronous copies counts as escaped work too)";
    return msg.str();
  }

  [[noreturn]] static void fail_returned(int rc) {
    failure f;
    f.kind = failure_kind::launch_error;
    f.return_code = rc;
    f.message = "ks_forward returned " + std::to_string(rc) + " while timing";
    throw job_failure{std::move(f)};
  }

  timing_result time(const request& req) {
    init();
    const auto& t = *req.task;
    const auto& opt = req.timing;
    if (req.reference.empty())
      fail_with(failure_kind::protocol_error,
                "a time job needs the reference's shared object, to check timed calls against");
    prepare(t);
    auto fn = load(req.kernel);
    auto ref = load(req.reference);
    if (!check_scratch.ptr || check_scratch.bytes < scratch_bytes_for(t))
      check_scratch = allocate(scratch_bytes_for(t), "timing checks");
    undo_l2_persistence();
    prepare_timing_sets(t, ref, req.reference, req.verify.seed);
    if (opt.flush_l2 && !flush_buffer.ptr)
      flush_buffer =
          allocate(std::max<int64_t>(int64_t{4} * prop.l2CacheSize, engine::bench_min_flush_bytes),
                   "the L2 flush buffer");
    check(cudaDeviceSynchronize(), "preparing inputs");

    timing_result r;
    r.input_sets = timing_sets;
    int64_t call_index = 0;
    // Prepares the next call's inputs (pristine for a checked call), then calls the kernel.
    auto call_next = [&](bool checked) -> int {
      int set = static_cast<int>(call_index++ % timing_sets);
      prepare_call_inputs(t, set, checked);
      if (int rc = call(fn, t, timing_inputs(set), outputs, "kernel"); rc != 0)
        fail_returned(rc);
      return set;
    };
    auto flush = [&] {
      if (opt.flush_l2)
        check(cudaMemsetAsync(flush_buffer.ptr, 0, static_cast<size_t>(flush_buffer.bytes), stream),
              "flushing L2");
    };

    // Warm-up: module loading, lazy initialization and clocks settle here.
    auto warm_start = clock_type::now();
    // The device, not the stream: a candidate that strays onto other streams must not be
    // able to queue unbounded work while the host loop spins.
    for (int i = 0; i < 2 || ms_since(warm_start) < opt.warmup_ms; ++i) {
      call_next(false);
      check(cudaDeviceSynchronize(), "warming up");
      if (undo_l2_persistence())
        ++r.l2_resets;
      if (i > 10000)
        break;
    }

    std::vector<cudaEvent_t> events;
    auto release_events = [&] {
      for (auto e : events)
        cudaEventDestroy(e);
      events.clear();
    };
    std::vector<double> times;
    double timed_ms = 0;
    double previous_median = -1;
    auto wall_start = clock_type::now();
    try {
      int32_t batch = std::max(opt.min_trials, 10);
      std::vector<timed_check> checks;
      while (true) {
        while (static_cast<int32_t>(events.size()) < 2 * batch) {
          cudaEvent_t e;
          check(cudaEventCreate(&e), "creating events");
          events.push_back(e);
        }
        // Sparse mode: a pristine check of the last call of every batch (so the last timed
        // call is checked). Both modes: a blind check of a random call (any other than the
        // last in sparse mode) in the first batch, and in later ones within the budget.
        int32_t pristine_check = fresh_inputs ? -1 : batch - 1;
        int32_t blind_check = -1;
        int32_t blind_span = fresh_inputs ? batch : batch - 1;
        if (blind_span > 0 && (times.empty() || check_affordable(timed_ms)))
          blind_check = std::uniform_int_distribution<int32_t>(0, blind_span - 1)(rng);
        checks.clear();
        for (int32_t i = 0; i < batch; ++i) {
          bool pristine = i == pristine_check;
          int set = static_cast<int>(call_index % timing_sets);
          prepare_call_inputs(t, set, pristine);
          flush();
          check(cudaEventRecord(events[2 * i], stream), "recording an event");
          ++call_index;
          if (int rc = call(fn, t, timing_inputs(set), outputs, "kernel"); rc != 0)
            fail_returned(rc);
          check(cudaEventRecord(events[2 * i + 1], stream), "recording an event");
          if (undo_l2_persistence())
            ++r.l2_resets;
          if (pristine || i == blind_check) {
            enqueue_check(t, set, static_cast<int32_t>(checks.size()), !pristine);
            checks.push_back({call_index - 1, set,
                              "timed call " + std::to_string(times.size() + i + 1), !pristine});
          }
        }
        check(cudaStreamSynchronize(stream), "timing");
        // Per batch, the cheap half of the host-clock check: once the stream is idle, the
        // device must be too. Checking every batch stops a stray candidate before it can
        // queue more work than the watchdog allows.
        auto stream_done = clock_type::now();
        check(cudaDeviceSynchronize(), "timing");
        double tail_ms = ms_since(stream_done);
        double batch_ms = 0;
        for (int32_t i = 0; i < batch; ++i) {
          float ms = 0;
          check(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]), "reading events");
          times.push_back(ms);
          timed_ms += ms;
          batch_ms += ms;
        }
        if (tail_ms > std::max(0.1, 0.25 * batch_ms)) {
          std::ostringstream msg;
          msg << "work escaped the worker's stream: the device stayed busy " << tail_ms
              << " ms after the stream finished a batch of " << batch
              << " timed calls whose events measured " << batch_ms
              << " ms in all; launch all work on the cuda_stream argument";
          fail_with(failure_kind::escaped_stream, msg.str());
        }
        r.checked_calls += static_cast<int32_t>(checks.size());
        account_blind_checks(checks);
        evaluate_checks(t, checks);
        double median = median_of(times);
        auto n = static_cast<int32_t>(times.size());
        bool stable = previous_median > 0 &&
                      std::fabs(median - previous_median) <= opt.stable_rel * previous_median;
        // A first batch whose middle 80% lies within twice stable_rel of its median needs no
        // second batch to confirm it: long kernels (tens of ms) are timed in one batch.
        if (previous_median < 0) {
          std::vector<double> sorted_batch = times;
          std::sort(sorted_batch.begin(), sorted_batch.end());
          double spread = percentile(sorted_batch, 0.9) - percentile(sorted_batch, 0.1);
          stable = spread <= 2 * opt.stable_rel * median;
        }
        // The wall cap also bounds flush and launch overhead for very short kernels.
        if (n >= opt.min_trials && (stable || timed_ms >= opt.max_ms || n >= opt.max_trials ||
                                    ms_since(wall_start) >= 2 * opt.max_ms))
          break;
        previous_median = median;
        // Grow batches for short kernels so the per-batch synchronization stays negligible.
        double per_call = std::max(median, 1e-3);
        batch = static_cast<int32_t>(std::clamp(5.0 / per_call, 10.0, 200.0));
        batch = std::min(batch, std::max(opt.max_trials - n, 1));
      }
    } catch (...) {
      release_events();
      throw;
    }
    release_events();

    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    r.trials = static_cast<int32_t>(sorted.size());
    r.median_ms = percentile(sorted, 0.5);
    r.p10_ms = percentile(sorted, 0.1);
    r.p90_ms = percentile(sorted, 0.9);
    r.min_ms = sorted.front();
    double sum = 0;
    for (double x : sorted)
      sum += x;
    r.mean_ms = sum / static_cast<double>(sorted.size());
    size_t kept = std::min(times.size(), timing_result::max_reported_samples);
    for (size_t i = 0; i < kept; ++i)
      r.samples_ms.push_back(times[i * times.size() / kept]);

    audit_back_to_back(t, opt, r, call_next, timed_ms);
    if (!fresh_inputs)
      check_inputs_unchanged(t);
    return r;
  }

  static int64_t scratch_bytes_for(const engine::task& t) {
    int64_t stats = int64_t{checks_per_batch} * static_cast<int64_t>(t.outputs.size()) *
                    static_cast<int64_t>(sizeof(compare_stats));
    int64_t counts =
        static_cast<int64_t>(timing_sets * t.inputs.size() * sizeof(unsigned long long));
    return std::max<int64_t>({stats, counts, 256});
  }

  // The host-clock check, audited: back-to-back calls with no flush and no events, enough
  // of them to hold about 5 ms of work (so that a short kernel escaping to another stream
  // piles up into a tail the host clock sees), the last one checked. With CUPTI, every
  // kernel, copy and memset the calls caused must be on the worker's stream, whatever its
  // length; without it, the device must be idle once the worker's stream is.
  template <class CallNext>
  void audit_back_to_back(const engine::task& t, const timing_options& opt, timing_result& r,
                          CallNext&& call_next, double timed_ms) {
    // Its last call: pristine in sparse mode; blind on fresh inputs, within the budget.
    bool check_last = !fresh_inputs || check_affordable(timed_ms);
    int32_t most = std::max(opt.host_check_batch, 1) * 100;
    r.batch = static_cast<int32_t>(
        std::clamp(std::ceil(5.0 / std::max(r.median_ms, 1e-3)), 1.0, static_cast<double>(most)));
    check(cudaDeviceSynchronize(), "before the host-clock check");
    undo_l2_persistence();
    stream_audit& audit = stream_audit::instance();
    bool audited = audit.begin();
    if (audited && worker_stream_id == activity::invalid_stream)
      worker_stream_id = audit.stream_id(stream);
    if (audited && worker_stream_id == activity::invalid_stream) {
      uint64_t ignored = 0;
      audit.end(ignored);
      audited = false;
    }
    std::vector<activity> records;
    uint64_t dropped = 0;
    int last_set = 0;
    auto t0 = clock_type::now();
    try {
      for (int32_t i = 0; i < r.batch; ++i)
        last_set = call_next(!fresh_inputs && i == r.batch - 1);
      check(cudaStreamSynchronize(stream), "host-clock check");
    } catch (...) {
      if (audited)
        audit.end(dropped);
      throw;
    }
    auto t1 = clock_type::now();
    check(cudaDeviceSynchronize(), "host-clock check");
    auto t2 = clock_type::now();
    if (audited)
      records = audit.end(dropped);
    r.host_ms_per_call = std::chrono::duration<double, std::milli>(t1 - t0).count() / r.batch;
    r.device_tail_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
    r.audit = audited && dropped == 0 ? "cupti" : "host-clock";
    if (!audited)
      r.audit_note = audit.unavailable_reason();
    else if (dropped > 0)
      r.audit_note = "CUPTI dropped " + std::to_string(dropped) + " records";

    if (audited) {
      std::vector<activity> off;
      for (const activity& a : records)
        if (a.stream != worker_stream_id)
          off.push_back(a);
      if (!off.empty())
        fail_with(failure_kind::escaped_stream,
                  describe_escape(off, worker_stream_id, records.size()));
    }
    // A legitimate kernel leaves the device idle once its stream is: the tail is only the
    // synchronization's own latency (microseconds). Work left on another stream piles up
    // over the batch's many calls into a tail of a sizeable share of the batch's work.
    double limit = std::max(0.1, 0.1 * r.batch * r.median_ms);
    if (r.device_tail_ms > limit) {
      std::ostringstream msg;
      msg << "work escaped the worker's stream: the device stayed busy " << r.device_tail_ms
          << " ms after the stream finished a batch of " << r.batch
          << " back-to-back calls whose timed median is " << r.median_ms
          << " ms each; launch all work on the cuda_stream argument";
      fail_with(failure_kind::escaped_stream, msg.str());
    }

    if (!check_last)
      return;
    enqueue_check(t, last_set, 0, fresh_inputs);
    r.checked_calls += 1;
    std::vector<timed_check> last{
        {0, last_set, "the last call of the back-to-back batch", fresh_inputs}};
    account_blind_checks(last);
    evaluate_checks(t, last);
  }

  // -- profile ---------------------------------------------------------------------------

  engine::device_limits device_limits() const {
    engine::device_limits d;
    d.sms = prop.multiProcessorCount;
    d.max_warps_per_sm = prop.maxThreadsPerMultiProcessor / std::max(prop.warpSize, 1);
    d.max_blocks_per_sm = prop.maxBlocksPerMultiProcessor;
    d.registers_per_sm = prop.regsPerMultiprocessor;
    d.max_registers_per_block = prop.regsPerBlock;
    d.shared_bytes_per_sm = static_cast<int64_t>(prop.sharedMemPerMultiprocessor);
    d.shared_bytes_per_block_optin = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
    d.reserved_shared_bytes_per_block = static_cast<int64_t>(prop.reservedSharedMemPerBlock);
    return d;
  }

  engine::profile profile(const request& req) {
    auto start = clock_type::now();
    init();
    const auto& t = *req.task;
    prepare(t);
    auto fn = load(req.kernel);
    if (!flush_buffer.ptr)
      flush_buffer =
          allocate(std::max<int64_t>(int64_t{4} * prop.l2CacheSize, engine::bench_min_flush_bytes),
                   "the L2 flush buffer");
    // The inputs a timed call sees (uniform on [0, 1) unless the task says otherwise).
    fill_inputs(t, req.verify.seed, 0, true);
    undo_l2_persistence();
    check(cudaDeviceSynchronize(), "preparing the profile");

    auto* counts = reinterpret_cast<unsigned long long*>(static_cast<char*>(scratch.ptr) + 2048);
    profiled_call replay;
    // Reading the flush buffer (comparing its halves) evicts everything, and leaves nothing
    // dirty in L2 that would be written back, and counted, inside the next range.
    replay.prepare = [&] {
      int64_t half = flush_buffer.bytes / 2;
      check(compare_bytes(flush_buffer.ptr, static_cast<char*>(flush_buffer.ptr) + half, half,
                          counts, counts + 1, stream),
            "flushing L2");
      check(cudaStreamSynchronize(stream), "flushing L2");
    };
    replay.run = [&] {
      if (int rc = call(fn, t, inputs, outputs, "kernel"); rc != 0) {
        failure f;
        f.kind = failure_kind::launch_error;
        f.return_code = rc;
        f.message = "ks_forward returned " + std::to_string(rc) + " while profiling";
        throw job_failure{std::move(f)};
      }
      check(cudaDeviceSynchronize(), "running the kernel under the profiler");
      undo_l2_persistence();
    };

    engine::profile p;
    p.device = device_limits();
    // Module loading and lazy initialization happen here, not in the recorded call.
    replay.run();
    stream_audit& audit = stream_audit::instance();
    replay.prepare();
    if (!audit.begin()) {
      p.counters_unavailable = "no activity records: " + audit.unavailable_reason();
      p.profile_ms = ms_since(start);
      return p;
    }
    uint64_t dropped = 0;
    std::vector<activity> records;
    try {
      replay.run();
    } catch (...) {
      audit.end(dropped);
      throw;
    }
    records = audit.end(dropped);
    if (dropped > 0)
      p.notes.push_back("CUPTI dropped " + std::to_string(dropped) + " activity records");
    std::vector<activity> launches = fill_activity(p, std::move(records));
    if (req.profile.counters)
      range_profiler::instance().collect(p, launches, replay, req.profile, device);
    else
      p.counters_unavailable = "not asked for";
    p.profile_ms = ms_since(start);
    return p;
  }
};

bench_session::bench_session(int32_t device) : impl_(std::make_unique<impl>(device)) {}

bench_session::~bench_session() = default;

bool bench_session::must_exit() const noexcept {
  return impl_->poisoned;
}

namespace {

// Returns the shared object a job runs that is not ours: a verify job's candidate, a time or
// profile job's kernel, unless it is the job's reference (checked against itself, or timed).
std::string untrusted_kernel(const request& req) {
  switch (req.job) {
  case job_kind::verify:
    return req.candidate == req.reference ? std::string() : req.candidate;
  case job_kind::time:
    return req.kernel == req.reference ? std::string() : req.kernel;
  case job_kind::profile:
    return req.kernel;
  default:
    return {};
  }
}

} // namespace

response bench_session::handle(const request& req) {
  response resp;
  resp.id = req.id;
  const std::string kernel = untrusted_kernel(req);
  library_watch& libraries = impl_->libraries;
  libraries.start_job(kernel, req.vendor_libraries);
  // The libraries the job's kernel used, where the policy allowed them, once every vendor
  // library still unaccounted for is blamed on it.
  auto vendor_libraries = [&] {
    if (auto ok = libraries.finish_job(); !ok)
      throw job_failure{std::move(ok.error())};
    return kernel.empty() ? std::vector<std::string>{} : libraries.used_by(kernel);
  };
  try {
    switch (req.job) {
    case job_kind::info:
      resp.result = impl_->info();
      break;
    case job_kind::calibrate:
      resp.result = impl_->calibrate();
      break;
    case job_kind::probe:
      resp.result = impl_->probe(req);
      break;
    case job_kind::verify: {
      auto r = impl_->verify(req);
      r.vendor_libraries = vendor_libraries();
      if (!r.passed) {
        failure f;
        f.kind = failure_kind::wrong_result;
        std::ostringstream msg;
        if (r.input_changed)
          msg << "the candidate changed input '" << r.bad_output << "' (" << r.bad_count
              << " 16-byte words differ; first at element " << r.first_bad_index << ": was "
              << r.expected << ", now " << r.actual << ")";
        else if (r.first_bad_index >= 0) {
          msg << "output '" << r.bad_output << "' is wrong in " << r.bad_count << " elements";
          if (r.nan_count > 0)
            msg << " (" << r.nan_count << " of them NaN: never written?)";
          msg << " with inputs drawn from seed " << req.verify.seed + r.bad_trial
              << "; first at index " << r.first_bad_index << ": expected " << r.expected << ", got "
              << r.actual;
        } else
          msg << "output '" << r.bad_output << "' has norm-relative error " << r.norm_rel_err
              << " above the task's " << req.task->tol.norm_rel
              << " (float32 lands near 1e-6; TF32 or fp16 arithmetic near 1e-4..1e-3)";
        f.message = msg.str();
        f.verify = r;
        resp.fail = std::move(f);
        return resp;
      }
      resp.result = r;
      break;
    }
    case job_kind::time: {
      auto r = impl_->time(req);
      r.vendor_libraries = vendor_libraries();
      resp.result = std::move(r);
      break;
    }
    case job_kind::profile: {
      auto p = impl_->profile(req);
      if (auto used = vendor_libraries(); !used.empty())
        p.notes.push_back("uses " + describe_vendor_libraries(used) +
                          ": the profile is partly a vendor library's kernels");
      resp.result = std::move(p);
      break;
    }
    case job_kind::shutdown:
      resp.result = std::monostate{};
      break;
    }
    resp.ok = true;
  } catch (job_failure& f) {
    resp.ok = false;
    resp.fail = std::move(f.value);
  } catch (const std::exception& e) {
    resp.ok = false;
    resp.fail =
        failure{failure_kind::cuda_error, std::string("internal error: ") + e.what(), {}, {}, {}};
  }
  if (!resp.ok)
    (void)libraries.finish_job(); // the job failed already: its answer stands, but what
                                  // came into the process still taints it
  resp.retire = libraries.tainted();
  return resp;
}

} // namespace ks::gpu::worker
