// The profile job's counters: CUPTI's range profiler (CUDA 13: cupti_range_profiler.h with
// cupti_profiler_host.h), dlopen'ed through cupti_library like the stream audit.
//
// The method. One call of ks_forward is what a campaign times, so one call is what is
// profiled. The activity pass (bench_session.cu) has already run the call once under the
// activity API, so the call's kernel launches are known in order, with their launch
// configurations and durations. Then:
//
//   - Ranges. With at most max_ranges launches (64) the range profiler runs in auto-range
//     mode: every kernel launch is its own range, so every kernel gets its own metrics,
//     matched to its activity record by order (CUPTI numbers auto ranges by launch order, and
//     the same call with the same inputs launches the same kernels). A call launching more
//     (thousands of tiny kernels) is profiled as one user range around the whole call: the
//     launch-bound rule needs the activity records, not per-kernel counters, and thousands
//     of ranges per pass would cost more than the job may.
//   - Replay. Metrics need several passes (the counters that can be read at once are few).
//     We replay the whole call ourselves (user replay) rather than let CUPTI replay each
//     kernel (kernel replay): ks_forward is a pure function of its inputs (verification
//     checks that it leaves them unchanged and overwrites its outputs), so calling it again
//     reproduces the same kernels without CUPTI saving and restoring device memory around
//     every kernel (the worker holds gigabytes of inputs, copies and reference outputs), and
//     before every pass we flush L2 ourselves, outside any range, so that every pass starts
//     from the cold cache a timed call starts from: DRAM bytes and hit rates do not depend
//     on what the previous pass left in L2. The flush reads (never writes) a buffer four
//     times L2's size, so no dirty line of ours is written back inside a range and counted
//     as the kernel's DRAM writes. Where CUPTI refuses user replay in auto-range mode, kernel
//     replay is the fallback (the result says which).
//   - Metrics. engine::profile_metrics() lists what is asked for; each is added to the
//     configuration on its own, so one the chip lacks (checked against
//     cuptiProfilerHostGetBaseMetrics) is skipped with a note instead of failing the rest.
//     When the full set cannot be collected, or needs more than max_passes passes, the core
//     metrics (DRAM, caches, SM, occupancy) are tried alone.
//   - Refusal. Counters need privileges and a GPU that exposes them: a driver that restricts
//     them (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), a virtualized or MIG device, a sandbox
//     where the profiler cannot initialize. Such a refusal is remembered for the process and
//     every profile job then says why at once (counters_unavailable); the job still returns
//     the activity part. A failure of the candidate itself inside a pass propagates as the
//     session's job failure.

#include "gpu/worker/profiler.hpp"

#include "gpu/worker/cupti_library.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

namespace ks::gpu::worker {

namespace {

struct profiler_api {
  decltype(&cuptiProfilerInitialize) initialize = nullptr;
  decltype(&cuptiProfilerDeviceSupported) device_supported = nullptr;
  decltype(&cuptiDeviceGetChipName) chip_name = nullptr;
  decltype(&cuptiProfilerGetCounterAvailability) counter_availability = nullptr;
  decltype(&cuptiProfilerHostInitialize) host_initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) host_deinitialize = nullptr;
  decltype(&cuptiProfilerHostGetBaseMetrics) base_metrics = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) add_metrics = nullptr;
  decltype(&cuptiProfilerHostGetConfigImageSize) config_image_size = nullptr;
  decltype(&cuptiProfilerHostGetConfigImage) config_image = nullptr;
  decltype(&cuptiProfilerHostGetNumOfPasses) passes = nullptr;
  decltype(&cuptiProfilerHostEvaluateToGpuValues) evaluate = nullptr;
  decltype(&cuptiRangeProfilerEnable) enable = nullptr;
  decltype(&cuptiRangeProfilerDisable) disable = nullptr;
  decltype(&cuptiRangeProfilerSetConfig) set_config = nullptr;
  decltype(&cuptiRangeProfilerStart) start = nullptr;
  decltype(&cuptiRangeProfilerStop) stop = nullptr;
  decltype(&cuptiRangeProfilerPushRange) push_range = nullptr;
  decltype(&cuptiRangeProfilerPopRange) pop_range = nullptr;
  decltype(&cuptiRangeProfilerDecodeData) decode = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataSize) counter_data_size = nullptr;
  decltype(&cuptiRangeProfilerCounterDataImageInitialize) counter_data_initialize = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataInfo) counter_data_info = nullptr;
};

