// The matmul skills' kernels, run: every template is rendered for a spread of shapes (odd
// M, N and K, a dim of 1, batched with and without a shared operand, each transpose), compiled
// by the host C++ compiler against tests/skills/matmul_cuda_emulator.hpp, and run on the CPU
// with both cp.async timings; C must match a double-precision product at float32 accuracy.
// The emulator's tensor core takes its fragment layouts from the PTX ISA, apart from the
// kernels, so a fragment, pipeline or edge bug shows here as a wrong product, with no GPU.
// A second test checks the numerical design of 3xTF32 against a tensor core that truncates.

#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
#include "engine/task.hpp"
#include "kernelskill/abi.h"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace ks;
using engine::param_values;

namespace {

namespace fs = std::filesystem;

/// One product to check: C[(batch,) m, n] = A @ B with these storage choices.
struct shape_case {
  std::string label;
  int64_t batch = 1;
  int64_t m = 1, n = 1, k = 1;
  bool transpose_a = false;
  bool transpose_b = false;
  bool shared_b = false; ///< B is 2-D while A and C are batched
};

/// Returns a matmul task of `c` with the params and derived values of docs/tasks.md.
engine::task make_task(const shape_case& c) {
  engine::task t;
  t.name = "matmul_" + c.label;
  t.family = "matmul";
  auto dims = [&](int64_t rows, int64_t cols, bool batched) {
    return batched && c.batch > 1 ? std::vector<int64_t>{c.batch, rows, cols}
                                  : std::vector<int64_t>{rows, cols};
  };
  t.inputs.push_back(
      {"A", engine::dtype::f32, dims(c.transpose_a ? c.k : c.m, c.transpose_a ? c.m : c.k, true)});
  t.inputs.push_back({"B", engine::dtype::f32,
                      dims(c.transpose_b ? c.n : c.k, c.transpose_b ? c.k : c.n, !c.shared_b)});
  t.outputs.push_back({"C", engine::dtype::f32, dims(c.m, c.n, true)});
  t.params = {{"m", c.m},
              {"n", c.n},
              {"k", c.k},
              {"batch", c.batch},
              {"transpose_a", c.transpose_a},
              {"transpose_b", c.transpose_b},
              {"lda", c.transpose_a ? c.m : c.k},
              {"ldb", c.transpose_b ? c.k : c.n},
              {"ldc", c.n}};
  t.tol = {2e-4, 1e-4, 1e-5};
  return t;
}

/// Host memory that ends at a page that may not be touched: a read or write past the end
/// faults. The start is 16-byte aligned (as cudaMalloc's are), so up to 12 bytes of slack
/// sit before the guard; they hold a canary that check_canary() reads back.
class guarded_buffer {
public:
  explicit guarded_buffer(size_t floats) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = floats * sizeof(float);
    const size_t padded = (bytes_ + 15) / 16 * 16;
    const size_t data_pages = (padded + page - 1) / page;
    mapped_ = (data_pages + 1) * page;
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base_ = static_cast<unsigned char*>(p);
    REQUIRE(mprotect(base_ + data_pages * page, page, PROT_NONE) == 0);
    data_ = base_ + data_pages * page - padded;
    std::memset(data_ + bytes_, 0x5a, padded - bytes_);
    slack_ = padded - bytes_;
  }
  ~guarded_buffer() { munmap(base_, mapped_); }
  guarded_buffer(const guarded_buffer&) = delete;
  guarded_buffer& operator=(const guarded_buffer&) = delete;

  float* data() noexcept { return reinterpret_cast<float*>(data_); }

  /// Checks that nothing wrote the slack between the end and the guard page.
  bool canary_intact() const {
    for (size_t i = 0; i < slack_; ++i)
      if (data_[bytes_ + i] != 0x5a)
        return false;
    return true;
  }

private:
  unsigned char* base_ = nullptr;
  unsigned char* data_ = nullptr;
  size_t mapped_ = 0;
  size_t bytes_ = 0;
  size_t slack_ = 0;
};

/// A rendered template compiled for the emulator and loaded.
class emulated_candidate {
public:
  using forward_fn = int (*)(const ks_tensor*, int32_t, ks_tensor*, int32_t, void*);
  using configure_fn = void (*)(int, int, uint64_t);
  using error_fn = const char* (*)();

