// The conv skills against a spread of convolutions the suites do not hold: 1-d, 2-d and 3-d,
// standard and transposed (stride phases with one, several and no live taps, output padding);
// stride, padding and dilation per dim; groups that do not divide 32; one input channel;
// pointwise; asymmetric kernels; odd sizes; with and without a bias; depthwise with a channel
// multiplier. Each task is a family manifest loaded as the engine loads any, so the templates see
// exactly the derived values of docs/tasks.md. Three checks:
// - each skill applies exactly where it computes (the implicit GEMM to standard convolutions
//   with two or more output channels per group, the depthwise kernel to depthwise 1-d and 2-d
//   ones), and every valid instantiation renders;
// - the planner's first instantiation and the corners of each space compile with nvcc for
//   sm_90a without a warning or a spill, for the spread, the conv tasks of tasks/families and
//   the measurement tasks of tasks/conv (realistic sizes);
// - the kernels compute what the family's reference computes, both run on the CPU emulators:
//   the implicit GEMM on tests/skills/matmul_cuda_emulator.hpp (mma.sync fragments from the PTX
//   ISA, cp.async with src-size zero fill and both completion timings), each case at the
//   planner's first instantiation and at one of a set of probes (split-K, every warp-tile
//   width, two to five stages); the depthwise kernel on memops_cuda_emulator.hpp at its first
//   instantiation and the corners, with every tensor also shifted by one float (scalar stores).

#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
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

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace ks;
using engine::param_values;
using test::all_instantiations;
namespace fs = std::filesystem;

namespace {

/// One convolution: torch's shapes and params (per dim lists of the spatial dims' length).
struct conv_case {
  std::string label;
  std::vector<int64_t> x;      ///< [batch, in_channels, spatial...]
  std::vector<int64_t> weight; ///< [out_channels, in_channels / groups, kernel...] (transposed:
                               ///< [in_channels, out_channels / groups, kernel...])
  bool bias = false;
  std::vector<int64_t> stride, padding, dilation; ///< empty: 1, 0, 1
  int64_t groups = 1;
  bool transposed = false;
  std::vector<int64_t> output_padding; ///< transposed only; empty: 0
  bool epilogue = false;               ///< "relu(acc) * scale + 0.5", scale [out_channels, 1, ...]
};

std::string toml_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i == 0 ? "" : ", ") + std::to_string(v[i]);
  return s + "]";
}

/// Returns the manifest of `c`, its output's shape by torch's rule.
std::string manifest_of(const conv_case& c) {
  const size_t dims = c.x.size() - 2;
  auto at = [&](const std::vector<int64_t>& v, size_t d, int64_t fallback) {
    return v.empty() ? fallback : v[d];
  };
  const int64_t out_channels = c.transposed ? c.weight[1] * c.groups : c.weight[0];
  std::vector<int64_t> y = {c.x[0], out_channels};
  for (size_t d = 0; d < dims; ++d) {
    const int64_t span = at(c.dilation, d, 1) * (c.weight[2 + d] - 1);
    y.push_back(c.transposed
                    ? (c.x[2 + d] - 1) * at(c.stride, d, 1) - 2 * at(c.padding, d, 0) + span +
                          at(c.output_padding, d, 0) + 1
                    : (c.x[2 + d] + 2 * at(c.padding, d, 0) - span - 1) / at(c.stride, d, 1) + 1);
  }
  std::string params = "groups = " + std::to_string(c.groups);
  if (c.transposed)
    params += ", transposed = true";
  if (!c.output_padding.empty())
    params += ", output_padding = " + toml_list(c.output_padding);
  if (!c.stride.empty())
    params += ", stride = " + toml_list(c.stride);
  if (!c.padding.empty())
    params += ", padding = " + toml_list(c.padding);
  if (!c.dilation.empty())
    params += ", dilation = " + toml_list(c.dilation);
  std::string inputs = "{ name = \"x\", dtype = \"f32\", shape = " + toml_list(c.x) +
                       " }, { name = \"weight\", dtype = \"f32\", shape = " + toml_list(c.weight) +
                       " }";
  if (c.bias)
    inputs +=
        ", { name = \"bias\", dtype = \"f32\", shape = [" + std::to_string(out_channels) + "] }";
  if (c.epilogue) {
    std::vector<int64_t> scale(dims + 1, 1);
    scale[0] = out_channels;
    inputs += ", { name = \"scale\", dtype = \"f32\", shape = " + toml_list(scale) + " }";
    params +=
        std::string(", epilogue = \"relu(acc) * scale + 0.5\"") + (c.bias ? ", bias = true" : "");
  }
  return "name = \"conv_" + c.label + "\"\nfamily = \"conv\"\ninputs = [ " + inputs +
         " ]\noutputs = [ { name = \"y\", dtype = \"f32\", shape = " + toml_list(y) +
         " } ]\nparams = { " + params +
         " }\ntolerance = { atol = 1e-4, rtol = 1e-4, norm_rel = 1e-5 }\n";
}

