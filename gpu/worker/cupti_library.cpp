// Loads libcupti once per process. CUPTI is dlopen'ed rather than linked so that the worker
// starts where it is missing (a machine without the toolkit's extras, CI without a driver);
// the CUDA 13 names are tried first, then the toolkit's usual folders. RTLD_LOCAL keeps its
// symbols away from candidates, which are loaded into the same process.

#include "gpu/worker/cupti_library.hpp"

#include <dlfcn.h>

namespace ks::gpu::worker {

cupti_library& cupti_library::instance() {
  static cupti_library library;
  return library;
}

cupti_library::cupti_library() {
  const char* names[] = {"libcupti.so.13", "libcupti.so",
                         "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                         "/usr/local/cuda/lib64/libcupti.so.13",
                         "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13"};
  for (const char* name : names)
    if ((handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr)
      return;
  unavailable_ = "CUPTI (libcupti.so.13) cannot be loaded";
}

void* cupti_library::symbol(const char* name) const {
  return handle_ != nullptr ? dlsym(handle_, name) : nullptr;
}

std::string cupti_library::describe(CUptiResult result) const {
  using result_string_fn = CUptiResult(CUptiResult, const char**);
  if (auto* fn = function<result_string_fn>("cuptiGetResultString")) {
    const char* text = nullptr;
    if (fn(result, &text) == CUPTI_SUCCESS && text != nullptr)
      return text;
  }
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

} // namespace ks::gpu::worker
