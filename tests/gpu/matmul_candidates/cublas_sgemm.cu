// ks-flags: -lcublas
// The baseline the 3xTF32 skills are measured against: cuBLAS's float32 sgemm (FFMA, no
// TF32: the handle keeps CUBLAS_DEFAULT_MATH and TF32 is not allowed), on the worker's stream.
// Row-major C = A @ B is column-major C^T = B^T A^T, so B is cuBLAS's first operand.
// Evaluate with: kernelskill eval tasks/kernelbench-l1/1_matmul.toml cublas_sgemm.cu
//                  --allow-vendor-libraries (without it: vendor_library, for its time is cuBLAS's)
//
// Return codes: 0 ok; 1 n_inputs != 2; 2 n_outputs != 1; 3 a tensor is not f32; 5 a tensor is
// not 2-D; 7 the shapes disagree; 10 a cuBLAS error.
#include "kernelskill/abi.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

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
  static cublasHandle_t handle = nullptr;
  if (handle == nullptr && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    handle = nullptr;
    return 10;
  }
  if (cublasSetStream(handle, (cudaStream_t)cuda_stream) != CUBLAS_STATUS_SUCCESS)
    return 10;
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t status = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k,
                                      &one, (const float*)B.data, (int)n, (const float*)A.data,
                                      (int)k, &zero, (float*)C.data, (int)n);
  return status == CUBLAS_STATUS_SUCCESS ? 0 : 10;
}