engine::task load_case(const test::test_context& context, const conv_case& c) {
  const std::string manifest = manifest_of(c);
  auto t = engine::load_task_manifest(context.write("conv_" + c.label + ".toml", manifest));
  INFO(manifest << (t ? "" : t.error().message()));
  REQUIRE(t.has_value());
  return *t;
}

/// Standard convolutions for the implicit GEMM: small enough for the emulator.
const std::vector<conv_case>& gemm_cases() {
  static const std::vector<conv_case> cases = {
      {"2d_3x3_pad1_bias", {2, 5, 9, 11}, {12, 5, 3, 3}, true, {}, {1, 1}, {}, 1},
      {"2d_strided_dilated_3_groups",
       {1, 6, 13, 12},
       {9, 2, 3, 3},
       false,
       {2, 2},
       {1, 2},
       {2, 1},
       3},
      {"1d_k5_stride3_bias", {3, 4, 40}, {10, 4, 5}, true, {3}, {2}, {}, 1},
      {"3d_strided_dilated_bias",
       {1, 3, 5, 6, 7},
       {8, 3, 3, 3, 3},
       true,
       {1, 2, 1},
       {1, 0, 1},
       {1, 1, 2},
       1},
      {"2d_pointwise", {2, 16, 7, 9}, {20, 16, 1, 1}, false, {}, {}, {}, 1},
      {"2d_one_input_channel", {2, 1, 10, 10}, {6, 1, 3, 3}, true, {}, {}, {}, 1},
      {"2d_many_channels_small_plane", {1, 40, 4, 4}, {16, 40, 3, 3}, true, {}, {1, 1}, {}, 1},
      {"2d_asymmetric_odd", {2, 7, 8, 13}, {10, 7, 2, 5}, true, {1, 2}, {0, 2}, {}, 1},
      {"1d_groups_5_dilated", {2, 10, 33}, {15, 2, 3}, false, {}, {2}, {3}, 5},
      // K past the k table's 2048: the gather decomposes k itself.
      {"2d_long_k_no_table", {1, 232, 3, 3}, {4, 232, 3, 3}, false, {}, {1, 1}, {}, 1},
      // Transposed: stride phases with one, two and no live taps, output padding, groups.
      {"t2d_stride2_pad1_outpad_bias",
       {2, 6, 5, 6},
       {6, 4, 3, 3},
       true,
       {2, 2},
       {1, 1},
       {},
       1,
       true,
       {1, 0}},
      {"t1d_stride3_k2_groups2", {2, 4, 9}, {4, 3, 2}, false, {3}, {}, {}, 2, true, {1}},
      {"t3d_stride_122_dilated",
       {1, 3, 3, 4, 3},
       {3, 5, 2, 3, 3},
       true,
       {1, 2, 2},
       {0, 1, 2},
       {1, 2, 1},
       1,
       true,
       {}},
      {"t2d_stride1_dilated", {1, 5, 6, 7}, {5, 8, 3, 2}, false, {}, {2, 0}, {2, 3}, 1, true, {}},
      // An epilogue (an activation and a per-channel scale) after a bias, and after a
      // transposed conv without one.
      {"2d_bias_epilogue", {2, 5, 9, 11}, {12, 5, 3, 3}, true, {}, {1, 1}, {}, 1, false, {}, true},
      {"t2d_stride2_epilogue",
       {2, 6, 5, 6},
       {6, 4, 3, 3},
       false,
       {2, 2},
       {1, 1},
       {},
       1,
       true,
       {1, 0},
       true},
  };
  return cases;
}

