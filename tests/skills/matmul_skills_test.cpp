// The matmul skills' kernels, run: every template is rendered for a spread of tasks, each
// loaded from a manifest as a user's would be (odd M, N and K, a dim of 1, batched with and
// without a shared operand, each transpose, an A of rank 3 or 4 folded into the rows of one
// product, products scaled by alpha, upper and lower triangles of square and non-square
// products, batched or transposed), compiled by the host C++ compiler against
// tests/skills/matmul_cuda_emulator.hpp, and run on the CPU with both cp.async timings; C must
// match a double-precision product at float32 accuracy, and a triangular task's other triangle
// be exactly 0. For the tensor-core kernels, the blocks that issued tensor-core products must be
// exactly those whose tile holds an output the task keeps: a tile wholly in the zeroed triangle
// skips its k loop. The emulator's tensor core takes its fragment layouts from the PTX ISA,
// apart from the kernels, so a fragment, pipeline or edge bug shows here as a wrong product,
// with no GPU. A second test checks the numerical design of 3xTF32 against a tensor core that
// truncates, and a third compiles every matmul skill for scaled, triangular and folded tasks
// with nvcc for sm_90a (the suites' tasks, which skill_templates_test.cpp compiles, are plain
// products).

#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
#include "engine/task.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "kernelskill/abi.h"
#include "tests/skills/all_instantiations.hpp"
#include "tests/skills/emulated_kernel.hpp"
#include "tests/skills/mma_emulated_kernel.hpp"
#include "tests/skills/nvcc_spread.hpp"
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
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace ks;
using engine::param_values;
using test::all_instantiations;
using test::compile_for_emulator;
using test::emulated_candidate;
using test::guarded_buffer;

namespace {

namespace fs = std::filesystem;

/// One product to check: C[(batch,) m, n] = A @ B with these storage choices.
struct shape_case {
  std::string label;
  int64_t batch = 1;
  int64_t m = 1, n = 1, k = 1;
  bool transpose_a = false;
  bool transpose_b = false;
  bool shared_b = false;     ///< B is 2-D while A and C are batched
  std::vector<int64_t> fold; ///< A and C are [fold..., m / prod(fold), ...], folded into m rows
  double alpha = 1.0;        ///< C = alpha * A @ B
  int triangle = 0;          ///< 1: torch.triu of the product, -1: torch.tril, 0: all of it
  bool shared_a = false;     ///< A is 2-D while B and C are batched
  bool epilogue = false;     ///< C = relu(alpha * A @ B + bias) - 0.5 * s, bias [n], s [m, 1]

  /// Checks whether C[i][j] is 0 for the triangle kept.
  bool zeroed(int64_t i, int64_t j) const {
    return (triangle > 0 && j < i) || (triangle < 0 && j > i);
  }
};

/// Returns `v` as a TOML float.
std::string toml_float(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string s = text;
  return s.find_first_of(".e") == std::string::npos ? s + ".0" : s;
}

std::string toml_shape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return s + "]";
}