  explicit emulated_candidate(const fs::path& shared_object) {
    handle_ = dlopen(shared_object.c_str(), RTLD_NOW | RTLD_LOCAL);
    INFO(dlerror());
    REQUIRE(handle_ != nullptr);
    forward = reinterpret_cast<forward_fn>(dlsym(handle_, "ks_forward"));
    configure = reinterpret_cast<configure_fn>(dlsym(handle_, "ks_emulator_configure"));
    error = reinterpret_cast<error_fn>(dlsym(handle_, "ks_emulator_error"));
    REQUIRE(forward != nullptr);
    REQUIRE(configure != nullptr);
    REQUIRE(error != nullptr);
  }
  ~emulated_candidate() { dlclose(handle_); }
  emulated_candidate(const emulated_candidate&) = delete;
  emulated_candidate& operator=(const emulated_candidate&) = delete;

  forward_fn forward = nullptr;
  configure_fn configure = nullptr;
  error_fn error = nullptr;

private:
  void* handle_ = nullptr;
};

/// The host compiler's flags for a candidate of the emulator.
std::vector<std::string> emulator_flags() {
  return {"-std=c++17",
          "-O1",
          "-fPIC",
          "-shared",
          "-fvisibility=hidden",
          "-fno-gnu-unique",
          "-DKS_EMULATE",
          "-Wall",
          "-Wextra",
          "-Werror",
          "-Wno-unknown-pragmas",
          "-I" + (test::source_dir() / "tests" / "skills").string(),
          "-I" + (test::source_dir() / "gpu" / "include").string()};
}

/// Compiles each of `sources` for the emulator, one host compiler per core, cached by content
/// (tests/test_compiler.hpp); returns their shared objects, or fails the test with the
/// compiler's messages.
std::vector<fs::path> compile_for_emulator(const std::vector<std::string>& sources,
                                           const std::vector<std::string>& names) {
  std::vector<test::host_build> builds = test::host_compile_all(sources, emulator_flags());
  std::vector<fs::path> objects;
  for (size_t i = 0; i < builds.size(); ++i) {
    INFO(names[i] << ":\n" << builds[i].log);
    REQUIRE_FALSE(builds[i].shared_object.empty());
    objects.push_back(builds[i].shared_object);
  }
  return objects;
}

ks_tensor tensor_of(float* data, const std::vector<int64_t>& shape) {
  ks_tensor t{};
  t.data = data;
  t.dtype = KS_F32;
  t.ndim = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = shape[static_cast<size_t>(d)];
    t.stride[d] = stride;
    stride *= shape[static_cast<size_t>(d)];
  }
  return t;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Runs `candidate` on random normal inputs of `subject` and returns the norm-relative error