/// Depthwise convolutions (groups = in_channels), with channel multipliers.
const std::vector<conv_case>& depthwise_cases() {
  static const std::vector<conv_case> cases = {
      {"dw_3x3_pad1_bias", {2, 3, 10, 13}, {3, 1, 3, 3}, true, {}, {1, 1}, {}, 3},
      {"dw_5x5_stride2_dilated", {1, 4, 17, 15}, {4, 1, 5, 5}, false, {2, 2}, {2, 2}, {1, 2}, 4},
      {"dw_multiplier_2_bias", {2, 3, 9, 9}, {6, 1, 3, 3}, true, {}, {1, 1}, {}, 3},
      {"dw_1d_k7", {2, 5, 31}, {5, 1, 7}, true, {}, {3}, {}, 5},
      {"dw_one_channel", {1, 1, 8, 8}, {1, 1, 3, 3}, false, {}, {}, {}, 1},
      {"dw_asymmetric_strides", {2, 6, 12, 20}, {6, 1, 3, 1}, false, {2, 3}, {1, 0}, {}, 6},
      {"dw_bias_epilogue", {2, 3, 10, 13}, {3, 1, 3, 3}, true, {}, {1, 1}, {}, 3, false, {}, true},
  };
  return cases;
}

/// Convolutions neither skill computes: one output channel per group, transposed or not a
/// depthwise 1-d or 2-d one.
const std::vector<std::string>& foreign_manifests() {
  static const std::vector<std::string> manifests = {
      "name = \"conv_transposed_depthwise\"\nfamily = \"conv\"\n"
      "inputs = [ { name = \"x\", dtype = \"f32\", shape = [1, 4, 5, 5] }, { name = \"weight\", "
      "dtype = \"f32\", shape = [4, 1, 3, 3] } ]\n"
      "outputs = [ { name = \"y\", dtype = \"f32\", shape = [1, 4, 7, 7] } ]\n"
      "params = { transposed = true, groups = 4 }\n",
      "name = \"conv_depthwise_3d\"\nfamily = \"conv\"\n"
      "inputs = [ { name = \"x\", dtype = \"f32\", shape = [1, 4, 5, 5, 5] }, { name = "
      "\"weight\", dtype = \"f32\", shape = [4, 1, 3, 3, 3] } ]\n"
      "outputs = [ { name = \"y\", dtype = \"f32\", shape = [1, 4, 3, 3, 3] } ]\n"
      "params = { groups = 4 }\n",
  };
  return manifests;
}

const std::set<std::string> covered_skills = {"conv_implicit_gemm_tf32x3", "conv_depthwise_direct"};

engine::skill_library load_library() {
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  return std::move(*library);
}

const engine::skill& find_skill(const engine::skill_library& library, const std::string& id) {
  const engine::skill* found = nullptr;
  for (const engine::skill& s : library.skills)
    if (s.id == id)
      found = &s;
  INFO("no skill " << id);
  REQUIRE(found != nullptr);
  return *found;
}

/// Every valid instantiation of `tp` for `t`, in the odometer's order.
std::vector<param_values> valid_points(const engine::skill_template& tp, const engine::task& t) {
  return test::valid_instantiations(tp, t, "");
}