/// Returns the matmul task of `c`, written as a manifest in `context`'s folder and loaded, so
/// that the templates see the family's own derived values (docs/tasks.md).
engine::task make_task(const test::test_context& context, const shape_case& c) {
  auto dims = [&](int64_t rows, int64_t cols, bool batched) {
    return batched && c.batch > 1 ? std::vector<int64_t>{c.batch, rows, cols}
                                  : std::vector<int64_t>{rows, cols};
  };
  std::vector<int64_t> a = dims(c.transpose_a ? c.k : c.m, c.transpose_a ? c.m : c.k, !c.shared_a);
  std::vector<int64_t> b = dims(c.transpose_b ? c.n : c.k, c.transpose_b ? c.k : c.n, !c.shared_b);
  std::vector<int64_t> out = dims(c.m, c.n, true);
  if (!c.fold.empty()) { // A's leading dims folded into m: one product (docs/tasks.md)
    int64_t lead = 1;
    for (int64_t d : c.fold)
      lead *= d;
    a = c.fold;
    a.insert(a.end(), {c.m / lead, c.k});
    out = c.fold;
    out.insert(out.end(), {c.m / lead, c.n});
  }
  std::string params = "transpose_a = " + std::string(c.transpose_a ? "true" : "false") +
                       ", transpose_b = " + (c.transpose_b ? "true" : "false");
  if (c.alpha != 1.0)
    params += ", alpha = " + toml_float(c.alpha);
  if (c.triangle != 0)
    params += std::string(", triangle = ") + (c.triangle > 0 ? "\"upper\"" : "\"lower\"");
  std::string extra;
  if (c.epilogue) {
    params += ", epilogue = \"relu(acc + bias) - 0.5 * s\"";
    extra = ", { name = \"bias\", dtype = \"f32\", shape = [" + std::to_string(c.n) +
            "] }, { name = \"s\", dtype = \"f32\", shape = [" + std::to_string(c.m) + ", 1] }";
  }
  const std::string manifest =
      "name = \"matmul_" + c.label + "\"\nfamily = \"matmul\"\n" +
      "inputs = [ { name = \"A\", dtype = \"f32\", shape = " + toml_shape(a) +
      " }, { name = \"B\", dtype = \"f32\", shape = " + toml_shape(b) + " }" + extra + " ]\n" +
      "outputs = [ { name = \"C\", dtype = \"f32\", shape = " + toml_shape(out) + " } ]\n" +
      "params = { " + params + " }\n" +
      "tolerance = { atol = 2e-4, rtol = 1e-4, norm_rel = 1e-5 }\n";
  auto t = engine::load_task_manifest(context.write("matmul_" + c.label + ".toml", manifest));
  INFO(manifest << (t ? "" : t.error().message()));
  REQUIRE(t.has_value());
  for (const auto& [name, want] :
       std::map<std::string, int64_t>{{"m", c.m}, {"n", c.n}, {"k", c.k}, {"batch", c.batch}}) {
    auto it = t->derived.scalars.find(name);
    INFO("derived " << name);
    REQUIRE(it != t->derived.scalars.end());
    REQUIRE(std::get<int64_t>(it->second) == want);
  }
  return *t;
}

