/* The candidate ABI: the one C function every kernel the engine evaluates exports.

   A candidate (or a task's reference) is one CUDA C++ file compiled by nvcc into a shared
   object. The bench worker dlopens it, looks up `ks_forward` and calls it with the task's
   inputs and outputs, already on the device, and the worker's stream. The function must
   launch all of its work on that stream (the worker checks with a host clock), must not
   change its inputs (checked), must write every element of every output (outputs are
   poisoned with NaN before each call) and returns 0 on success; any other value is reported
   as a launch error carrying that value.

   Shapes are fixed per task, so a candidate may specialize on them. Strides count elements,
   not bytes; the worker passes contiguous row-major tensors. This header is C so that a
   candidate needs nothing but itself and CUDA. The dtype codes are part of the persisted
   format: never renumber them. */
#ifndef KERNELSKILL_ABI_H
#define KERNELSKILL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KS_ABI_VERSION 1
#define KS_MAX_DIMS 8

/* Element types; the numbers are stored and sent over the worker protocol. */
typedef enum {
  KS_F32 = 0,
  KS_F16 = 1,
  KS_BF16 = 2,
  KS_F64 = 3,
  KS_I32 = 4,
  KS_I64 = 5,
  KS_U8 = 6 /* also bool */
} ks_dtype;

typedef struct {
  void* data;                  /* device pointer */
  int32_t dtype;               /* a ks_dtype */
  int32_t ndim;                /* 0 .. KS_MAX_DIMS */
  int64_t shape[KS_MAX_DIMS];  /* elements per dimension; unused entries are 0 */
  int64_t stride[KS_MAX_DIMS]; /* in elements; row-major contiguous from the worker */
} ks_tensor;

/* Runs the operator on `cuda_stream` (a cudaStream_t). Returns 0 on success. */
typedef int (*ks_forward_fn)(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                             int32_t n_outputs, void* cuda_stream);

#if defined(_WIN32)
#define KS_EXPORT __declspec(dllexport)
#else
#define KS_EXPORT __attribute__((visibility("default")))
#endif

/* Declared here so that a candidate's definition is checked against the ABI. */
KS_EXPORT int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                         int32_t n_outputs, void* cuda_stream);

/* Bytes per element of `dtype`, or 0 for an unknown code. */
static inline int64_t ks_dtype_size(int32_t dtype) {
  switch (dtype) {
  case KS_F32:
    return 4;
  case KS_F16:
  case KS_BF16:
    return 2;
  case KS_F64:
    return 8;
  case KS_I32:
    return 4;
  case KS_I64:
    return 8;
  case KS_U8:
    return 1;
  default:
    return 0;
  }
}

/* Number of elements of `t` (1 for a scalar, ndim == 0). */
static inline int64_t ks_numel(const ks_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i)
    n *= t->shape[i];
  return n;
}

#ifdef __cplusplus
}
#endif

#endif /* KERNELSKILL_ABI_H */
