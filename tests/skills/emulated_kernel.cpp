// Running rendered CUDA on the CPU emulator (emulated_kernel.hpp): the source rewrite, the
// host compile cached by content, and ks_forward on typed host tensors.

#include "tests/skills/emulated_kernel.hpp"

#include "tests/test_context.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>

namespace ks::test {

namespace fs = std::filesystem;

std::string emulation_source(const std::string& cuda) {
  std::string src;
  {
    static const std::regex shared(
        R"((extern\s+)?__shared__\s+([\w:<>, ]+?)\s+(\w+)\s*((?:\[[^\]]*\])*)\s*;)");
    int id = 0;
    auto it = std::sregex_iterator(cuda.begin(), cuda.end(), shared);
    size_t at = 0;
    for (; it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      src += cuda.substr(at, static_cast<size_t>(m.position()) - at);
      if (m[1].matched)
        src +=
            m[2].str() + "* " + m[3].str() + " = (" + m[2].str() + "*)::ks_emu::dynamic_shared();";
      else
        src += "auto& " + m[3].str() + " = ::ks_emu::block_shared<" + m[2].str() + m[4].str() +
               ">(" + std::to_string(++id) + ");";
      at = static_cast<size_t>(m.position() + m.length());
    }
    src += cuda.substr(at);
  }
  std::string out;
  size_t pos = 0;
  for (;;) {
    size_t open = src.find("<<<", pos);
    if (open == std::string::npos) {
      out += src.substr(pos);
      return out;
    }
    size_t begin = open; // the kernel's name, template arguments included
    if (src[begin - 1] == '>') {
      int depth = 0;
      do {
        --begin;
        depth += src[begin] == '>' ? 1 : src[begin] == '<' ? -1 : 0;
      } while (depth > 0);
    }
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(src[begin - 1])) ||
                         src[begin - 1] == '_' || src[begin - 1] == ':'))
      --begin;
    size_t close = src.find(">>>", open);
    std::vector<std::string> config{""};
    int depth = 0;
    for (size_t i = open + 3; i < close; ++i) {
      char c = src[i];
      depth += (c == '(' || c == '[' || c == '{') ? 1 : (c == ')' || c == ']' || c == '}') ? -1 : 0;
      if (c == ',' && depth == 0)
        config.emplace_back();
      else
        config.back() += c;
    }
    size_t args_open = src.find('(', close);
    size_t args_close = args_open;
    depth = 0;
    do {
      depth += src[args_close] == '(' ? 1 : src[args_close] == ')' ? -1 : 0;
      ++args_close;
    } while (depth > 0);
    out += src.substr(pos, begin - pos);
    out += "::ks_emu::launch(dim3(" + config[0] + "), dim3(" + config[1] + "), (size_t)(" +
           (config.size() > 2 ? config[2] : std::string("0")) + "), [=]() { " +
           src.substr(begin, open - begin) + src.substr(args_open, args_close - args_open) + "; })";
    pos = args_close;
  }
}

std::vector<host_build> emulated_all(const std::vector<std::string>& cudas) {
  // cuda_runtime.h stands for the emulator: a folder of the build's own, written once (renamed
  // into place, so that tests running at once never read half of it).
  fs::path include = bin_dir().parent_path() / "emulator-include";
  fs::create_directories(include);
  std::string header = "#pragma once\n#include \"" +
                       (source_dir() / "tests" / "skills" / "memops_cuda_emulator.hpp").string() +
                       "\"\n";
  // cuda_runtime.h and cooperative_groups.h are both the emulator.
  for (const std::string name : {"cuda_runtime.h", "cooperative_groups.h"})
    if (read_file(include / name) != header) {
      fs::path tmp = include / (name + ".tmp-" + std::to_string(::getpid()));
      std::ofstream(tmp) << header;
      fs::rename(tmp, include / name);
    }
  std::vector<std::string> sources;
  sources.reserve(cudas.size());
  for (const std::string& cuda : cudas)
    sources.push_back(emulation_source(cuda));
  return host_compile_all(
      sources, {"-std=c++17", "-O1", "-shared", "-fPIC", "-w",
                "-DKS_EMULATE", // a template's emulator calls in place of its inline PTX
                "-I" + include.string(), "-I" + (source_dir() / "gpu" / "include").string()});
}

fs::path emulated(const std::string& cuda, std::string& log) {
  host_build built = std::move(emulated_all({cuda}).front());
  log = std::move(built.log);
  return built.shared_object;
}

ks_tensor contiguous_tensor(void* data, int32_t dtype, const std::vector<int64_t>& shape) {
  ks_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = shape[static_cast<size_t>(d)];
    t.stride[d] = stride;
    stride *= shape[static_cast<size_t>(d)];
  }
  return t;
}

namespace {

using forward_fn = int (*)(const ks_tensor*, int32_t, ks_tensor*, int32_t, void*);

/// A tensor's host storage at its dtype, `shift` elements into its allocation.
struct host_tensor {
  engine::dtype type = engine::dtype::f32;
  std::vector<int64_t> shape;
  int shift = 0;
  std::vector<unsigned char> storage;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  int64_t size() const { return engine::size_of(type); }
  unsigned char* at(int64_t i) { return storage.data() + (shift + i) * size(); }

  /// Fills every element, the slack included, with the poison of its dtype.
  void poison() {
    if (type == engine::dtype::f32)
      for (size_t i = 0; i + 4 <= storage.size(); i += 4) {
        const float nan = NAN;
        std::memcpy(storage.data() + i, &nan, 4);
      }
    else
      std::fill(storage.begin(), storage.end(), 0x5a);
  }