ks_tensor tensor_of(float* data, const std::vector<int64_t>& shape) {
  return test::contiguous_tensor(data, KS_F32, shape);
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Runs `candidate` on random normal inputs of `subject` and returns the norm-relative error
/// against a double-precision product; checks every element within the task's tolerance (a
/// triangular task's other triangle exactly 0), the inputs unchanged and nothing written past
/// the output.
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
  std::vector<float> bias(static_cast<size_t>(c.n)), s(static_cast<size_t>(c.m));
  for (float& v : bias)
    v = normal(rng);
  for (float& v : s)
    v = normal(rng);

  ks_tensor inputs[4] = {tensor_of(a.data(), a_shape), tensor_of(b.data(), b_shape),
                         tensor_of(bias.data(), {c.n}), tensor_of(s.data(), {c.m, 1})};
  ks_tensor outputs[1] = {tensor_of(out.data(), c_shape)};
  candidate.configure(deferred_copies ? 1 : 0, truncating_mma ? 1 : 0, seed);
  const int code = candidate.forward(inputs, c.epilogue ? 4 : 2, outputs, 1, nullptr);
  INFO("ks_forward returned " << code << "; emulator: " << candidate.error());
  REQUIRE(code == 0);
  CHECK(std::equal(a_copy.begin(), a_copy.end(), a.data()));
  CHECK(std::equal(b_copy.begin(), b_copy.end(), b.data()));
  CHECK(out.canary_intact());

  double err2 = 0, ref2 = 0;
  int64_t bad = 0, not_zero = 0, zeroed = 0;
  std::string first_bad, first_not_zero;
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
        double want = c.zeroed(i, j) ? 0.0 : c.alpha * sum;
        if (c.epilogue) // in float32, as the kernels apply it to the float they store
          want = std::max(static_cast<float>(want) + bias[static_cast<size_t>(j)], 0.0f) -
                 0.5f * s[static_cast<size_t>(i)];
        const double got = out.data()[(p * c.m + i) * c.n + j];
        if (c.zeroed(i, j)) {
          ++zeroed;
          if (!(got == 0.0) && not_zero++ == 0) // NaN too: an output never written
            first_not_zero = "C[" + std::to_string(p) + "][" + std::to_string(i) + "][" +
                             std::to_string(j) + "] = " + std::to_string(got);
        }
        const double e = got - want;
        err2 += e * e;
        ref2 += want * want;
        if (!(std::fabs(e) <= subject.tol.atol + subject.tol.rtol * std::fabs(want))) {
          if (bad++ == 0)
            first_bad = "C[" + std::to_string(p) + "][" + std::to_string(i) + "][" +
                        std::to_string(j) + "] = " + std::to_string(got) + ", expected " +
                        std::to_string(want);
        }
      }
  INFO(bad << " elements out of tolerance; the first: " << first_bad);
  CHECK(bad == 0);
  INFO(not_zero << " of the " << zeroed
                << " elements of the zeroed triangle are not 0; the first: " << first_not_zero);
  CHECK(not_zero == 0);
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
      // (a rank-3 A beside a 2-D B is batched only when transposed: otherwise it folds)
      {"batched_shared_b_ta", 3, 20, 24, 36, true, false, true},
      {"ragged_k_tiles", 1, 96, 130, 100, false, false},
      {"folded_a_tb", 1, 45, 40, 36, false, true, false, {3}},
      // Scaled products: attention scores (Q @ K^T / sqrt(d), batched), a negative alpha, an
      // A of rank 4 folded into m.
      {.label = "scores_batched_tb",
       .batch = 3,
       .m = 40,
       .n = 44,
       .k = 24,
       .transpose_b = true,
       .alpha = 0.20412414523193151},
      {.label = "alpha_negative_odd", .m = 33, .n = 50, .k = 70, .alpha = -2.5},
      // A linear layer's bias and activation, and a per-row term, applied as C is stored:
      // batched (the index runs over batches), odd and scaled.
      {.label = "epilogue_batched_tb",
       .batch = 2,
       .m = 37,
       .n = 45,
       .k = 40,
       .transpose_b = true,
       .epilogue = true},
      {.label = "epilogue_odd_alpha", .m = 67, .n = 33, .k = 70, .alpha = 0.5, .epilogue = true},
      {.label = "folded4_alpha", .m = 90, .n = 40, .k = 36, .fold = {2, 3}, .alpha = 0.5},
      // Triangular products (torch.triu / tril): square and not, sizes off the tiles, so that
      // tiles lie wholly in the zeroed triangle, on the diagonal, and wholly kept; batched,
      // with a shared B, transposed and scaled (the family refuses a triangle of a folded A:
      // torch keeps one per matrix).
      {.label = "upper_alpha", .m = 70, .n = 70, .k = 37, .alpha = 0.5, .triangle = 1},
      {.label = "lower_square", .m = 130, .n = 130, .k = 45, .triangle = -1},
      {.label = "upper_wide", .m = 40, .n = 150, .k = 33, .triangle = 1},
      {.label = "upper_tall", .m = 150, .n = 40, .k = 20, .triangle = 1},
      {.label = "lower_wide", .m = 40, .n = 150, .k = 20, .triangle = -1},
      {.label = "lower_tall", .m = 150, .n = 45, .k = 33, .triangle = -1},
      {.label = "upper_batched", .batch = 2, .m = 70, .n = 66, .k = 20, .triangle = 1},
      {.label = "lower_batched_shared_a",
       .batch = 3,
       .m = 50,
       .n = 50,
       .k = 16,
       .triangle = -1,
       .shared_a = true},
      {"lower_batched_ta", 2, 40, 33, 20, true, false, false, {}, -2.0, -1},
      {.label = "upper_ta_tb",
       .m = 66,
       .n = 70,
       .k = 40,
       .transpose_a = true,
       .transpose_b = true,
       .triangle = 1},
      {.label = "lower_tb_alpha",
       .m = 70,
       .n = 67,
       .k = 35,
       .transpose_b = true,
       .alpha = 0.125,
       .triangle = -1},
      {.label = "folded4_tb", .m = 88, .n = 96, .k = 20, .transpose_b = true, .fold = {2, 2}},
  };
  return cases;
}