/// Returns the planner's first instantiation of `tp` for `t`.
param_values first_point(const engine::skill_template& tp, const engine::task& t) {
  auto space = engine::space_of(tp, t, "");
  REQUIRE(space.has_value());
  auto first = engine::first_valid(tp, *space, t);
  REQUIRE(first.has_value());
  INFO(tp.name << " has no valid instantiation for " << t.name);
  REQUIRE(first->has_value());
  return **first;
}

std::string label_of(const engine::task& t, const engine::skill& s, const param_values& v) {
  std::string label = t.name + " " + s.id;
  for (const auto& [name, value] : v)
    label += " " + name + "=" + std::to_string(value);
  return label;
}

/// Every task the spreads cover: the cases here, tasks/families' conv tasks and tasks/conv.
std::vector<engine::task> spread_tasks(const test::test_context& context) {
  std::vector<engine::task> tasks;
  for (const auto* cases : {&gemm_cases(), &depthwise_cases()})
    for (const conv_case& c : *cases)
      tasks.push_back(load_case(context, c));
  for (const char* suite : {"families", "conv"}) {
    auto loaded = engine::load_task_suite(test::source_dir() / "tasks" / suite);
    INFO(suite << ": " << (loaded ? "" : loaded.error().message()));
    REQUIRE(loaded.has_value());
    for (const engine::task& t : *loaded)
      if (t.family == "conv")
        tasks.push_back(t);
  }
  return tasks;
}

bool flag(const engine::task& t, const char* name) {
  auto it = t.derived.scalars.find(name);
  REQUIRE(it != t.derived.scalars.end());
  return std::get<bool>(it->second);
}

int64_t integer(const engine::task& t, const char* name) {
  auto it = t.derived.scalars.find(name);
  REQUIRE(it != t.derived.scalars.end());
  return std::get<int64_t>(it->second);
}

/// Which covered skills should apply to `t`: the implicit GEMM to convolutions, standard or
/// transposed, with two or more output channels per group, the depthwise kernel to standard
/// depthwise 1-d and 2-d ones.
std::set<std::string> expected_skills(const engine::task& t) {
  std::set<std::string> want;
  if (integer(t, "out_per_group") >= 2 &&
      integer(t, "in_per_group") * integer(t, "kernel_volume") >= 2)
    want.insert("conv_implicit_gemm_tf32x3");
  if (flag(t, "depthwise") && integer(t, "dims") <= 2 && !flag(t, "transposed"))
    want.insert("conv_depthwise_direct");
  return want;
}

using test::rendered_case;

