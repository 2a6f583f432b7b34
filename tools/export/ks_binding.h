// What every op of a package written by `kernelskill export` shares: a kernel is a shared
// object of its own (kernels/<op>.so, built by nvcc exactly as the campaign built it), found
// by dlopen with RTLD_LOCAL, so that two winners that both define ks_forward (and perhaps a
// kernel of the same name) never meet; ks_export_bind() loads one, and call() runs it.
//
// call() is the binding of one op: it checks every input against the shape and dtype the
// kernel was tuned and verified for (a clear error naming both, never a silent wrong answer),
// makes the inputs contiguous (the ABI's tensors are row-major), allocates the outputs with
// PyTorch's allocator on the inputs' device, and calls ks_forward on PyTorch's current stream
// of that device. The stream comes through c10's device-generic interface (VirtualGuardImpl),
// which a CUDA build of torch fills in at run time: the binding compiles against torch's
// headers alone, with no CUDA toolkit and no libtorch_cuda, so the package builds against a
// CPU wheel of torch as well.
//
// Included by csrc/ops.cpp alone (the definitions below live in that one translation unit).
#pragma once

#include "kernelskill/abi.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace ks_export {

/// One tensor of an op, as the campaign's task states it.
struct tensor_spec {
  const char* name;
  int32_t dtype; ///< a ks_dtype
  int32_t ndim;
  int64_t shape[KS_MAX_DIMS];
};

/// One op: its name (kernelskill::<op>) and its tensors.
struct op_spec {
  const char* op;
  const tensor_spec* inputs;
  int32_t n_inputs;
  const tensor_spec* outputs;
  int32_t n_outputs;
};

/// The loaded kernels, by op name; the error of a kernel that did not load.
struct kernel_table {
  std::mutex lock;
  std::map<std::string, ks_forward_fn> forward;
  std::map<std::string, std::string> error;
};

inline kernel_table& kernels() {
  static kernel_table table;
  return table;
}

inline at::ScalarType scalar_type_of(int32_t dtype) {
  switch (dtype) {
  case KS_F32:
    return at::kFloat;
  case KS_F16:
    return at::kHalf;
  case KS_BF16:
    return at::kBFloat16;
  case KS_F64:
    return at::kDouble;
  case KS_I32:
    return at::kInt;
  case KS_I64:
    return at::kLong;
  default:
    return at::kByte;
  }
}