/// The output tiles and K slices of an instantiation of a tensor-core template (one block
/// each); none for a template without tensor cores.
struct tensor_core_tiling {
  int64_t bm = 0, bn = 0, bk = 0, split_k = 1;
};

std::optional<tensor_core_tiling> tiling_of(const std::string& template_name,
                                            const param_values& v) {
  if (template_name == "tf32x3_mma_sync")
    return tensor_core_tiling{v.at("bm"), v.at("bn"), v.at("bk"), v.at("split_k")};
  if (template_name == "tf32x3_wgmma")
    return tensor_core_tiling{64 * v.at("wg_m"), v.at("wn") * v.at("wg_n"), v.at("bk"), 1};
  return std::nullopt;
}

/// Returns the blocks of `tiling` for `c`, and of them those with work for the tensor cores:
/// per batch and K slice that has k-tiles, the tiles that hold an output the task keeps.
std::pair<int64_t, int64_t> tensor_core_blocks(const shape_case& c,
                                               const tensor_core_tiling& tiling) {
  const int64_t k_tiles = (c.k + tiling.bk - 1) / tiling.bk;
  const int64_t per_slice = (k_tiles + tiling.split_k - 1) / tiling.split_k;
  const int64_t slices = (k_tiles + per_slice - 1) / per_slice;
  int64_t tiles = 0, kept = 0;
  for (int64_t m0 = 0; m0 < c.m; m0 += tiling.bm)
    for (int64_t n0 = 0; n0 < c.n; n0 += tiling.bn) {
      ++tiles;
      bool any = false;
      for (int64_t i = m0; i < std::min(m0 + tiling.bm, c.m) && !any; ++i)
        for (int64_t j = n0; j < std::min(n0 + tiling.bn, c.n) && !any; ++j)
          any = !c.zeroed(i, j);
      kept += any ? 1 : 0;
    }
  return {c.batch * tiling.split_k * tiles, c.batch * slices * kept};
}

} // namespace

namespace {

/// Renders every template of skill `id` for every shape case, compiles it for the emulator and
/// checks its product with both cp.async timings. Each case runs one instantiation: the
/// planner's first choice, and in turn (every other case) one of the template's probes, so
/// that the corners meet several shapes at the cost of one compile per case.
void check_skill_on_emulator(const std::string& id) {
  test::test_context context;
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  const engine::skill* s = nullptr;
  for (const engine::skill& candidate : library->skills)
    if (candidate.id == id)
      s = &candidate;
  REQUIRE(s != nullptr);
  // Every case's rendering first, compiled one host compiler per core; then each runs.
  struct planned_run {
    std::string label; // template, case and plan
    engine::task subject;
    const shape_case* shape;
    std::string template_name;
    param_values chosen;
  };
  std::vector<planned_run> planned;
  std::vector<std::string> sources;
  std::vector<std::string> names;
  int64_t admitted = 0;
  for (const engine::skill_template& tp : s->templates) {
    size_t probe_index = 0;
    size_t case_index = 0;
    for (const shape_case& c : shape_cases()) {
      engine::task subject = make_task(context, c);
      INFO(s->id << " for " << c.label);
      if (!engine::check_applies(*s, subject, nullptr, "").applies)
        continue; // counted below: every skill takes every case
      ++admitted;
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
      planned.push_back({label, subject, &c, tp.name, chosen});
      sources.push_back(*text);
      names.push_back(tp.name + "_" + c.label);
    }
  }
  std::vector<fs::path> objects = compile_for_emulator(sources, names);
  int64_t runs = 0;
  bool tensor_cores = false;
  int64_t skipped_blocks = 0; // tensor-core blocks whose tile the task zeroes wholly
  for (size_t i = 0; i < planned.size(); ++i) {
    const planned_run& run = planned[i];
    const shape_case& c = *run.shape;
    INFO(run.label);
    emulated_candidate candidate(objects[i]);
    for (bool deferred : {true, false}) {
      INFO((deferred ? "copies land at their wait" : "copies land at once"));
      double norm_rel = run_and_compare(candidate, run.subject, c, deferred, false,
                                        static_cast<uint64_t>(runs + 1));
      CHECK(norm_rel <= run.subject.tol.norm_rel);
      if (std::optional<tensor_core_tiling> tiling = tiling_of(run.template_name, run.chosen)) {
        // A tile wholly in the zeroed triangle runs no k loop; every other one does.
        tensor_cores = true;
        const auto [blocks, busy] = tensor_core_blocks(c, *tiling);
        INFO(blocks << " blocks of tiles, " << busy << " of them with outputs to compute");
        CHECK(candidate.tensor_core_blocks() == busy);
        if (deferred)
          skipped_blocks += blocks - busy;
      }
    }
    ++runs;
  }
  CHECK(runs == admitted);
  CHECK(admitted == static_cast<int64_t>(s->templates.size() * shape_cases().size()));
  if (tensor_cores)
    CHECK(skipped_blocks > 0); // the triangular cases do have tiles to skip
}

} // namespace