/// against a double-precision product; checks every element within the task's tolerance, the
/// inputs unchanged and nothing written past the output.
double run_and_compare(emulated_candidate& candidate, const engine::task& subject,
                       const shape_case& c, bool deferred_copies, bool truncating_mma,
                       uint64_t seed) {
  const auto& a_shape = subject.inputs[0].shape;
  const auto& b_shape = subject.inputs[1].shape;
  const auto& c_shape = subject.outputs[0].shape;
  guarded_buffer a(static_cast<size_t>(numel(a_shape)));
  guarded_buffer b(static_cast<size_t>(numel(b_shape)));
  guarded_buffer out(static_cast<size_t>(numel(c_shape)));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < numel(a_shape); ++i)
    a.data()[i] = normal(rng);
  for (int64_t i = 0; i < numel(b_shape); ++i)
    b.data()[i] = normal(rng);
  for (int64_t i = 0; i < numel(c_shape); ++i)
    out.data()[i] = std::nanf("");
  std::vector<float> a_copy(a.data(), a.data() + numel(a_shape));
  std::vector<float> b_copy(b.data(), b.data() + numel(b_shape));

  ks_tensor inputs[2] = {tensor_of(a.data(), a_shape), tensor_of(b.data(), b_shape)};
  ks_tensor outputs[1] = {tensor_of(out.data(), c_shape)};
  candidate.configure(deferred_copies ? 1 : 0, truncating_mma ? 1 : 0, seed);
  const int code = candidate.forward(inputs, 2, outputs, 1, nullptr);
  INFO("ks_forward returned " << code << "; emulator: " << candidate.error());
  REQUIRE(code == 0);
  CHECK(std::equal(a_copy.begin(), a_copy.end(), a.data()));
  CHECK(std::equal(b_copy.begin(), b_copy.end(), b.data()));
  CHECK(out.canary_intact());

  double err2 = 0, ref2 = 0;
  int64_t bad = 0;
  std::string first_bad;
  const int64_t a_batch = a_shape.size() == 3 ? c.m * c.k : 0;
  const int64_t b_batch = b_shape.size() == 3 ? c.k * c.n : 0;
  for (int64_t p = 0; p < c.batch; ++p)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < c.k; ++q) {
          const float x = a_copy[static_cast<size_t>(p * a_batch +
                                                     (c.transpose_a ? q * c.m + i : i * c.k + q))];
          const float y = b_copy[static_cast<size_t>(p * b_batch +
                                                     (c.transpose_b ? j * c.k + q : q * c.n + j))];
          sum += static_cast<double>(x) * static_cast<double>(y);
        }
        const double got = out.data()[(p * c.m + i) * c.n + j];
        const double e = got - sum;
        err2 += e * e;
        ref2 += sum * sum;
        if (!(std::fabs(e) <= subject.tol.atol + subject.tol.rtol * std::fabs(sum))) {
          if (bad++ == 0)
            first_bad = "C[" + std::to_string(p) + "][" + std::to_string(i) + "][" +
                        std::to_string(j) + "] = " + std::to_string(got) + ", expected " +
                        std::to_string(sum);
        }
      }
  INFO(bad << " elements out of tolerance; the first: " << first_bad);
  CHECK(bad == 0);
  return ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
}

/// Instantiations tried besides the planner's first choice, by template: small tiles that
/// reach the corners of each kernel (one m16 product per warp, eight n8 products, two
/// stages, split-K, no fold) while keeping the emulation quick. Each overrides the first
/// valid instantiation and is kept when valid for the task.
const std::map<std::string, std::vector<param_values>>& probes() {
  static const std::map<std::string, std::vector<param_values>> table = {
      {"tf32x3_mma_sync",
       {
           {{"bm", 32}, {"bn", 32}, {"bk", 16}, {"warps_m", 2}, {"warps_n", 2}, {"stages", 2}},
           {{"bm", 64},
            {"bn", 64},
            {"bk", 32},
            {"warps_m", 2},
            {"warps_n", 2},
            {"stages", 3},
            {"split_k", 2}},
           {{"bm", 64},
            {"bn", 32},
            {"bk", 16},
            {"warps_m", 1},
            {"warps_n", 2},
            {"stages", 5},
            {"fold", 0}},
           {{"bm", 32},
            {"bn", 64},
            {"bk", 16},
            {"warps_m", 2},
            {"warps_n", 1},
            {"stages", 4},
            {"group_m", 1}},
       }},
      {"tf32x3_wgmma",
       {
           {{"wg_m", 1}, {"wg_n", 1}, {"wn", 64}, {"bk", 16}, {"stages", 2}},
           {{"wg_m", 2}, {"wg_n", 1}, {"wn", 64}, {"bk", 32}, {"stages", 3}, {"fold", 0}},
           {{"wg_m", 1}, {"wg_n", 2}, {"wn", 64}, {"bk", 16}, {"stages", 4}, {"group_m", 1}},
           {{"wg_m", 1}, {"wg_n", 1}, {"wn", 128}, {"bk", 32}, {"stages", 3}},
       }},
      {"register_blocked",
       {
           {{"bm", 32}, {"bn", 32}, {"bk", 8}, {"tm", 2}, {"tn", 2}},
           {{"bm", 64}, {"bn", 32}, {"bk", 16}, {"tm", 4}, {"tn", 2}},
       }},
  };
  return table;
}

const std::vector<shape_case>& shape_cases() {
  static const std::vector<shape_case> cases = {
      {"aligned_64", 1, 64, 64, 64, false, false},
      {"odd_67x45x37", 1, 67, 45, 37, false, false},
      {"m1", 1, 1, 40, 33, false, false},
      {"n1", 1, 50, 1, 20, false, false},
      {"k1", 1, 30, 28, 1, false, false},
      {"batched_ta", 3, 33, 40, 24, true, false},
      {"batched_tb", 2, 40, 36, 52, false, true},
      {"ta_tb_aligned", 1, 48, 72, 40, true, true},
      {"ta_tb_odd", 1, 70, 66, 131, true, true},
      {"batched_shared_b", 3, 20, 24, 36, false, false, true},
      {"ragged_k_tiles", 1, 96, 130, 100, false, false},
  };
  return cases;
}

} // namespace

