// Composed graph sources, built: the reference of every graph case (elementwise -> scan, matmul
// -> a broadcast-bias epilogue, elementwise -> a reduction to a scalar through a shape view, a
// permute view into elementwise, narrow, flip and permute views into a matmul) and the offline
// backend's first candidates of three graph tasks (one with a group norm beside the searched
// matmul) compile with nvcc for sm_90a without a warning;
// and one composed reference runs on the CPU emulator (tests/skills/memops_cuda_emulator.hpp):
// its views are copied, its nodes called in order through the workspace, and its output equals
// a hand computation. No GPU: nvcc and g++ run on the CPU.

#include "engine/graph_spec.hpp"
#include "engine/offline_backend.hpp"
#include "engine/retrieval.hpp"
#include "engine/skill_library.hpp"
#include "engine/task_manifest.hpp"
#include "kernelskill/abi.h"
#include "tests/engine/compile_check.hpp"
#include "tests/engine/graph_cases.hpp"
#include "tests/skills/emulated_kernel.hpp"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

using namespace ks;
namespace fs = std::filesystem;

namespace {

engine::task load(const test::test_context& ctx, const std::string& manifest,
                  const std::string& main = "") {
  std::string text = manifest;
  if (!main.empty())
    text.insert(text.find("\n[["), "\nmain = \"" + main + "\"");
  fs::path path = ctx.write("g.toml", text);
  auto t = engine::load_task_manifest(path);
  INFO(text << "\n" << (t ? std::string() : t.error().message()));
  REQUIRE(t.has_value());
  return std::move(*t);
}

using source = test::labelled_source;

/// Returns the offline backend's first `count` candidates of `t` at its root.
std::vector<source> first_candidates(const engine::task& t, const engine::skill_library_ptr& skills,
                                     int64_t count) {
  engine::planning_request request;
  request.subject = &t;
  request.parent = 0;
  request.parent_lineage = {engine::reference_plan()};
  request.parent_source = t.reference_source;
  request.reference_source = t.reference_source;
  request.skills = engine::retrieve(*skills, t, nullptr, t.reference_source, {}, {});
  request.count = count;
  engine::offline_backend backend(skills);
  auto plans = backend.propose(request);
  REQUIRE(plans.has_value());
  CHECK(static_cast<int64_t>(plans->size()) == count);
  std::vector<source> out;
  for (const engine::plan& p : *plans) {
    engine::coding_request code;
    code.subject = &t;
    code.plan = p;
    code.reference_source = t.reference_source;
    auto text = backend.write_code(code);
    INFO(engine::plan_key(p) << ": " << (text ? std::string() : text.error().message()));
    REQUIRE(text.has_value());
    out.push_back({t.name + " " + engine::plan_key(p), std::move(*text)});
  }
  return out;
}

} // namespace

TEST_CASE("every composed graph reference, and the offline backend's first candidates of graph "
          "tasks, compile for sm_90a without warnings",
          "[graph][nvcc]") {
  auto compiler = test::shared_compiler();
  if (!compiler)
    KS_SKIP("no nvcc: " + compiler.error().message());
  test::test_context ctx;
  std::vector<source> sources;
  for (const test::graph_case& c : test::graph_cases())
    sources.push_back({c.label, load(ctx, c.manifest).reference_source});
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  REQUIRE(library.has_value());
  auto skills = std::make_shared<const engine::skill_library>(std::move(*library));
  // A scan skill inside the masked cumsum; a matmul skill before the epilogue.
  engine::task cumsum = load(ctx, test::masked_cumsum_manifest(), "scan");
  for (source& s : first_candidates(cumsum, skills, 4))
    sources.push_back(std::move(s));
  engine::task epilogue = load(ctx, test::matmul_bias_relu_manifest());
  CHECK(epilogue.graph->nodes[epilogue.graph->main].name == "mm"); // the most flops
  for (source& s : first_candidates(epilogue, skills, 3))
    sources.push_back(std::move(s));
  // A group norm beside the searched matmul, given its skill's first choice.
  engine::task group_norm = load(ctx, test::matmul_group_norm_manifest());
  for (source& s : first_candidates(group_norm, skills, 1)) {
    CHECK(s.text.find("cooperative_groups") != std::string::npos);
    sources.push_back(std::move(s));
  }

  test::check_compiles_clean(*compiler, sources);
}