/// Checks where each covered skill applies; with `render_every` renders every valid
/// instantiation for the cases here (the suites' tasks at their first choice and corners: a
/// space renders alike for any shape, and rendering all of it is most of this test's time);
/// returns the planner's first choice and the corners of each space, rendered.
std::vector<rendered_case> render_spread(const test::test_context& context, bool render_every) {
  engine::skill_library library = load_library();
  std::vector<engine::task> tasks = spread_tasks(context);
  for (const std::string& manifest : foreign_manifests()) {
    auto t = engine::load_task_manifest(context.write("foreign.toml", manifest));
    INFO(manifest << (t ? "" : t.error().message()));
    REQUIRE(t.has_value());
    tasks.push_back(*t);
  }
  std::vector<rendered_case> rendered;
  int64_t rendered_count = 0;
  std::map<std::string, int64_t> applied;
  const size_t own_cases = gemm_cases().size() + depthwise_cases().size();
  for (size_t index = 0; index < tasks.size(); ++index) {
    const engine::task& t = tasks[index];
    const std::set<std::string> want = expected_skills(t);
    for (const engine::skill& s : library.skills) {
      if (covered_skills.count(s.id) == 0)
        continue;
      engine::applicability a = engine::check_applies(s, t, nullptr, "");
      INFO(t.name << " with skill " << s.id << ": " << a.why_not);
      CHECK(a.applies == (want.count(s.id) == 1));
      if (!a.applies)
        continue;
      ++applied[s.id];
      for (const engine::skill_template& tp : s.templates) {
        std::vector<param_values> valid = valid_points(tp, t);
        REQUIRE_FALSE(valid.empty());
        if (render_every && index < own_cases)
          for (const param_values& v : valid) {
            auto text = engine::render(s, tp, t, v, "");
            INFO(label_of(t, s, v) << ": " << (text ? "" : text.error().message()));
            REQUIRE(text.has_value());
            ++rendered_count;
          }
        std::set<param_values> chosen{first_point(tp, t), valid.front(), valid.back()};
        for (const param_values& v : chosen) {
          auto text = engine::render(s, tp, t, v, "");
          INFO(label_of(t, s, v) << ": " << (text ? "" : text.error().message()));
          REQUIRE(text.has_value());
          rendered.push_back({label_of(t, s, v), *text});
        }
      }
    }
  }
  CHECK(applied["conv_implicit_gemm_tf32x3"] >= static_cast<int64_t>(gemm_cases().size()));
  CHECK(applied["conv_depthwise_direct"] >= static_cast<int64_t>(depthwise_cases().size()));
  if (render_every)
    CHECK(rendered_count > 1000);
  return rendered;
}

/// Draws normal inputs for `t`, one list per input.
std::vector<std::vector<double>> draw_inputs(const engine::task& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<std::vector<double>> in;
  for (const engine::tensor_spec& spec : t.inputs) {
    int64_t n = 1;
    for (int64_t d : spec.shape)
      n *= d;
    std::vector<double> v(static_cast<size_t>(n));
    for (double& e : v)
      e = normal(rng);
    in.push_back(std::move(v));
  }
  return in;
}

/// Returns the family reference's output for `t` on `in`, run on the memops emulator.
std::vector<double> reference_output(const engine::task& t,
                                     const std::vector<std::vector<double>>& in) {
  std::string log;
  const fs::path so = test::emulated(t.reference_source, log);
  INFO(log);
  REQUIRE_FALSE(so.empty());
  test::emulated_run ref = test::run_emulated(so, t, in, 0, 1, 1);
  INFO(ref.error);
  REQUIRE(ref.error.empty());
  return ref.output;
}

/// Runs the tensor-core candidate `candidate` on `in` for `t` (copies landing at their wait or
/// at once) and returns its output; checks the inputs unchanged and nothing written past y.
std::vector<double> run_on_mma_emulator(test::emulated_candidate& candidate, const engine::task& t,
                                        const std::vector<std::vector<double>>& in, bool deferred,
                                        uint64_t seed) {
  std::vector<std::unique_ptr<test::guarded_buffer>> buffers;
  std::vector<ks_tensor> inputs;
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    buffers.push_back(std::make_unique<test::guarded_buffer>(in[i].size()));
    for (size_t e = 0; e < in[i].size(); ++e)
      buffers.back()->data()[e] = static_cast<float>(in[i][e]);
    inputs.push_back(test::contiguous_tensor(buffers.back()->data(), KS_F32, t.inputs[i].shape));
  }
  int64_t count = 1;
  for (int64_t d : t.outputs[0].shape)
    count *= d;
  test::guarded_buffer out(static_cast<size_t>(count));
  std::fill(out.data(), out.data() + count, std::nanf(""));
  ks_tensor outputs[1] = {test::contiguous_tensor(out.data(), KS_F32, t.outputs[0].shape)};
  candidate.configure(deferred ? 1 : 0, 0, seed);
  const int code =
      candidate.forward(inputs.data(), static_cast<int32_t>(inputs.size()), outputs, 1, nullptr);
  INFO("ks_forward returned " << code << "; emulator: " << candidate.error());
  REQUIRE(code == 0);
  for (size_t i = 0; i < t.inputs.size(); ++i)
    for (size_t e = 0; e < in[i].size(); ++e)
      REQUIRE(buffers[i]->data()[e] == static_cast<float>(in[i][e]));
  CHECK(out.canary_intact());
  return std::vector<double>(out.data(), out.data() + count);
}