// Thrown inside this file only: why the counters could not be read. `lasting` marks a refusal
// that will not change while the process lives (privileges, an unsupported device).
struct counters_refused {
  std::string why;
  bool lasting = false;
};

bool is_lasting(CUptiResult r) {
  switch (r) {
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_NOT_SUPPORTED:
  case CUPTI_ERROR_NOT_COMPATIBLE:
  case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
  case CUPTI_ERROR_INVALID_CHIP_NAME:
  case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    return true;
  default:
    return false;
  }
}

[[noreturn]] void refuse(CUptiResult r, const char* what) {
  std::string why = std::string(what) + " failed: " + cupti_library::instance().describe(r);
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    why += " (the driver restricts GPU performance counters to admin users: "
           "NVreg_RestrictProfilingToAdminUsers=0, or run as root)";
  throw counters_refused{std::move(why), is_lasting(r)};
}

void check(CUptiResult r, const char* what) {
  if (r != CUPTI_SUCCESS)
    refuse(r, what);
}

// Returns the context the runtime made current (the worker's primary context), through the
// runtime's driver entry points: the worker does not link libcuda.
CUcontext current_context() {
  using get_current_fn = CUresult (*)(CUcontext*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      fn == nullptr) {
    cudaGetLastError();
    return nullptr;
  }
  CUcontext ctx = nullptr;
  if (reinterpret_cast<get_current_fn>(fn)(&ctx) != CUDA_SUCCESS)
    return nullptr;
  return ctx;
}

// Returns the part of a metric name before its first '.': what GetBaseMetrics lists.
std::string base_of(const std::string& metric) {
  return metric.substr(0, metric.find('.'));
}

// Keeps only finite values: a ratio over zero events reads NaN.
std::map<std::string, double> finite_values(const std::vector<const char*>& names,
                                            const std::vector<double>& values) {
  std::map<std::string, double> out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i)
    if (std::isfinite(values[i]))
      out[names[i]] = values[i];
  return out;
}

} // namespace

// -- the activity part ------------------------------------------------------------------------

std::vector<activity> fill_activity(engine::profile& p, std::vector<activity> records) {
  std::vector<activity> launches;
  uint64_t first = UINT64_MAX, last = 0;
  for (activity& a : records) {
    if (a.kind != activity::kind_type::kernel) {
      ++p.copies;
      continue;
    }
    first = std::min(first, a.start_ns);
    last = std::max(last, a.end_ns);
    launches.push_back(std::move(a));
  }
  std::stable_sort(launches.begin(), launches.end(),
                   [](const activity& a, const activity& b) { return a.start_ns < b.start_ns; });
  p.launches = static_cast<int64_t>(launches.size());
  p.span_ms = last > first ? static_cast<double>(last - first) / 1e6 : 0;
  std::map<std::string, size_t> index;
  for (const activity& a : launches) {
    double ms = static_cast<double>(a.duration_ns) / 1e6;
    p.kernel_ms += ms;
    auto [it, fresh] = index.emplace(a.name, p.kernels.size());
    if (fresh) {
      engine::kernel_profile k;
      k.name = a.name;
      k.grid = {a.grid[0], a.grid[1], a.grid[2]};
      k.block = {a.block[0], a.block[1], a.block[2]};
      k.registers = a.registers;
      k.static_shared_bytes = a.static_shared_bytes;
      k.dynamic_shared_bytes = a.dynamic_shared_bytes;
      k.local_bytes_per_thread = a.local_bytes_per_thread;
      p.kernels.push_back(std::move(k));
    }
    engine::kernel_profile& k = p.kernels[it->second];
    ++k.launches;
    k.duration_ms += ms;
  }
  std::stable_sort(p.kernels.begin(), p.kernels.end(),
                   [](const engine::kernel_profile& a, const engine::kernel_profile& b) {
                     return a.duration_ms > b.duration_ms;
                   });
  return launches;
}