TEST_CASE("the SIMT tiled matmul computes C = A @ B at float32 accuracy for odd, transposed, "
          "batched, folded and degenerate shapes, scaled and triangular, on the CPU emulator",
          "[skills][emulation][matmul]") {
  check_skill_on_emulator("matmul_tiled");
}

TEST_CASE("the 3xTF32 mma.sync matmul computes C = A @ B at float32 accuracy for odd, "
          "transposed, batched, folded and degenerate shapes, scaled and triangular (a tile in "
          "the zeroed triangle skipping its k loop), on the CPU emulator, whichever way "
          "cp.async completes",
          "[skills][emulation][matmul]") {
  check_skill_on_emulator("matmul_tf32x3_mma");
}

TEST_CASE("the split-K matmul adds its slices to C = A @ B at float32 accuracy for odd, "
          "transposed, batched, folded and degenerate shapes, scaled and triangular (a tile in "
          "the zeroed triangle skipping its k loop), on the CPU emulator",
          "[skills][emulation][matmul]") {
  check_skill_on_emulator("matmul_split_k");
}

TEST_CASE("the 3xTF32 wgmma matmul computes C = A @ B at float32 accuracy for odd, "
          "transposed, batched, folded and degenerate shapes, scaled and triangular (a tile in "
          "the zeroed triangle skipping its k loop), on the CPU emulator, its B descriptors "
          "read as CUTLASS's canonical no-swizzle K-major layout",
          "[skills][emulation][matmul]") {
  check_skill_on_emulator("matmul_tf32x3_wgmma");
}

