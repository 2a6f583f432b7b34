#pragma once

// CUPTI, loaded once per worker process at run time (dlopen), for both of its users: the
// stream audit of the time job (activity API) and the profile job (activity API and range
// profiler). A worker without CUPTI still starts; each user asks for the symbols it needs
// and says why it is off when one is missing.

#include <cupti_result.h>

#include <string>
#include <type_traits>

namespace ks::gpu::worker {

/// The process's handle on libcupti.
class cupti_library {
public:
  /// Returns the process's library, loading it on first use.
  static cupti_library& instance();

  /// Checks whether libcupti was loaded.
  bool loaded() const noexcept { return handle_ != nullptr; }

  /// Returns why it was not loaded ("" when it was).
  const std::string& unavailable_reason() const noexcept { return unavailable_; }

  /// Returns the function `name` as a pointer of type F, or nullptr when the library is not
  /// loaded or lacks it.
  template <class F>
  F* function(const char* name) const {
    static_assert(std::is_function_v<F>);
    return reinterpret_cast<F*>(symbol(name));
  }

  /// Binds `fn` to the function `name`; returns false (fn null) when it is missing.
  template <class Fn>
  bool bind(Fn*& fn, const char* name) const {
    fn = reinterpret_cast<Fn*>(symbol(name));
    return fn != nullptr;
  }

  /// Returns CUPTI's words for `result` ("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" and the like),
  /// or its number when CUPTI cannot say.
  std::string describe(CUptiResult result) const;

  cupti_library(const cupti_library&) = delete;
  cupti_library& operator=(const cupti_library&) = delete;

private:
  cupti_library();
  void* symbol(const char* name) const;

  void* handle_ = nullptr;
  std::string unavailable_;
};

} // namespace ks::gpu::worker