inline const char* dtype_name(int32_t dtype) {
  static const char* const names[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8"};
  return dtype >= 0 && dtype <= KS_U8 ? names[dtype] : "?";
}

inline std::string describe(const tensor_spec& s) {
  std::ostringstream out;
  out << s.name << ": " << dtype_name(s.dtype) << "[";
  for (int32_t d = 0; d < s.ndim; ++d)
    out << (d ? ", " : "") << s.shape[d];
  out << "]";
  return out.str();
}

/// Returns the manifest's name of `type` ("f32"), or torch's where the ABI has none.
inline std::string dtype_name_of(at::ScalarType type) {
  for (int32_t dtype = KS_F32; dtype <= KS_U8; ++dtype)
    if (scalar_type_of(dtype) == type)
      return dtype_name(dtype);
  return type == at::kBool ? "bool" : std::string(c10::toString(type));
}

inline std::string describe(const char* name, const at::Tensor& t) {
  std::ostringstream out;
  out << name << ": " << dtype_name_of(t.scalar_type()) << "[";
  for (int64_t d = 0; d < t.dim(); ++d)
    out << (d ? ", " : "") << t.size(d);
  out << "] on " << t.device();
  return out.str();
}

/// Checks whether `t` is what `s` states; a bool tensor stands for u8 (a mask, one byte of 0
/// or 1 an element, as the ABI reads it).
inline bool matches(const tensor_spec& s, const at::Tensor& t) {
  at::ScalarType want = scalar_type_of(s.dtype);
  if (t.scalar_type() != want && !(s.dtype == KS_U8 && t.scalar_type() == at::kBool))
    return false;
  if (t.dim() != s.ndim)
    return false;
  for (int32_t d = 0; d < s.ndim; ++d)
    if (t.size(d) != s.shape[d])
      return false;
  return true;
}

inline ks_tensor describe_for_abi(const tensor_spec& s, const at::Tensor& t) {
  ks_tensor k{};
  k.data = t.data_ptr();
  k.dtype = s.dtype;
  k.ndim = s.ndim;
  for (int32_t d = 0; d < s.ndim; ++d) {
    k.shape[d] = t.size(d);
    k.stride[d] = t.stride(d);
  }
  return k;
}

/// Returns what a ks_forward return code means (families' references and graph tasks use
/// these; a candidate may return others).
inline std::string code_meaning(int code) {
  static const char* const meanings[] = {"ok",
                                         "n_inputs is not the task's",
                                         "n_outputs is not the task's",
                                         "an input's dtype is not the task's",
                                         "an output's dtype is not the task's",
                                         "an input's rank is not the task's",
                                         "an output's rank is not the task's",
                                         "an extent is not the task's",
                                         "a tensor is not contiguous",
                                         "too large for the grid",
                                         "a CUDA error at launch",
                                         "the workspace could not be allocated"};
  if (code >= 0 && code <= 11)
    return meanings[code];
  if (code >= 100)
    return "node " + std::to_string(code / 100 - 1) + " of the graph returned " +
           std::to_string(code % 100) + " (" + code_meaning(code % 100) + ")";
  return "a code of the kernel's own";
}

/// Runs op `s` on `inputs`: the checks, the outputs, the kernel on the current stream.
inline std::vector<at::Tensor> call(const op_spec& s, std::vector<at::Tensor> inputs) {
  const std::string op = std::string("kernelskill::") + s.op;
  TORCH_CHECK(static_cast<int32_t>(inputs.size()) == s.n_inputs, op, " takes ", s.n_inputs,
              " tensors, got ", inputs.size());
  for (int32_t i = 0; i < s.n_inputs; ++i) {
    const at::Tensor& t = inputs[static_cast<size_t>(i)];
    TORCH_CHECK(t.defined(), op, ": input ", s.inputs[i].name, " is undefined");
    TORCH_CHECK(t.is_cuda(), op, " runs on CUDA tensors; ", describe(s.inputs[i].name, t),
                " (move the inputs to the GPU, or call it with fallback=True to run its torch "
                "expression there)");
    TORCH_CHECK(t.device() == inputs[0].device(), op, ": every input must be on one device; ",
                describe(s.inputs[0].name, inputs[0]), ", ", describe(s.inputs[i].name, t));
    if (!matches(s.inputs[i], t)) {
      std::ostringstream want;
      for (int32_t j = 0; j < s.n_inputs; ++j)
        want << (j ? ", " : "") << describe(s.inputs[j]);
      TORCH_CHECK(false, op, " was tuned and verified for ", want.str(), " only; got ",
                  describe(s.inputs[i].name, t),
                  " (call it with fallback=True to run its torch expression for other shapes "
                  "and dtypes)");
    }
  }
  const c10::Device device = inputs[0].device();
  c10::DeviceGuard guard(device);
  ks_forward_fn forward = nullptr;
  {
    kernel_table& table = kernels();
    std::lock_guard<std::mutex> hold(table.lock);
    auto found = table.forward.find(s.op);
    if (found != table.forward.end()) {
      forward = found->second;
    } else {
      auto why = table.error.find(s.op);
      TORCH_CHECK(false, op, ": its kernel is not loaded: ",
                  why != table.error.end() ? why->second
                                           : std::string("import the package that exports it"));
    }
  }
  std::vector<ks_tensor> in(static_cast<size_t>(s.n_inputs));
  for (int32_t i = 0; i < s.n_inputs; ++i) {
    at::Tensor& t = inputs[static_cast<size_t>(i)];
    if (!t.is_contiguous())
      t = t.contiguous();
    in[static_cast<size_t>(i)] = describe_for_abi(s.inputs[i], t);
  }
  std::vector<at::Tensor> outputs;
  std::vector<ks_tensor> out(static_cast<size_t>(s.n_outputs));
  for (int32_t o = 0; o < s.n_outputs; ++o) {
    const tensor_spec& spec = s.outputs[o];
    outputs.push_back(at::empty(c10::IntArrayRef(spec.shape, static_cast<size_t>(spec.ndim)),
                                inputs[0].options().dtype(scalar_type_of(spec.dtype))));
    out[static_cast<size_t>(o)] = describe_for_abi(spec, outputs.back());
  }
  c10::impl::VirtualGuardImpl impl(device.type());
  void* stream = impl.getStream(device).native_handle();
  const int code = forward(in.data(), s.n_inputs, out.data(), s.n_outputs, stream);
  TORCH_CHECK(code == 0, op, ": the kernel's ks_forward returned ", code, " (", code_meaning(code),
              ")");
  return outputs;
}

} // namespace ks_export

/// Loads the kernel of op `op` from the shared object `path` (called by the package's Python
/// side through ctypes); returns 0, or 1 with the reason in `error` (at most `error_size`
/// bytes), which a later call of the op also reports.
extern "C" __attribute__((visibility("default"))) int
ks_export_bind(const char* op, const char* path, char* error, int error_size) {
  ks_export::kernel_table& table = ks_export::kernels();
  std::string why;
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* text = dlerror();
    why = std::string("cannot load ") + path + ": " + (text != nullptr ? text : "?");
  } else if (void* symbol = dlsym(handle, "ks_forward"); symbol == nullptr) {
    why = std::string(path) + " exports no ks_forward";
  } else {
    std::lock_guard<std::mutex> hold(table.lock);
    table.forward[op] = reinterpret_cast<ks_forward_fn>(symbol);
    table.error.erase(op);
    return 0;
  }
  std::lock_guard<std::mutex> hold(table.lock);
  table.forward.erase(op);
  table.error[op] = why;
  if (error != nullptr && error_size > 0) {
    std::strncpy(error, why.c_str(), static_cast<size_t>(error_size) - 1);
    error[error_size - 1] = '\0';
  }
  return 1;
}
