#pragma once

// Which shared objects in the bench worker's process are a candidate's to use, and which hold
// somebody else's kernels (issue 27, "only our kernels count"). A candidate's time is
// reported as kernelskill's work; a candidate that calls cuBLAS, cuDNN or any other library
// of kernels reports the time that library's authors earned. The worker lists the objects a
// candidate brought into its process (gpu/library_watch.hpp) and asks this file which of
// them are vendor libraries.
//
// The rule is an allowlist, not a blocklist: a library is allowed only when it is what the
// worker itself runs on. That is the dynamic loader and the C and C++ runtimes (libc, libm,
// libdl, libpthread, librt, the NSS modules libc loads, libstdc++, libgcc_s), the CUDA
// runtime (candidates are linked with -cudart shared, so they share the worker's), the driver
// (libcuda) and what it loads lazily (libnvidia-*), and CUPTI with the libraries it loads for
// the worker's stream audit and profiler. Everything else is a vendor library: named after
// the table in vendor_libraries.cpp when it is a known one ("cublas", "cudnn", ...), after
// its file otherwise, so that a renamed copy of cuBLAS, a library a candidate wrote to disk,
// or one nobody thought of is caught too. Only the file name counts, up to its ".so"; the
// folder does not (the same library lives in different folders on different hosts).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::gpu {

/// Returns the name of the vendor library `path` is: "cublas", "cudnn", ... for a known one,
/// else its file name without "lib" and ".so" ("foo" for /opt/x/libfoo.so.1); or nullopt
/// when `path` (a path or a bare soname) is a library the worker allows.
std::optional<std::string> vendor_library_name(std::string_view path);

/// Returns those of `paths` that are vendor libraries, in their order, each once.
std::vector<std::string> vendor_libraries_among(const std::vector<std::string>& paths);

/// Returns the names of `libraries` (vendor libraries' paths), each once, in their order,
/// joined by ", ": "cublas, cublasLt". What a label says: "uses cublas, cublasLt".
std::string vendor_library_names(const std::vector<std::string>& libraries);

/// Returns each of `libraries` with its name: "cublas (/usr/lib/libcublas.so.13), cublasLt
/// (/usr/lib/libcublasLt.so.13)".
std::string describe_vendor_libraries(const std::vector<std::string>& libraries);

} // namespace ks::gpu