// -- the range profiler -----------------------------------------------------------------------

struct range_profiler::impl {
  profiler_api api;
  bool initialized = false;
  std::string lasting_refusal; ///< once set, every job says this and tries nothing
  std::string chip;
  int32_t chip_device = -1;

  void load() {
    const cupti_library& library = cupti_library::instance();
    if (!library.loaded()) {
      lasting_refusal = library.unavailable_reason();
      return;
    }
    std::string missing;
    auto bind = [&](auto& fn, const char* symbol) {
      if (!library.bind(fn, symbol) && missing.empty())
        missing = symbol;
    };
    bind(api.initialize, "cuptiProfilerInitialize");
    bind(api.device_supported, "cuptiProfilerDeviceSupported");
    bind(api.chip_name, "cuptiDeviceGetChipName");
    bind(api.counter_availability, "cuptiProfilerGetCounterAvailability");
    bind(api.host_initialize, "cuptiProfilerHostInitialize");
    bind(api.host_deinitialize, "cuptiProfilerHostDeinitialize");
    bind(api.base_metrics, "cuptiProfilerHostGetBaseMetrics");
    bind(api.add_metrics, "cuptiProfilerHostConfigAddMetrics");
    bind(api.config_image_size, "cuptiProfilerHostGetConfigImageSize");
    bind(api.config_image, "cuptiProfilerHostGetConfigImage");
    bind(api.passes, "cuptiProfilerHostGetNumOfPasses");
    bind(api.evaluate, "cuptiProfilerHostEvaluateToGpuValues");
    bind(api.enable, "cuptiRangeProfilerEnable");
    bind(api.disable, "cuptiRangeProfilerDisable");
    bind(api.set_config, "cuptiRangeProfilerSetConfig");
    bind(api.start, "cuptiRangeProfilerStart");
    bind(api.stop, "cuptiRangeProfilerStop");
    bind(api.push_range, "cuptiRangeProfilerPushRange");
    bind(api.pop_range, "cuptiRangeProfilerPopRange");
    bind(api.decode, "cuptiRangeProfilerDecodeData");
    bind(api.counter_data_size, "cuptiRangeProfilerGetCounterDataSize");
    bind(api.counter_data_initialize, "cuptiRangeProfilerCounterDataImageInitialize");
    bind(api.counter_data_info, "cuptiRangeProfilerGetCounterDataInfo");
    if (!missing.empty())
      lasting_refusal = "CUPTI lacks " + missing + " (the range profiler needs CUDA 12.6 or later)";
  }

