// A matmul candidate (tasks/quickstart/1_matmul.toml) whose work is cuBLAS's sgemm, reached
// through dlopen inside ks_forward: nothing in its build names cuBLAS, yet its time is
// cuBLAS's (issue 27, "only our kernels count": accepted as 4.47x over the reference before).
// Built with -DKS_CUBLAS_LINKED and -lcublas, it calls cuBLAS directly instead, linked against
// it (a DT_NEEDED entry), as tests/gpu/matmul_candidates/cublas_sgemm.cu does.
//
// The bench worker must report vendor_library naming libcublas: the dlopen variant at its
// first call (in verification), the linked one before it is loaded at all. Where vendor
// libraries are allowed (bench.allow_vendor_libraries, eval --allow-vendor-libraries), both
// pass, their results naming libcublas.
//
// Return codes: 1 n_inputs != 2; 2 n_outputs != 1; 3 a tensor is not f32; 5 a tensor is not
// 2-D; 7 the shapes disagree; 10 a cuBLAS error; 20 no libcublas found on this machine.
#include "kernelskill/abi.h"

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef KS_CUBLAS_LINKED
#include <cublas_v2.h>
#else
#include <dlfcn.h>
#endif

namespace {

#ifdef KS_CUBLAS_LINKED

int sgemm(cudaStream_t stream, int m, int n, int k, const float* a, const float* b, float* c) {
  static cublasHandle_t handle = nullptr;
  if (handle == nullptr && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    handle = nullptr;
    return 10;
  }
  if (cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS)
    return 10;
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n) ==
                 CUBLAS_STATUS_SUCCESS
             ? 0
             : 10;
}

#else

// cuBLAS's v2 entry points, declared here so that no cuBLAS header or library is needed to
// build: a handle is an opaque pointer, its status and operation enums are ints (0: success,
// 0: no transpose).
typedef int (*create_fn)(void** handle);
typedef int (*set_stream_fn)(void* handle, cudaStream_t stream);
typedef int (*sgemm_fn)(void* handle, int transa, int transb, int m, int n, int k,
                        const float* alpha, const float* a, int lda, const float* b, int ldb,
                        const float* beta, float* c, int ldc);

struct cublas_entry_points {
  create_fn create = nullptr;
  set_stream_fn set_stream = nullptr;
  sgemm_fn sgemm = nullptr;
  void* handle = nullptr;
};

// Finds libcublas where the loader would, else in CUDA's usual folder.
bool load_cublas(cublas_entry_points& e) {
  static const char* const names[] = {"libcublas.so.13",
                                      "libcublas.so.12",
                                      "libcublas.so",
                                      "/usr/local/cuda/lib64/libcublas.so.13",
                                      "/usr/local/cuda/lib64/libcublas.so.12",
                                      "/usr/local/cuda/lib64/libcublas.so"};
  void* library = nullptr;
  for (const char* name : names)
    if ((library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr)
      break;
  if (library == nullptr)
    return false;
  e.create = (create_fn)dlsym(library, "cublasCreate_v2");
  e.set_stream = (set_stream_fn)dlsym(library, "cublasSetStream_v2");
  e.sgemm = (sgemm_fn)dlsym(library, "cublasSgemm_v2");
  return e.create != nullptr && e.set_stream != nullptr && e.sgemm != nullptr;
}

int sgemm(cudaStream_t stream, int m, int n, int k, const float* a, const float* b, float* c) {
  static cublas_entry_points e;
  static bool loaded = false;
  if (!loaded) {
    if (!load_cublas(e))
      return 20;
    loaded = true;
  }
  if (e.handle == nullptr && e.create(&e.handle) != 0) {
    e.handle = nullptr;
    return 10;
  }
  if (e.set_stream(e.handle, stream) != 0)
    return 10;
  const float one = 1.0f, zero = 0.0f;
  return e.sgemm(e.handle, 0, 0, n, m, k, &one, b, n, a, k, &zero, c, n) == 0 ? 0 : 10;
}

#endif

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 2)
    return 1;
  if (n_outputs != 1)
    return 2;
  const ks_tensor& A = inputs[0];
  const ks_tensor& B = inputs[1];
  ks_tensor& C = outputs[0];
  if (A.dtype != KS_F32 || B.dtype != KS_F32 || C.dtype != KS_F32)
    return 3;
  if (A.ndim != 2 || B.ndim != 2 || C.ndim != 2)
    return 5;
  const int64_t m = A.shape[0], k = A.shape[1], n = B.shape[1];
  if (B.shape[0] != k || C.shape[0] != m || C.shape[1] != n)
    return 7;
  // Row-major C = A @ B is column-major C^T = B^T A^T: B is cuBLAS's first operand.
  return sgemm((cudaStream_t)cuda_stream, (int)m, (int)n, (int)k, (const float*)A.data,
               (const float*)B.data, (float*)C.data);
}
