#include "gpu/vendor_libraries.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace ks::gpu {

namespace {

// What the worker itself runs on, by the file name's stem (the part before ".so").
constexpr std::array<std::string_view, 19> allowed_stems{
    // the C and C++ runtimes
    "libc", "libm", "libmvec", "libdl", "libpthread", "librt", "libutil", "libresolv", "libanl",
    "libstdc++", "libgcc_s",
    // the CUDA runtime and driver
    "libcuda", "libcudart", "libcudadebugger",
    // CUPTI and what it loads for the stream audit and the profiler
    "libcupti", "libnvperf_host", "libnvperf_target", "libpcsamplingutil", "libcheckpoint"};

// Families allowed by prefix: the loader (ld-linux-x86-64, ld-linux-aarch64), the driver's
// lazily loaded parts (libnvidia-ptxjitcompiler, libnvidia-gpucomp, ...), libc's NSS modules,
// and the kernel's vDSO, should a loader name it.
constexpr std::array<std::string_view, 5> allowed_prefixes{"ld-linux", "ld64", "libnvidia-",
                                                           "libnss_", "linux-vdso"};

// Known vendor libraries by prefix of the stem, the more specific first: the name says which
// library a label names ("uses cublas").
constexpr std::array<std::pair<std::string_view, std::string_view>, 30> known_vendors{{
    {"libcublasLt", "cublasLt"},
    {"libcublas", "cublas"},
    {"libnvblas", "nvblas"},
    {"libcudnn", "cudnn"},
    {"libcufft", "cufft"},
    {"libcurand", "curand"},
    {"libcusparseLt", "cusparseLt"},
    {"libcusparse", "cusparse"},
    {"libcusolver", "cusolver"},
    {"libcutensor", "cutensor"},
    {"libcudss", "cudss"},
    {"libnccl", "nccl"},
    {"libnvshmem", "nvshmem"},
    {"libnpp", "npp"},
    {"libnvjpeg", "nvjpeg"},
    {"libcufile", "cufile"},
    {"libnvinfer", "tensorrt"},
    {"libcutlass", "cutlass"},
    {"libtorch", "libtorch"},
    {"libc10", "libtorch"},
    {"libnvrtc", "nvrtc"},
    {"libnvJitLink", "nvJitLink"},
    {"libnvvm", "nvvm"},
    {"libmagma", "magma"},
    {"libdnnl", "onednn"},
    {"libmkl", "mkl"},
    {"libopenblas", "openblas"},
    {"libblas", "blas"},
    {"liblapack", "lapack"},
    {"libtriton", "triton"},
}};

// Returns the file name of `path` up to its ".so" ("libcublas" for /x/libcublas.so.13).
std::string_view stem_of(std::string_view path) {
  if (auto slash = path.rfind('/'); slash != std::string_view::npos)
    path.remove_prefix(slash + 1);
  for (size_t at = path.find(".so"); at != std::string_view::npos; at = path.find(".so", at + 1))
    if (at + 3 == path.size() || path[at + 3] == '.')
      return path.substr(0, at);
  return path;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

} // namespace

std::optional<std::string> vendor_library_name(std::string_view path) {
  std::string_view stem = stem_of(path);
  if (std::find(allowed_stems.begin(), allowed_stems.end(), stem) != allowed_stems.end())
    return std::nullopt;
  for (std::string_view prefix : allowed_prefixes)
    if (starts_with(stem, prefix))
      return std::nullopt;
  for (const auto& [prefix, name] : known_vendors)
    if (starts_with(stem, prefix))
      return std::string(name);
  if (starts_with(stem, "lib") && stem.size() > 3)
    stem.remove_prefix(3);
  return stem.empty() ? std::string(path) : std::string(stem);
}

std::vector<std::string> vendor_libraries_among(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths)
    if (vendor_library_name(path) && std::find(out.begin(), out.end(), path) == out.end())
      out.push_back(path);
  return out;
}

std::string vendor_library_names(const std::vector<std::string>& libraries) {
  std::vector<std::string> names;
  for (const std::string& path : libraries) {
    std::string name = vendor_library_name(path).value_or(std::string(stem_of(path)));
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(std::move(name));
  }
  std::string out;
  for (const std::string& name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string describe_vendor_libraries(const std::vector<std::string>& libraries) {
  std::string out;
  for (const std::string& path : libraries) {
    std::string name = vendor_library_name(path).value_or(std::string(stem_of(path)));
    out += (out.empty() ? "" : ", ") + name + " (" + path + ")";
  }
  return out;
}

} // namespace ks::gpu