  // Initializes the profiler and reads the chip's name, once per process and device.
  void initialize(int32_t device) {
    if (!initialized) {
      CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
      check(api.initialize(&init), "cuptiProfilerInitialize");
      initialized = true;
    }
    if (chip_device == device)
      return;
    CUpti_Profiler_DeviceSupported_Params supported{
        CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
    supported.cuDevice = device;
    supported.api = CUPTI_PROFILER_RANGE_PROFILING;
    if (api.device_supported(&supported) == CUPTI_SUCCESS &&
        supported.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
      std::string why = "the device does not support profiling";
      if (supported.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        why += supported.vGpu == CUPTI_PROFILER_CONFIGURATION_DISABLED
                   ? " (a virtual GPU whose profiling is disabled)"
                   : " (a virtual GPU)";
      else if (supported.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        why += " (confidential computing is on)";
      else if (supported.cmp != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        why += " (a mining processor)";
      else if (supported.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        why += " (its architecture is too old)";
      throw counters_refused{why, true};
    }
    CUpti_Device_GetChipName_Params name{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    name.deviceIndex = static_cast<size_t>(device);
    check(api.chip_name(&name), "cuptiDeviceGetChipName");
    chip = name.pChipName != nullptr ? name.pChipName : "";
    chip_device = device;
  }

  std::vector<uint8_t> counter_availability(CUcontext ctx) {
    CUpti_Profiler_GetCounterAvailability_Params params{
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    params.ctx = ctx;
    check(api.counter_availability(&params), "cuptiProfilerGetCounterAvailability");
    std::vector<uint8_t> image(params.counterAvailabilityImageSize);
    params.pCounterAvailabilityImage = image.data();
    check(api.counter_availability(&params), "cuptiProfilerGetCounterAvailability");
    return image;
  }

  // A host object (metric configuration and evaluation), deinitialized on every path.
  struct host_object {
    const profiler_api* api = nullptr;
    CUpti_Profiler_Host_Object* ptr = nullptr;
    host_object() = default;
    host_object(const host_object&) = delete;
    host_object& operator=(const host_object&) = delete;
    ~host_object() {
      if (ptr != nullptr) {
        CUpti_Profiler_Host_Deinitialize_Params params{
            CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
        params.pHostObject = ptr;
        api->host_deinitialize(&params);
      }
    }
  };

  void open_host(host_object& host, const std::vector<uint8_t>& availability) {
    CUpti_Profiler_Host_Initialize_Params params{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    params.pChipName = chip.c_str();
    params.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
    check(api.host_initialize(&params), "cuptiProfilerHostInitialize");
    host.api = &api;
    host.ptr = params.pHostObject;
  }

  // Returns the base metrics of the chip, of every type.
  std::set<std::string> base_metrics(CUpti_Profiler_Host_Object* host) {
    std::set<std::string> out;
    for (CUpti_MetricType type :
         {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
      CUpti_Profiler_Host_GetBaseMetrics_Params params{
          CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
      params.pHostObject = host;
      params.metricType = type;
      if (api.base_metrics(&params) != CUPTI_SUCCESS)
        continue;
      for (size_t i = 0; i < params.numMetrics; ++i)
        if (params.ppMetricNames[i] != nullptr)
          out.insert(params.ppMetricNames[i]);
    }
    return out;
  }

  // A configuration: the metrics it holds and its image.
  struct configuration {
    std::vector<std::string> metrics;
    std::vector<uint8_t> image;
    size_t passes = 0;
  };

  // Adds `wanted` to `host` one by one (or all at once), skipping with a note those the chip
  // lacks or CUPTI refuses, and returns the configuration image.
  configuration configure(CUpti_Profiler_Host_Object* host, const std::vector<std::string>& wanted,
                          bool one_by_one, std::vector<std::string>& notes) {
    configuration c;
    std::set<std::string> known = base_metrics(host);
    std::vector<const char*> names;
    for (const std::string& m : wanted) {
      bool listed = known.empty() || known.count(base_of(m)) > 0;
      if (!one_by_one) {
        if (listed)
          c.metrics.push_back(m);
        continue;
      }
      const char* name = m.c_str();
      CUpti_Profiler_Host_ConfigAddMetrics_Params params{
          CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
      params.pHostObject = host;
      params.ppMetricNames = &name;
      params.numMetrics = 1;
      if (CUptiResult r = api.add_metrics(&params); r != CUPTI_SUCCESS) {
        notes.push_back("skipped " + m + ": " +
                        (listed ? "CUPTI refused it (" + cupti_library::instance().describe(r) + ")"
                                : std::string("not among the chip's metrics (") + chip + ")"));
        continue;
      }
      c.metrics.push_back(m);
    }
    if (!one_by_one) {
      for (const std::string& m : c.metrics)
        names.push_back(m.c_str());
      CUpti_Profiler_Host_ConfigAddMetrics_Params params{
          CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
      params.pHostObject = host;
      params.ppMetricNames = names.data();
      params.numMetrics = names.size();
      check(api.add_metrics(&params), "cuptiProfilerHostConfigAddMetrics");
    }
    if (c.metrics.empty())
      throw counters_refused{"the chip (" + chip + ") offers none of the metrics asked for", false};
    CUpti_Profiler_Host_GetConfigImageSize_Params size{
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = host;
    check(api.config_image_size(&size), "cuptiProfilerHostGetConfigImageSize");
    c.image.resize(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params image{
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    image.pHostObject = host;
    image.configImageSize = c.image.size();
    image.pConfigImage = c.image.data();
    check(api.config_image(&image), "cuptiProfilerHostGetConfigImage");
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    passes.configImageSize = c.image.size();
    passes.pConfigImage = c.image.data();
    check(api.passes(&passes), "cuptiProfilerHostGetNumOfPasses");
    c.passes = passes.numOfPasses;
    return c;
  }

  // The range profiler on the context, disabled on every path.
  struct range_object {
    const profiler_api* api = nullptr;
    CUpti_RangeProfiler_Object* ptr = nullptr;
    range_object() = default;
    range_object(const range_object&) = delete;
    range_object& operator=(const range_object&) = delete;
    ~range_object() {
      if (ptr != nullptr) {
        CUpti_RangeProfiler_Disable_Params params{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
        params.pRangeProfilerObject = ptr;
        api->disable(&params);
      }
    }
  };

  // What one collection gave: the values of each range, in range order.
  struct collection {
    std::vector<std::map<std::string, double>> ranges;
    size_t passes = 0;
    std::string replay;
  };

  // Runs the passes of `config` over `call` and evaluates every range.
  collection run(CUcontext ctx, CUpti_Profiler_Host_Object* host, const configuration& config,
                 const profiled_call& call, size_t ranges, bool per_kernel,
                 CUpti_ProfilerReplayMode replay, std::vector<std::string>& notes) {
    range_object range;
    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = ctx;
    check(api.enable(&enable), "cuptiRangeProfilerEnable");
    range.api = &api;
    range.ptr = enable.pRangeProfilerObject;

    std::vector<const char*> names;
    for (const std::string& m : config.metrics)
      names.push_back(m.c_str());
    CUpti_RangeProfiler_GetCounterDataSize_Params size{
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    size.pRangeProfilerObject = range.ptr;
    size.pMetricNames = names.data();
    size.numMetrics = names.size();
    size.maxNumOfRanges = ranges;
    size.maxNumRangeTreeNodes = static_cast<uint32_t>(ranges);
    check(api.counter_data_size(&size), "cuptiRangeProfilerGetCounterDataSize");
    std::vector<uint8_t> counter_data(size.counterDataSize);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    init.pRangeProfilerObject = range.ptr;
    init.counterDataSize = counter_data.size();
    init.pCounterData = counter_data.data();
    check(api.counter_data_initialize(&init), "cuptiRangeProfilerCounterDataImageInitialize");

    CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    set.pRangeProfilerObject = range.ptr;
    set.configSize = config.image.size();
    set.pConfig = config.image.data();
    set.counterDataImageSize = counter_data.size();
    set.pCounterDataImage = counter_data.data();
    set.range = per_kernel ? CUPTI_AutoRange : CUPTI_UserRange;
    set.replayMode = replay;
    set.maxRangesPerPass = ranges;
    set.numNestingLevels = 1;
    set.minNestingLevel = 1;
    set.passIndex = 0;
    set.targetNestingLevel = 1;
    check(api.set_config(&set), "cuptiRangeProfilerSetConfig");

    collection out;
    out.replay = replay == CUPTI_UserReplay ? "user" : "kernel";
    // With user replay every pass is one call; with kernel replay CUPTI replays each kernel
    // within the one call. A profiler that keeps asking for passes is cut off.
    size_t most = std::max<size_t>(config.passes, 1) + 2;
    bool all_submitted = false;
    while (!all_submitted) {
      if (out.passes >= most)
        throw counters_refused{
            "the range profiler asked for more than " + std::to_string(most) + " passes", false};
      call.prepare();
      CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
      start.pRangeProfilerObject = range.ptr;
      check(api.start(&start), "cuptiRangeProfilerStart");
      if (!per_kernel) {
        CUpti_RangeProfiler_PushRange_Params push{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
        push.pRangeProfilerObject = range.ptr;
        push.pRangeName = "call";
        check(api.push_range(&push), "cuptiRangeProfilerPushRange");
      }
      call.run();
      if (!per_kernel) {
        CUpti_RangeProfiler_PopRange_Params pop{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
        pop.pRangeProfilerObject = range.ptr;
        check(api.pop_range(&pop), "cuptiRangeProfilerPopRange");
      }
      CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
      stop.pRangeProfilerObject = range.ptr;
      check(api.stop(&stop), "cuptiRangeProfilerStop");
      all_submitted = stop.isAllPassSubmitted != 0;
      ++out.passes;
    }
    CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    decode.pRangeProfilerObject = range.ptr;
    check(api.decode(&decode), "cuptiRangeProfilerDecodeData");
    if (decode.numOfRangeDropped > 0)
      notes.push_back(std::to_string(decode.numOfRangeDropped) + " ranges were dropped");

    CUpti_RangeProfiler_GetCounterDataInfo_Params info{
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = counter_data.data();
    info.counterDataImageSize = counter_data.size();
    check(api.counter_data_info(&info), "cuptiRangeProfilerGetCounterDataInfo");
    for (size_t i = 0; i < info.numTotalRanges; ++i) {
      std::vector<double> values(names.size(), NAN);
      CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{
          CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
      eval.pHostObject = host;
      eval.pCounterDataImage = counter_data.data();
      eval.counterDataImageSize = counter_data.size();
      eval.rangeIndex = i;
      eval.ppMetricNames = names.data();
      eval.numMetrics = names.size();
      eval.pMetricValues = values.data();
      check(api.evaluate(&eval), "cuptiProfilerHostEvaluateToGpuValues");
      out.ranges.push_back(finite_values(names, values));
    }
    if (out.ranges.empty())
      throw counters_refused{"the range profiler recorded no range", false};
    return out;
  }

  // Collects `wanted` over the call: user replay first, kernel replay where CUPTI refuses it
  // for per-kernel ranges.
  collection collect_metrics(CUcontext ctx, const std::vector<uint8_t>& availability,
                             const std::vector<std::string>& wanted, bool one_by_one,
                             const profiled_call& call, size_t ranges, bool per_kernel,
                             const profile_options& options, std::vector<std::string>& notes) {
    host_object host;
    open_host(host, availability);
    configuration config = configure(host.ptr, wanted, one_by_one, notes);
    if (config.passes > static_cast<size_t>(std::max(options.max_passes, 1)))
      throw counters_refused{std::to_string(config.passes) + " passes needed, more than " +
                                 std::to_string(options.max_passes),
                             false};
    try {
      return run(ctx, host.ptr, config, call, ranges, per_kernel, CUPTI_UserReplay, notes);
    } catch (const counters_refused& refused) {
      if (refused.lasting || !per_kernel)
        throw;
      notes.push_back("user replay refused (" + refused.why + "); CUPTI replayed each kernel");
      return run(ctx, host.ptr, config, call, ranges, per_kernel, CUPTI_KernelReplay, notes);
    }
  }

  void collect(engine::profile& p, const std::vector<activity>& launches, const profiled_call& call,
               const profile_options& options, int32_t device) {
    if (!lasting_refusal.empty()) {
      p.counters_unavailable = lasting_refusal;
      return;
    }
    if (launches.empty()) {
      p.counters_unavailable = "the call launched no kernel";
      return;
    }
    try {
      initialize(device);
      CUcontext ctx = current_context();
      if (ctx == nullptr)
        throw counters_refused{"no current CUDA context to profile", false};
      std::vector<uint8_t> availability = counter_availability(ctx);
      bool per_kernel = launches.size() <= static_cast<size_t>(std::max(options.max_ranges, 1));
      size_t ranges = per_kernel ? launches.size() : 1;
      collection got;
      std::vector<std::string> notes;
      try {
        got = collect_metrics(ctx, availability, engine::profile_metrics(), true, call, ranges,
                              per_kernel, options, notes);
      } catch (const counters_refused& refused) {
        if (refused.lasting)
          throw;
        notes.push_back("the full metric set failed (" + refused.why +
                        "); collected the core metrics only");
        got = collect_metrics(ctx, availability, engine::core_metrics(), false, call, ranges,
                              per_kernel, options, notes);
      }
      p.counters = true;
      p.passes = static_cast<int32_t>(got.passes);
      p.replay = got.replay;
      p.range = std::string(per_kernel ? engine::range_per_kernel : engine::range_whole_call);
      p.notes.insert(p.notes.end(), notes.begin(), notes.end());
      attribute(p, launches, got, per_kernel);
    } catch (const counters_refused& refused) {
      p.counters_unavailable = refused.why;
      if (refused.lasting)
        lasting_refusal = refused.why;
    }
  }

  // Gives each kernel the metrics of its launches and the call the metrics of all of them.
  static void attribute(engine::profile& p, const std::vector<activity>& launches,
                        const collection& got, bool per_kernel) {
    std::string duration(engine::metric::duration);
    auto weight_of = [&](const std::map<std::string, double>& m, size_t i) {
      if (auto it = m.find(duration); it != m.end() && it->second > 0)
        return it->second;
      return i < launches.size() ? static_cast<double>(launches[i].duration_ns) : 0.0;
    };
    if (!per_kernel) {
      p.metrics = got.ranges.front();
      return;
    }
    std::vector<double> weights;
    for (size_t i = 0; i < got.ranges.size(); ++i)
      weights.push_back(weight_of(got.ranges[i], i));
    p.metrics = engine::combine_metrics(got.ranges, weights);
    if (got.ranges.size() != launches.size()) {
      p.notes.push_back("the counters saw " + std::to_string(got.ranges.size()) +
                        " kernel launches and the activity records " +
                        std::to_string(launches.size()) +
                        ": metrics are given for the whole call only");
      return;
    }
    std::map<std::string, std::vector<size_t>> by_name;
    for (size_t i = 0; i < launches.size(); ++i)
      by_name[launches[i].name].push_back(i);
    for (engine::kernel_profile& k : p.kernels) {
      std::vector<std::map<std::string, double>> sets;
      std::vector<double> kernel_weights;
      for (size_t i : by_name[k.name]) {
        sets.push_back(got.ranges[i]);
        kernel_weights.push_back(weights[i]);
      }
      k.metrics = engine::combine_metrics(sets, kernel_weights);
    }
  }
};

range_profiler::range_profiler() : impl_(std::make_unique<impl>()) {
  impl_->load();
}

range_profiler::~range_profiler() = default;

range_profiler& range_profiler::instance() {
  static range_profiler profiler;
  return profiler;
}

void range_profiler::collect(engine::profile& p, const std::vector<activity>& launches,
                             const profiled_call& call, const profile_options& options,
                             int32_t device) {
  impl_->collect(p, launches, call, options, device);
}

} // namespace ks::gpu::worker
