#include "gpu/vendor_libraries.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace ks;

TEST_CASE("what the worker runs on is no vendor library", "[vendor]") {
  for (const char* path : {
           "/lib/x86_64-linux-gnu/libc.so.6",
           "libm.so.6",
           "/lib64/ld-linux-x86-64.so.2",
           "/lib/ld-linux-aarch64.so.1",
           "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
           "libgcc_s.so.1",
           "libdl.so.2",
           "libpthread.so.0",
           "librt.so.1",
           "libnss_files.so.2",
           "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
           "/usr/local/cuda/lib64/libcudart.so.13",
           "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.580.65.06",
           "libnvidia-gpucomp.so.580.65.06",
           "/usr/local/cuda/lib64/libcupti.so.13",
           "libnvperf_host.so",
           "libnvperf_target.so",
           "libpcsamplingutil.so",
           "linux-vdso.so.1",
       }) {
    CAPTURE(path);
    CHECK_FALSE(gpu::vendor_library_name(path).has_value());
  }
}

TEST_CASE("a vendor library is named after its family, an unknown one after its file", "[vendor]") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"/usr/local/cuda/lib64/libcublas.so.13", "cublas"},
      {"libcublasLt.so.13", "cublasLt"},
      {"/usr/lib/libcudnn_ops.so.9", "cudnn"},
      {"libcudnn.so.9", "cudnn"},
      {"libcufft.so.12", "cufft"},
      {"libcufftw.so.12", "cufft"},
      {"libcurand.so.10", "curand"},
      {"libcusparse.so.12", "cusparse"},
      {"libcusparseLt.so.0", "cusparseLt"},
      {"libcusolver.so.12", "cusolver"},
      {"libcusolverMg.so.12", "cusolver"},
      {"libnccl.so.2", "nccl"},
      {"/opt/torch/lib/libtorch_cuda.so", "libtorch"},
      {"libc10_cuda.so", "libtorch"},
      {"libcutlass.so", "cutlass"},
      {"libnvinfer.so.10", "tensorrt"},
      {"libnvrtc.so.13", "nvrtc"},
      // Not known, or only named like something allowed: refused all the same.
      {"/tmp/x/libmystery.so.1", "mystery"},
      {"/home/u/.cache/kernelskill/compile/ab12/kernel.so", "kernel"},
      {"libcudart_fake.so", "cudart_fake"},
      {"libcuda-shim.so.1", "cuda-shim"},
      {"libz.so.1", "z"},
  };
  for (const auto& [path, name] : cases) {
    CAPTURE(path);
    CHECK(gpu::vendor_library_name(path) == name);
  }
}

TEST_CASE("a list of loaded objects is filtered to its vendor libraries and described",
          "[vendor]") {
  const std::vector<std::string> loaded{
      "/lib/x86_64-linux-gnu/libc.so.6",       "/usr/local/cuda/lib64/libcublas.so.13",
      "/usr/local/cuda/lib64/libcudart.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13",
      "/usr/local/cuda/lib64/libcublas.so.13",
  };
  auto vendor = gpu::vendor_libraries_among(loaded);
  CHECK(vendor == std::vector<std::string>{"/usr/local/cuda/lib64/libcublas.so.13",
                                           "/usr/local/cuda/lib64/libcublasLt.so.13"});
  CHECK(gpu::vendor_library_names(vendor) == "cublas, cublasLt");
  CHECK(gpu::describe_vendor_libraries(vendor) ==
        "cublas (/usr/local/cuda/lib64/libcublas.so.13), cublasLt "
        "(/usr/local/cuda/lib64/libcublasLt.so.13)");
  CHECK(gpu::vendor_library_names({"libcudnn_ops.so.9", "libcudnn_cnn.so.9"}) == "cudnn");
  CHECK(gpu::vendor_libraries_among({"libc.so.6", "libm.so.6"}).empty());
}