  void set(int64_t i, double v) {
    switch (type) {
    case engine::dtype::f32: {
      const auto f = static_cast<float>(v);
      std::memcpy(at(i), &f, 4);
      break;
    }
    case engine::dtype::i64: {
      const auto x = static_cast<int64_t>(v);
      std::memcpy(at(i), &x, 8);
      break;
    }
    case engine::dtype::i32: {
      const auto x = static_cast<int32_t>(v);
      std::memcpy(at(i), &x, 4);
      break;
    }
    case engine::dtype::u8:
      *at(i) = static_cast<unsigned char>(v);
      break;
    default:
      break; // not emulated: the caller checks the dtypes
    }
  }

  double get(int64_t i) {
    switch (type) {
    case engine::dtype::f32: {
      float f;
      std::memcpy(&f, at(i), 4);
      return f;
    }
    case engine::dtype::i64: {
      int64_t x;
      std::memcpy(&x, at(i), 8);
      return static_cast<double>(x);
    }
    case engine::dtype::i32: {
      int32_t x;
      std::memcpy(&x, at(i), 4);
      return x;
    }
    case engine::dtype::u8:
      return *at(i);
    default:
      return NAN;
    }
  }

  ks_tensor abi() { return contiguous_tensor(at(0), static_cast<int32_t>(type), shape); }
};

host_tensor allocate(const engine::tensor_spec& spec, int shift) {
  host_tensor t;
  t.type = spec.type;
  t.shape = spec.shape;
  t.shift = shift;
  // 8 elements of slack and 16-byte room: a shifted tensor still fits.
  t.storage.assign(static_cast<size_t>((t.numel() + 8) * t.size() + 16), 0);
  t.poison();
  return t;
}

bool emulated_type(engine::dtype t) {
  return t == engine::dtype::f32 || t == engine::dtype::i64 || t == engine::dtype::i32 ||
         t == engine::dtype::u8;
}

} // namespace

emulated_run run_emulated(const fs::path& so, const engine::task& t,
                          const std::vector<std::vector<double>>& inputs, int shift, int calls,
                          uint64_t seed, const emulated_gpu& gpu) {
  emulated_run outcome;
  for (const auto* tensors : {&t.inputs, &t.outputs})
    for (const engine::tensor_spec& spec : *tensors)
      if (!emulated_type(spec.type)) {
        outcome.error = std::string("the emulator runs no ") + engine::to_string(spec.type) +
                        " tensor ('" + spec.name + "')";
        return outcome;
      }
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    outcome.error = std::string("dlopen: ") + dlerror();
    return outcome;
  }
  auto forward = reinterpret_cast<forward_fn>(dlsym(handle, "ks_forward"));
  auto configure = reinterpret_cast<void (*)(int, int, int, unsigned long long)>(
      dlsym(handle, "ks_emulator_configure"));
  auto error = reinterpret_cast<const char* (*)()>(dlsym(handle, "ks_emulator_error"));
  configure(gpu.sm_count, gpu.blocks_per_sm, gpu.concurrent_blocks, seed);
  std::vector<host_tensor> in;
  std::vector<ks_tensor> in_abi;
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    in.push_back(allocate(t.inputs[i], shift));
    for (int64_t e = 0; e < in.back().numel(); ++e)
      in.back().set(e, inputs[i][static_cast<size_t>(e)]);
  }
  std::vector<std::vector<unsigned char>> before;
  for (host_tensor& h : in) {
    before.push_back(h.storage);
    in_abi.push_back(h.abi());
  }
  std::vector<host_tensor> out;
  std::vector<ks_tensor> out_abi;
  for (const engine::tensor_spec& spec : t.outputs)
    out.push_back(allocate(spec, shift));
  for (host_tensor& h : out)
    out_abi.push_back(h.abi());
  for (int call = 0; call < calls && outcome.error.empty(); ++call) {
    for (host_tensor& h : out)
      h.poison(); // an unwritten output fails
    int rc = forward(in_abi.data(), static_cast<int32_t>(in_abi.size()), out_abi.data(),
                     static_cast<int32_t>(out_abi.size()), nullptr);
    if (rc != 0)
      outcome.error = "ks_forward returned " + std::to_string(rc) + ": " + error();
  }
  for (size_t i = 0; i < in.size() && outcome.error.empty(); ++i)
    if (in[i].storage != before[i])
      outcome.error = "the candidate changed input " + std::to_string(i);
  for (host_tensor& h : out) // every output in turn (a reduce of several maps has more)
    for (int64_t e = 0; e < h.numel(); ++e)
      outcome.output.push_back(h.get(e));
  // The shared object stays loaded: its static state (workspaces) must outlive nothing here,
  // and unloading a library whose fibers ran is not worth the risk in a test.
  return outcome;
}

std::string mismatch(const engine::task& t, const std::vector<double>& got,
                     const std::vector<double>& want) {
  if (got.size() != want.size())
    return "the output has " + std::to_string(got.size()) + " elements, not " +
           std::to_string(want.size());
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if ((std::isnan(want[i]) && std::isnan(got[i])) || (std::isinf(want[i]) && got[i] == want[i]))
      continue;
    double d = std::fabs(got[i] - want[i]);
    if (!(d <= t.tol.atol + t.tol.rtol * std::fabs(want[i])))
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", the reference " +
             std::to_string(want[i]);
    diff2 += d * d;
    ref2 += want[i] * want[i];
  }
  double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (rel > t.tol.norm_rel)
    return "norm-relative error " + std::to_string(rel) + " over " + std::to_string(t.tol.norm_rel);
  return {};
}

} // namespace ks::test