namespace {

/// Renders every template of skill `id` for every shape case, compiles it for the emulator and
/// checks its product with both cp.async timings. Each case runs one instantiation: the
/// planner's first choice, and in turn (every other case) one of the template's probes, so
/// that the corners meet several shapes at the cost of one compile per case. Every rendering
/// is compiled first, one host compiler per core.
void check_skill_on_emulator(const std::string& id) {
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  const engine::skill* s = nullptr;
  for (const engine::skill& candidate : library->skills)
    if (candidate.id == id)
      s = &candidate;
  REQUIRE(s != nullptr);
  struct emulated_run {
    std::string label; // template, case and plan
    engine::task subject;
    const shape_case* shape;
  };
  std::vector<emulated_run> planned;
  std::vector<std::string> sources;
  std::vector<std::string> names;
  for (const engine::skill_template& tp : s->templates) {
    size_t probe_index = 0;
    size_t case_index = 0;
    for (const shape_case& c : shape_cases()) {
      engine::task subject = make_task(c);
      auto space = engine::space_of(tp, subject, "");
      REQUIRE(space.has_value());
      auto first = engine::first_valid(tp, *space, subject);
      REQUIRE(first.has_value());
      INFO(s->id << "/" << tp.name << " has no valid instantiation for " << c.label);
      REQUIRE(first->has_value());
      param_values chosen = **first;
      auto it = probes().find(tp.name);
      if (case_index++ % 2 == 1 && it != probes().end() && !it->second.empty()) {
        for (size_t tries = 0; tries < it->second.size(); ++tries) {
          param_values v = **first;
          for (const auto& [name, value] : it->second[probe_index++ % it->second.size()])
            v[name] = value;
          auto why = engine::check_params(tp, *space, v, subject);
          REQUIRE(why.has_value());
          if (!*why) {
            chosen = v;
            break;
          }
        }
      }
      std::string plan;
      for (const auto& [name, value] : chosen)
        plan += " " + name + "=" + std::to_string(value);
      std::string label = s->id + "/" + tp.name + " for " + c.label + ":" + plan;
      INFO(label);
      auto text = engine::render(*s, tp, subject, chosen, "");
      INFO((text ? "" : text.error().message()));
      REQUIRE(text.has_value());
      planned.push_back({label, subject, &c});
      sources.push_back(*text);
      names.push_back(tp.name + "_" + c.label);
    }
  }
  std::vector<fs::path> objects = compile_for_emulator(sources, names);
  int64_t runs = 0;
  for (size_t i = 0; i < planned.size(); ++i) {
    const emulated_run& run = planned[i];
    INFO(run.label);
    emulated_candidate candidate(objects[i]);
    for (bool deferred : {true, false}) {
      INFO((deferred ? "copies land at their wait" : "copies land at once"));
      double norm_rel = run_and_compare(candidate, run.subject, *run.shape, deferred, false,
                                        static_cast<uint64_t>(runs + 1));
      CHECK(norm_rel <= run.subject.tol.norm_rel);
    }
    ++runs;
  }
  CHECK(runs >= static_cast<int64_t>(shape_cases().size()));
}

} // namespace

TEST_CASE("the SIMT tiled matmul computes C = A @ B at float32 accuracy for odd, transposed, "
          "batched and degenerate shapes on the CPU emulator",
          "[skills][emulation]") {
  check_skill_on_emulator("matmul_tiled");
}

TEST_CASE("the 3xTF32 mma.sync matmul computes C = A @ B at float32 accuracy for odd, "
          "transposed, batched and degenerate shapes on the CPU emulator, whichever way "
          "cp.async completes",
          "[skills][emulation]") {
  check_skill_on_emulator("matmul_tf32x3_mma");
}