TEST_CASE("a composed reference computes its graph on the CPU emulator: views copied, nodes "
          "called in order through the workspace",
          "[graph][emulation]") {
  test::test_context ctx;
  engine::task t = load(ctx, test::emulated_manifest());
  std::string log;
  fs::path so = test::emulated(t.reference_source, log);
  INFO(log);
  REQUIRE_FALSE(so.empty());
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  using forward_fn = int (*)(const ks_tensor*, int32_t, ks_tensor*, int32_t, void*);
  auto forward = reinterpret_cast<forward_fn>(dlsym(handle, "ks_forward"));
  auto configure = reinterpret_cast<void (*)(int, int, int, unsigned long long)>(
      dlsym(handle, "ks_emulator_configure"));
  auto emulator_error = reinterpret_cast<const char* (*)()>(dlsym(handle, "ks_emulator_error"));
  REQUIRE(forward != nullptr);
  REQUIRE(configure != nullptr);
  configure(4, 2, 3, 7);

  // A [5, 9], Bt [6, 7], bias [6]: mixed signs, no two values alike.
  std::vector<float> A(45), Bt(42), bias(6);
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = static_cast<float>(std::sin(1.0 + static_cast<double>(i)));
  for (size_t i = 0; i < Bt.size(); ++i)
    Bt[i] = static_cast<float>(std::cos(0.5 + 1.3 * static_cast<double>(i)));
  for (size_t i = 0; i < bias.size(); ++i)
    bias[i] = 0.25F * static_cast<float>(i) - 0.6F;
  // y[i][j] = relu(sum_k A[4 - i][1 + k] * Bt[j][k] + bias[j]): flip(0) of narrow(1, 1, 7) of
  // A, times Bt.permute(1, 0).
  std::vector<double> want(30);
  for (size_t i = 0; i < 5; ++i)
    for (size_t j = 0; j < 6; ++j) {
      double acc = 0;
      for (size_t k = 0; k < 7; ++k)
        acc += static_cast<double>(A[(4 - i) * 9 + 1 + k]) * static_cast<double>(Bt[j * 7 + k]);
      want[i * 6 + j] = std::max(0.0, acc + bias[j]);
    }
  auto tensor = [](void* data, std::vector<int64_t> shape) {
    ks_tensor x{};
    x.data = data;
    x.dtype = KS_F32;
    x.ndim = static_cast<int32_t>(shape.size());
    int64_t stride = 1;
    for (int32_t d = x.ndim - 1; d >= 0; --d) {
      x.shape[d] = shape[static_cast<size_t>(d)];
      x.stride[d] = stride;
      stride *= x.shape[d];
    }
    return x;
  };
  std::vector<ks_tensor> in = {tensor(A.data(), {5, 9}), tensor(Bt.data(), {6, 7}),
                               tensor(bias.data(), {6})};
  std::vector<float> y(30);
  ks_tensor out = tensor(y.data(), {5, 6});
  // Twice: the second call reuses the workspace the first allocated.
  for (int call = 0; call < 2; ++call) {
    std::fill(y.begin(), y.end(), NAN);
    int rc = forward(in.data(), 3, &out, 1, nullptr);
    INFO("call " << call << ": " << emulator_error());
    REQUIRE(rc == 0);
    for (size_t i = 0; i < y.size(); ++i) {
      INFO("y[" << i / 6 << "][" << i % 6 << "]");
      CHECK(std::fabs(y[i] - want[i]) <= 1e-6 + 1e-5 * std::fabs(want[i]));
    }
  }
  // The graph checks its own arguments as a family reference does: an extent is code 7.
  ks_tensor wrong = tensor(y.data(), {6, 5});
  CHECK(forward(in.data(), 3, &wrong, 1, nullptr) == 7);
  CHECK(forward(in.data(), 2, &out, 1, nullptr) == 1);
}
