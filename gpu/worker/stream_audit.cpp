// The stream audit (see stream_audit.hpp).
//
// CUPTI is dlopen'ed rather than linked (cupti_library.hpp), so that the worker starts where
// CUPTI is missing (a machine without the CUDA toolkit's extras, CI without a driver) and
// says why the audit is off. Only its activity API is used, whose kernel, memcpy and memset records
// carry the stream each piece of work ran on; the activity API needs no profiling permission,
// unlike hardware counters. Records arrive in buffers that CUPTI hands back from its own thread or
// from cuptiActivityFlushAll, hence the mutex around the collected list.
//
// Record layouts are those of the CUPTI headers this file is compiled with (CUDA 13:
// Kernel10, Memcpy6, Memset4, MemcpyPtoP4). A newer CUPTI appends fields to these structs,
// never moves the ones read here.

#include "gpu/worker/stream_audit.hpp"

#include "gpu/worker/cupti_library.hpp"

#include <cupti.h>
#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>

namespace ks::gpu::worker {

namespace {

constexpr size_t buffer_bytes = size_t{8} << 20;
constexpr size_t buffer_alignment = 8;

struct cupti_api {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
  decltype(&cuptiGetStreamIdEx) stream_id = nullptr;
};

std::mutex collected_mutex;
std::vector<activity> collected;

std::string demangle(const char* name) {
  if (name == nullptr)
    return "?";
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr)
    return name;
  std::string text = out;
  std::free(out);
  return text;
}

const char* copy_kind_name(uint8_t kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    return "memcpy HtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    return "memcpy DtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    return "memcpy DtoD";
  default:
    return "memcpy";
  }
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(buffer_alignment, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  *max_records = 0;
}

cupti_api* api_for_callbacks = nullptr;

void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<activity> found;
  CUpti_Activity* record = nullptr;
  while (api_for_callbacks && valid > 0 &&
         api_for_callbacks->next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    activity a;
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      a.kind = activity::kind_type::kernel;
      a.name = demangle(k->name);
      a.stream = k->streamId;
      a.duration_ns = k->end > k->start ? k->end - k->start : 0;
      a.start_ns = k->start;
      a.end_ns = k->end;
      a.grid[0] = k->gridX;
      a.grid[1] = k->gridY;
      a.grid[2] = k->gridZ;
      a.block[0] = k->blockX;
      a.block[1] = k->blockY;
      a.block[2] = k->blockZ;
      a.registers = k->registersPerThread;
      a.static_shared_bytes = k->staticSharedMemory;
      a.dynamic_shared_bytes = k->dynamicSharedMemory;
      a.local_bytes_per_thread = k->localMemoryPerThread;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      a.kind = activity::kind_type::memcpy;
      a.name = copy_kind_name(m->copyKind);
      a.stream = m->streamId;
      a.bytes = m->bytes;
      a.duration_ns = m->end > m->start ? m->end - m->start : 0;
      a.start_ns = m->start;
      a.end_ns = m->end;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
      a.kind = activity::kind_type::memcpy;
      a.name = "memcpy peer";
      a.stream = m->streamId;
      a.bytes = m->bytes;
      a.duration_ns = m->end > m->start ? m->end - m->start : 0;
      a.start_ns = m->start;
      a.end_ns = m->end;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      a.kind = activity::kind_type::memset;
      a.name = "memset";
      a.stream = m->streamId;
      a.bytes = m->bytes;
      a.duration_ns = m->end > m->start ? m->end - m->start : 0;
      a.start_ns = m->start;
      a.end_ns = m->end;
      break;
    }
    default:
      continue;
    }
    found.push_back(std::move(a));
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(collected_mutex);
  collected.insert(collected.end(), std::make_move_iterator(found.begin()),
                   std::make_move_iterator(found.end()));
}

constexpr CUpti_ActivityKind audited_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET};

} // namespace

struct stream_audit::impl {
  cupti_api api;
  std::string unavailable;
  bool callbacks_registered = false;

  std::string describe(CUptiResult r) const { return cupti_library::instance().describe(r); }

  void load() {
    const cupti_library& library = cupti_library::instance();
    if (!library.loaded()) {
      unavailable = library.unavailable_reason();
      return;
    }
    auto bind = [&](auto& fn, const char* symbol) {
      if (!library.bind(fn, symbol) && unavailable.empty())
        unavailable = std::string("CUPTI lacks ") + symbol;
    };
    bind(api.register_callbacks, "cuptiActivityRegisterCallbacks");
    bind(api.enable, "cuptiActivityEnable");
    bind(api.disable, "cuptiActivityDisable");
    bind(api.flush_all, "cuptiActivityFlushAll");
    bind(api.next_record, "cuptiActivityGetNextRecord");
    bind(api.dropped_records, "cuptiActivityGetNumDroppedRecords");
    bind(api.stream_id, "cuptiGetStreamIdEx");
  }
};

stream_audit::stream_audit() : impl_(std::make_unique<impl>()) {
  impl_->load();
}

stream_audit::~stream_audit() = default;

stream_audit& stream_audit::instance() {
  static stream_audit audit;
  return audit;
}

bool stream_audit::available() const noexcept {
  return impl_->unavailable.empty();
}

const std::string& stream_audit::unavailable_reason() const noexcept {
  return impl_->unavailable;
}

uint32_t stream_audit::stream_id(cudaStream_t stream) {
  uint32_t id = activity::invalid_stream;
  if (!available())
    return id;
  if (auto r = impl_->api.stream_id(nullptr, reinterpret_cast<CUstream>(stream), 0, &id);
      r != CUPTI_SUCCESS) {
    impl_->unavailable = "cuptiGetStreamIdEx failed: " + impl_->describe(r);
    return activity::invalid_stream;
  }
  return id;
}

bool stream_audit::begin() {
  if (!available())
    return false;
  auto& api = impl_->api;
  if (!impl_->callbacks_registered) {
    api_for_callbacks = &impl_->api;
    if (auto r = api.register_callbacks(on_buffer_requested, on_buffer_completed);
        r != CUPTI_SUCCESS) {
      impl_->unavailable = "CUPTI refused its activity buffers: " + impl_->describe(r);
      return false;
    }
    impl_->callbacks_registered = true;
  }
  {
    std::lock_guard<std::mutex> lock(collected_mutex);
    collected.clear();
  }
  size_t ignored = 0;
  api.dropped_records(nullptr, 0, &ignored);
  for (CUpti_ActivityKind kind : audited_kinds)
    if (auto r = api.enable(kind); r != CUPTI_SUCCESS) {
      impl_->unavailable = "CUPTI cannot record activity kind " +
                           std::to_string(static_cast<int>(kind)) + ": " + impl_->describe(r);
      for (CUpti_ActivityKind k : audited_kinds)
        api.disable(k);
      return false;
    }
  return true;
}

std::vector<activity> stream_audit::end(uint64_t& dropped) {
  auto& api = impl_->api;
  api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind kind : audited_kinds)
    api.disable(kind);
  size_t lost = 0;
  api.dropped_records(nullptr, 0, &lost);
  dropped = lost;
  std::lock_guard<std::mutex> lock(collected_mutex);
  return std::exchange(collected, {});
}

} // namespace ks::gpu::worker