TEST_CASE("every matmul skill of the library is one the emulator tests check", "[skills][matmul]") {
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

namespace {

using test::rendered_case;

/// Renders, for the matmul tasks with alpha, a triangle or a folded A (the families suite's and
/// KernelBench's level 1 14 and 15 at their sizes), every covered skill's planner's first choice
/// and the corners of each space, checking that every skill applies and each renders.
std::vector<rendered_case> render_epilogues(test::test_context& context) {
  // skill_templates_test.cpp compiles the suites' tasks, which are plain products: here the
  // epilogues of alpha and a triangle, and a folded A, at the planner's first choice and the
  // corners of each space, for the families suite's tasks and KernelBench's sizes (level 1:
  // 14, torch.triu of a 4096^2 product; 15, tril, here also scaled with B transposed).
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  auto suite = engine::load_task_suite(test::source_dir() / "tasks" / "families");
  INFO((suite ? "" : suite.error().message()));
  REQUIRE(suite.has_value());
  std::vector<engine::task> tasks;
  for (const engine::task& t : *suite) {
    auto is = [&](const char* name) {
      auto it = t.derived.scalars.find(name);
      return it != t.derived.scalars.end() && std::get<bool>(it->second);
    };
    auto alpha = t.derived.scalars.find("alpha");
    if (t.family == "matmul" &&
        (is("triangular") || is("folded") ||
         (alpha != t.derived.scalars.end() && std::get<double>(alpha->second) != 1.0)))
      tasks.push_back(t);
  }
  CHECK(tasks.size() >= 2); // a triangular and a folded scaled product
  tasks.push_back(make_task(
      context, {.label = "kb14_upper_4096", .m = 4096, .n = 4096, .k = 4096, .triangle = 1}));
  tasks.push_back(make_task(context, {.label = "kb15_lower_scaled_tb_4096",
                                      .m = 4096,
                                      .n = 4096,
                                      .k = 4096,
                                      .transpose_b = true,
                                      .alpha = 0.125,
                                      .triangle = -1}));

  std::vector<rendered_case> rendered;
  const std::set<std::string> covered = {"matmul_tiled", "matmul_tf32x3_mma", "matmul_split_k",
                                         "matmul_tf32x3_wgmma"};
  for (const engine::task& t : tasks) {
    std::set<std::string> applied;
    for (const engine::skill& s : library->skills) {
      if (covered.count(s.id) == 0)
        continue;
      engine::applicability a = engine::check_applies(s, t, nullptr, "");
      INFO(t.name << " with skill " << s.id << ": " << a.why_not);
      CHECK(a.applies); // each takes alpha, a triangle and a folded A
      if (!a.applies)
        continue;
      applied.insert(s.id);
      for (const engine::skill_template& tp : s.templates) {
        auto space = engine::space_of(tp, t, "");
        REQUIRE(space.has_value());
        std::vector<param_values> valid;
        for (const param_values& v : all_instantiations(*space)) {
          auto why = engine::check_params(tp, *space, v, t);
          REQUIRE(why.has_value());
          if (!*why)
            valid.push_back(v);
        }
        auto first = engine::first_valid(tp, *space, t);
        REQUIRE(first.has_value());
        REQUIRE(first->has_value());
        std::set<param_values> chosen{**first, valid.front(), valid.back()};
        for (const param_values& v : chosen) {
          auto text = engine::render(s, tp, t, v, "");
          INFO((text ? "" : text.error().message()));
          REQUIRE(text.has_value());
          std::string label = t.name + " " + s.id + "/" + tp.name;
          for (const auto& [name, value] : v)
            label += " " + name + "=" + std::to_string(value);
          rendered.push_back({label, *text});
        }
      }
    }
    CHECK(applied == covered);
  }
  return rendered;
}

} // namespace

TEST_CASE("every matmul skill takes scaled, triangular and folded tasks, and renders for them",
          "[skills][matmul]") {
  test::test_context context;
  CHECK_FALSE(render_epilogues(context).empty());
}

TEST_CASE("every matmul skill's renderings for scaled, triangular and folded tasks compile for "
          "sm_90a without a warning or a spill",
          "[skills][nvcc][matmul]") {
  auto compiler = test::shared_compiler();
  if (!compiler)
    KS_SKIP("no nvcc: " + compiler.error().message());
  test::test_context context;
  test::check_compiles_clean(*compiler, render_epilogues(context));
}

TEST_CASE("with a tensor core that truncates its sums, the 3xTF32 kernel's per-tile fold keeps "
          "K = 4096 within float32's tolerance, and straight accumulation does not",
          "[skills][emulation][matmul]") {
  test::test_context context;
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  REQUIRE(library.has_value());
  const engine::skill* s = nullptr;
  for (const engine::skill& candidate : library->skills)
    if (candidate.id == "matmul_tf32x3_mma")
      s = &candidate;
  REQUIRE(s != nullptr);
  const engine::skill_template& tp = s->templates.front();
  shape_case c{"long_k", 1, 16, 16, 4096, false, false};
  engine::task subject = make_task(context, c);
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