/// A rendered instantiation to run on an emulator: what it is, its task and its source.
struct planned_run {
  std::string label;
  engine::task subject;
  std::string source;
};

/// Renders the one template of `s` for `t` at each of `points`, appending to `runs`.
void plan_runs(const engine::skill& s, const engine::task& t, const std::set<param_values>& points,
               std::vector<planned_run>& runs) {
  for (const param_values& v : points) {
    auto text = engine::render(s, s.templates.front(), t, v, "");
    INFO(label_of(t, s, v) << ": " << (text ? "" : text.error().message()));
    REQUIRE(text.has_value());
    runs.push_back({label_of(t, s, v), t, *text});
  }
}

/// Returns the sources of `runs`, in order.
std::vector<std::string> sources_of(const std::vector<planned_run>& runs) {
  std::vector<std::string> sources;
  for (const planned_run& r : runs)
    sources.push_back(r.source);
  return sources;
}

/// Instantiations of the implicit GEMM tried besides the planner's first choice: one m16
/// product per warp and 64 threads, split-K, four m16 products per warp with five stages, a
/// 128-row tile with a thread per row; each overrides the first valid instantiation and is
/// kept when valid for the case.
const std::vector<param_values>& gemm_probes() {
  static const std::vector<param_values> probes = {
      {{"bm", 32}, {"bn", 16}, {"bk", 16}, {"warps_m", 2}, {"warps_n", 1}, {"stages", 2}},
      {{"bm", 64},
       {"bn", 32},
       {"bk", 32},
       {"warps_m", 2},
       {"warps_n", 2},
       {"stages", 3},
       {"split_k", 2}},
      {{"bm", 64}, {"bn", 16}, {"bk", 16}, {"warps_m", 1}, {"warps_n", 2}, {"stages", 5}},
      {{"bm", 128},
       {"bn", 32},
       {"bk", 32},
       {"warps_m", 4},
       {"warps_n", 1},
       {"stages", 4},
       {"split_k", 4}},
  };
  return probes;
}

} // namespace

TEST_CASE("the conv skills apply where they compute, and every valid instantiation renders for "
          "a spread of convolutions",
          "[skills][conv]") {
  test::test_context context;
  CHECK_FALSE(render_spread(context, true).empty());
}

TEST_CASE("the conv skills' first choices and corners compile for sm_90a without a warning or a "
          "spill, for a spread of convolutions and the conv tasks of tasks/",
          "[skills][nvcc][conv]") {
  auto compiler = test::shared_compiler();
  if (!compiler)
    KS_SKIP("no nvcc: " + compiler.error().message());
  test::test_context context;
  test::check_compiles_clean(*compiler, render_spread(context, false));
}