TEST_CASE("the split-K matmul adds its slices to C = A @ B at float32 accuracy for odd, "
          "transposed, batched and degenerate shapes on the CPU emulator",
          "[skills][emulation]") {
  check_skill_on_emulator("matmul_split_k");
}

TEST_CASE("the 3xTF32 wgmma matmul computes C = A @ B at float32 accuracy for odd, "
          "transposed, batched and degenerate shapes on the CPU emulator, its B descriptors "
          "read as CUTLASS's canonical no-swizzle K-major layout",
          "[skills][emulation]") {
  check_skill_on_emulator("matmul_tf32x3_wgmma");
}

TEST_CASE("every matmul skill of the library is one the emulator tests check", "[skills]") {
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  REQUIRE(library.has_value());
  const std::vector<std::string> checked = {"matmul_tiled", "matmul_tf32x3_mma", "matmul_split_k",
                                            "matmul_tf32x3_wgmma"};
  for (const engine::skill& s : library->skills)
    if (s.families == std::vector<std::string>{"matmul"} && !s.templates.empty()) {
      INFO(s.id);
      CHECK(std::find(checked.begin(), checked.end(), s.id) != checked.end());
    }
}

TEST_CASE("with a tensor core that truncates its sums, the 3xTF32 kernel's per-tile fold keeps "
          "K = 4096 within float32's tolerance, and straight accumulation does not",
          "[skills][emulation]") {
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  REQUIRE(library.has_value());
  const engine::skill* s = nullptr;
  for (const engine::skill& candidate : library->skills)
    if (candidate.id == "matmul_tf32x3_mma")
      s = &candidate;
  REQUIRE(s != nullptr);
  const engine::skill_template& tp = s->templates.front();
  shape_case c{"long_k", 1, 16, 16, 4096, false, false};
  engine::task subject = make_task(c);
  subject.tol = {2e-3, 1e-4, 1e-5}; // the KernelBench 4096^3 task's tolerance
  auto space = engine::space_of(tp, subject, "");
  REQUIRE(space.has_value());
  double error[2] = {0, 0};
  for (int64_t fold : {1, 0}) {
    param_values v = {{"bm", 32},    {"bn", 32},     {"bk", 32},     {"warps_m", 2}, {"warps_n", 2},
                      {"stages", 3}, {"group_m", 1}, {"split_k", 1}, {"fold", fold}};
    auto why = engine::check_params(tp, *space, v, subject);
    REQUIRE(why.has_value());
    INFO((*why ? **why : ""));
    REQUIRE_FALSE(*why);
    auto text = engine::render(*s, tp, subject, v, "");
    REQUIRE(text.has_value());
    emulated_candidate candidate(
        compile_for_emulator({*text}, {"fold" + std::to_string(fold)}).front());
    if (fold == 1) {
      error[1] = run_and_compare(candidate, subject, c, true, true, 7);
    } else {
      // Straight accumulation may put elements out of tolerance: only its norm is compared.
      guarded_buffer a(size_t{16} * 4096), b(size_t{4096} * 16), out(size_t{16} * 16);
      std::mt19937_64 rng(7);
      std::normal_distribution<float> normal;
      for (int64_t i = 0; i < int64_t{16} * 4096; ++i) {
        a.data()[i] = normal(rng);
      }
      for (int64_t i = 0; i < int64_t{16} * 4096; ++i)
        b.data()[i] = normal(rng);
      ks_tensor inputs[2] = {tensor_of(a.data(), {16, 4096}), tensor_of(b.data(), {4096, 16})};
      ks_tensor outputs[1] = {tensor_of(out.data(), {16, 16})};
      candidate.configure(1, 1, 7);
      REQUIRE(candidate.forward(inputs, 2, outputs, 1, nullptr) == 0);
      double err2 = 0, ref2 = 0;
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
          double sum = 0;
          for (int q = 0; q < 4096; ++q)
            sum += static_cast<double>(a.data()[i * 4096 + q]) * b.data()[q * 16 + j];
          err2 += (out.data()[i * 16 + j] - sum) * (out.data()[i * 16 + j] - sum);
          ref2 += sum * sum;
        }
      error[0] = std::sqrt(err2 / ref2);
    }
  }
  INFO("norm-relative error with the fold " << error[1] << ", without " << error[0]);
  CHECK(error[1] <= 2e-6);
  CHECK(error[0] > 1e-5);
}