TEST_CASE("the 3xTF32 implicit-GEMM convolution computes what the conv reference computes at "
          "float32 accuracy (1-d to 3-d, strides, padding, dilation, groups, bias, split-K, "
          "transposed by stride phases) on the CPU emulator, whichever way cp.async completes",
          "[skills][emulation][conv]") {
  test::test_context context;
  engine::skill_library library = load_library();
  const engine::skill& s = find_skill(library, "conv_implicit_gemm_tf32x3");
  REQUIRE(s.templates.size() == 1);
  const engine::skill_template& tp = s.templates.front();
  std::vector<planned_run> planned;
  size_t probe_index = 0;
  int64_t probes_taken = 0;
  for (const conv_case& c : gemm_cases()) {
    engine::task t = load_case(context, c);
    INFO(c.label);
    REQUIRE(engine::check_applies(s, t, nullptr, "").applies);
    auto space = engine::space_of(tp, t, "");
    REQUIRE(space.has_value());
    std::set<param_values> chosen{first_point(tp, t)};
    // The next probe valid for this case, so that each case meets a corner too.
    for (size_t tries = 0; tries < gemm_probes().size(); ++tries) {
      param_values v = first_point(tp, t);
      for (const auto& [name, value] : gemm_probes()[probe_index++ % gemm_probes().size()])
        v[name] = value;
      auto why = engine::check_params(tp, *space, v, t);
      REQUIRE(why.has_value());
      if (!*why) {
        chosen.insert(v);
        ++probes_taken;
        break;
      }
    }
    plan_runs(s, t, chosen, planned);
  }
  CHECK(probes_taken >= static_cast<int64_t>(gemm_cases().size()) - 2);
  std::vector<std::string> names;
  for (const planned_run& run : planned)
    names.push_back(run.label);
  std::vector<fs::path> objects = test::compile_for_emulator(sources_of(planned), names);
  for (size_t i = 0; i < planned.size(); ++i) {
    const planned_run& run = planned[i];
    INFO(run.label);
    const std::vector<std::vector<double>> in = draw_inputs(run.subject, 11 + i);
    const std::vector<double> want = reference_output(run.subject, in);
    test::emulated_candidate candidate(objects[i]);
    for (bool deferred : {true, false}) {
      INFO((deferred ? "copies land at their wait" : "copies land at once"));
      // Twice: a split-K workspace kept between calls must not carry the first call over.
      for (int call = 0; call < 2; ++call) {
        std::vector<double> got =
            run_on_mma_emulator(candidate, run.subject, in, deferred, static_cast<uint64_t>(i + 1));
        CHECK(test::mismatch(run.subject, got, want) == "");
      }
    }
  }
}

TEST_CASE("the depthwise convolution computes what the conv reference computes (1-d and 2-d, "
          "strides, padding, dilation, channel multipliers, bias) on the CPU emulator, its "
          "tensors aligned and shifted by one float",
          "[skills][emulation][conv]") {
  test::test_context context;
  engine::skill_library library = load_library();
  const engine::skill& s = find_skill(library, "conv_depthwise_direct");
  REQUIRE(s.templates.size() == 1);
  const engine::skill_template& tp = s.templates.front();
  std::vector<planned_run> planned;
  for (const conv_case& c : depthwise_cases()) {
    engine::task t = load_case(context, c);
    INFO(c.label);
    REQUIRE(engine::check_applies(s, t, nullptr, "").applies);
    std::vector<param_values> valid = valid_points(tp, t);
    REQUIRE_FALSE(valid.empty());
    plan_runs(s, t, {first_point(tp, t), valid.front(), valid.back()}, planned);
  }
  std::vector<test::host_build> builds = test::emulated_all(sources_of(planned));
  for (size_t i = 0; i < planned.size(); ++i) {
    const planned_run& run = planned[i];
    INFO(run.label << "\n" << builds[i].log);
    REQUIRE_FALSE(builds[i].shared_object.empty());
    const std::vector<std::vector<double>> in = draw_inputs(run.subject, 5 + i);
    const std::vector<double> want = reference_output(run.subject, in);
    for (int shift : {0, 1}) {
      INFO("tensors shifted by " << shift << " element(s)");
      test::emulated_run got = test::run_emulated(builds[i].shared_object, run.subject, in, shift,
                                                  2, 3 + static_cast<uint64_t>(shift));
      REQUIRE(got.error == "");
      CHECK(test::mismatch(run.subject, got.output, want) == "");
    }
  }
}

TEST_CASE("every conv skill of the library is one the conv skill tests check", "[skills][conv]") {
  engine::skill_library library = load_library();
  for (const engine::skill& s : library.skills)
    if (s.applies_to("conv") && s.families != std::vector<std::string>{"*"}) {
      INFO(s.id);
      CHECK(covered_skills.count(s.id) == 1);
    }
}
