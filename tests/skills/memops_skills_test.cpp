// The memory-bound families' skills (elementwise, scan, pool, matvec, norm, reduce) against a
// spread of shapes that the suites do not hold: odd sizes, a dim of 1, sizes that are no
// multiple of 4, broadcast inputs, reversed and exclusive scans, scans over a middle dim,
// average and dilated pools, 1-d and 3-d pools (padding, dilation, ceil mode, a depth stride
// past the window), tall-skinny and transposed matrix-vector products, l1 norms (sum and mean,
// an eps that wins) in every norm skill, Frobenius norms (all dims, no eps) held in a cluster
// and in a cooperative grid, rows held in clusters of 1 to 16 CTAs and in a grid (in shared
// memory, or streamed twice), logsumexp over rows, columns and everything (lines of -inf, +inf,
// NaN and large values). Each task is a family manifest loaded as the engine loads any (so the
// templates see exactly the derived values of docs/tasks.md); every skill of this set that
// applies renders its planner's first instantiation and the corners of its space, which must
// compile for sm_90a with no warning, and the first instantiation (plus a corner, plus a case's
// extra instantiations) runs on the CPU emulator (memops_cuda_emulator.hpp; clusters and
// cooperative launches included, on an emulated GPU the case may size): twice, so that state a
// kernel keeps between calls (look-back tickets, arrival counters) is proven reset, and once
// more with every pointer shifted by one float, so that the scalar paths run. Outputs are
// compared with the task's tolerance against the family's own reference run on the same
// emulator (elementwise, pool, norm, reduce) or a double-precision loop here (scan and matvec,
// whose references use CUB). A case at a KernelBench shape only renders and compiles. No GPU:
// nvcc and g++ run on the CPU.

#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "tests/skills/all_instantiations.hpp"
#include "tests/skills/emulated_kernel.hpp"
#include "tests/skills/nvcc_spread.hpp"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace ks;
using engine::param_values;
using test::all_instantiations;
namespace fs = std::filesystem;

namespace {

/// The skills this test covers: the memory-bound families' templates.
const std::set<std::string> covered_skills = {"elementwise_vectorized",
                                              "elementwise_broadcast_rows",
                                              "scan_warp_rows",
                                              "scan_block_rows",
                                              "scan_decoupled_lookback",
                                              "scan_columns",
                                              "pool_shared_tile",
                                              "pool_row_stream",
                                              "matvec_split_k",
                                              "matvec_block_rows",
                                              "norm_warp_rows",
                                              "norm_cluster_rows",
                                              "norm_grid_rows",
                                              "norm_split_rows",
                                              "rmsnorm_channels_registers",
                                              "reduce_rows",
                                              "reduce_split_columns"};

/// Edits a case's drawn inputs (special values the draw never gives).
using input_edit = void (*)(const engine::task&, std::vector<std::vector<double>>&);

struct manifest_case {
  std::string file;                         ///< the manifest's name
  std::string toml;                         ///< its text
  std::vector<std::string> expected_skills; ///< skills that must apply
  bool emulate = true;                      ///< false: too large to emulate; it only compiles
  input_edit edit = nullptr;                ///< applied to the inputs of every emulated run
  std::vector<param_values> extra = {};     ///< more instantiations to emulate, where valid
  test::emulated_gpu gpu = {};              ///< the GPU the emulator plays
  /// A scan's values from its inputs (params.map), for the scan reference here; none: input 0.
  std::vector<double> (*mapped_values)(const std::vector<std::vector<double>>&) = nullptr;
};

std::string tensor(const std::string& name, const std::string& shape,
                   const std::string& init = "") {
  return "{ name = \"" + name + "\", dtype = \"f32\", shape = " + shape +
         (init.empty() ? "" : ", init = \"" + init + "\"") + " }";
}

manifest_case family_task(const std::string& name, const std::string& family,
                          const std::vector<std::string>& inputs, const std::string& output,
                          const std::string& params, const std::string& tolerance,
                          std::vector<std::string> expected) {
  std::string text = "name = \"" + name + "\"\nfamily = \"" + family + "\"\ninputs = [";
  for (size_t i = 0; i < inputs.size(); ++i)
    text += (i ? ", " : "") + inputs[i];
  text += "]\noutputs = [" + output + "]\nparams = " + params + "\ntolerance = " + tolerance + "\n";
  return {name + ".toml", text, std::move(expected)};
}

manifest_case compile_only(manifest_case c) {
  c.emulate = false;
  return c;
}

manifest_case with_edit(manifest_case c, input_edit edit) {
  c.edit = edit;
  return c;
}

manifest_case
with_mapped_values(manifest_case c,
                   std::vector<double> (*values)(const std::vector<std::vector<double>>&)) {
  c.mapped_values = values;
  return c;
}

manifest_case with_extra(manifest_case c, std::vector<param_values> extra) {
  c.extra = std::move(extra);
  return c;
}

/// A GPU of 8 SMs holding 2 blocks each: cooperative grids of up to 16 blocks, clusters of up
/// to 16 CTAs, and a grid whose chunks of a row of 262K floats fit its shared memory.
manifest_case on_bigger_gpu(manifest_case c) {
  c.gpu = test::emulated_gpu{8, 2, 4};
  return c;
}

/// A GPU of 4 SMs holding 4 blocks each: clusters of up to 16 CTAs, and a grid of 4 or 8
/// blocks whose chunks of a row of 262K floats do not fit its shared memory (streamed).
manifest_case on_few_sms(manifest_case c) {
  c.gpu = test::emulated_gpu{4, 4, 4};
  return c;
}

int64_t integer(const engine::task& t, const std::string& name) {
  return std::get<int64_t>(t.derived.scalars.at(name));
}
bool flag(const engine::task& t, const std::string& name) {
  return std::get<bool>(t.derived.scalars.at(name));
}

/// Returns where element `a` of line `line` of the [outer, axis, inner] view is.
size_t line_at(const engine::task& t, int64_t line, int64_t a) {
  const int64_t axis = integer(t, "axis"), inner = integer(t, "inner");
  return static_cast<size_t>((line / inner * axis + a) * inner + line % inner);
}

constexpr double infinity = std::numeric_limits<double>::infinity();
constexpr double quiet_nan = std::numeric_limits<double>::quiet_NaN();

/// logsumexp's hard lines, one per line from the first: all -inf; a +inf; a NaN; every other
/// element -inf; +inf beside -inf; everything near 1000 (exp overflows unshifted); one 88
/// among small values; all -inf but one value.
void lse_lines(const engine::task& t, std::vector<std::vector<double>>& in) {
  const int64_t lines = integer(t, "outer") * integer(t, "inner"), axis = integer(t, "axis");
  std::vector<double>& x = in[0];
  for (int64_t a = 0; a < axis; ++a) {
    if (lines > 0)
      x[line_at(t, 0, a)] = -infinity;
    if (lines > 3 && a % 2 == 0)
      x[line_at(t, 3, a)] = -infinity;
    if (lines > 5)
      x[line_at(t, 5, a)] += 1000.0;
    if (lines > 7 && a != axis / 3)
      x[line_at(t, 7, a)] = -infinity;
  }
  if (lines > 1)
    x[line_at(t, 1, axis / 2)] = infinity;
  if (lines > 2)
    x[line_at(t, 2, axis > 1 ? 1 : 0)] = quiet_nan;
  if (lines > 4) {
    x[line_at(t, 4, 0)] = infinity;
    x[line_at(t, 4, axis - 1)] = -infinity;
  }
  if (lines > 6)
    x[line_at(t, 6, axis - 1)] = 88.0;
}

/// One long line: a value of 95 (whose exp overflows float unshifted) and a few -inf.
void lse_one_line(const engine::task& t, std::vector<std::vector<double>>& in) {
  const int64_t axis = integer(t, "axis");
  in[0][line_at(t, 0, axis / 3)] = 95.0;
  in[0][line_at(t, 0, 0)] = -infinity;
  in[0][line_at(t, 0, axis - 1)] = -infinity;
}

/// Lines whose norm eps wins: every other line scaled by 1e-4, line 1 all zeros.
void small_lines(const engine::task& t, std::vector<std::vector<double>>& in) {
  const int64_t lines = integer(t, "outer") * integer(t, "inner"), axis = integer(t, "axis");
  for (int64_t line = 0; line < lines; line += 2)
    for (int64_t a = 0; a < axis; ++a)
      in[0][line_at(t, line, a)] *= 1e-4;
  if (lines > 1)
    for (int64_t a = 0; a < axis; ++a)
      in[0][line_at(t, 1, a)] = 0.0;
}

/// A NaN every 97 elements (a max pool lets it win).
void some_nans(const engine::task&, std::vector<std::vector<double>>& in) {
  for (size_t i = 5; i < in[0].size(); i += 97)
    in[0][i] = quiet_nan;
}

/// The spread of shapes: each task small enough to emulate in well under a second.
std::vector<manifest_case> cases() {
  const std::string exact = "{ atol = 1e-6, rtol = 1e-6, norm_rel = 1e-6 }";
  const std::string ew = "{ atol = 1e-5, rtol = 1e-5, norm_rel = 1e-5 }";
  const std::string sums = "{ atol = 1e-3, rtol = 1e-4, norm_rel = 2e-5 }";
  const std::string products = "{ atol = 1e-6, rtol = 1e-4, norm_rel = 1e-5 }";
  const std::string dots = "{ atol = 2e-3, rtol = 1e-4, norm_rel = 2e-5 }";
  const std::string norms = "{ atol = 1e-6, rtol = 1e-5, norm_rel = 1e-5 }";
  const std::string lse = "{ atol = 1e-5, rtol = 1e-5, norm_rel = 1e-6 }";
  return {
      // elementwise: odd sizes, several inputs, broadcasting (row, column, scalar, middle dim)
      family_task("relu_odd", "elementwise", {tensor("x", "[3, 1001]")}, tensor("y", "[3, 1001]"),
                  "{ op = \"relu(x)\" }", exact, {"elementwise_vectorized"}),
      family_task("fma_same", "elementwise",
                  {tensor("a", "[4099]"), tensor("b", "[4099]"), tensor("c", "[4099]")},
                  tensor("y", "[4099]"), "{ op = \"a + b * c\" }", ew, {"elementwise_vectorized"}),
      family_task("gelu_scalar", "elementwise", {tensor("x", "[1]")}, tensor("y", "[1]"),
                  "{ op = \"gelu(x)\" }", ew, {"elementwise_vectorized"}),
      family_task("bias_rows", "elementwise", {tensor("x", "[33, 256]"), tensor("b", "[256]")},
                  tensor("y", "[33, 256]"), "{ op = \"silu(x + b)\" }", ew,
                  {"elementwise_broadcast_rows"}),
      family_task("column_scale", "elementwise", {tensor("x", "[37, 101]"), tensor("s", "[37, 1]")},
                  tensor("y", "[37, 101]"), "{ op = \"x * s\" }", ew,
                  {"elementwise_broadcast_rows"}),
      family_task("channel_where", "elementwise",
                  {tensor("x", "[2, 3, 5, 8]"), tensor("w", "[3, 1, 1]"), tensor("t", "[1]")},
                  tensor("y", "[2, 3, 5, 8]"), "{ op = \"where(x > t, x * w, 0.0)\" }", ew,
                  {"elementwise_broadcast_rows"}),
      family_task("outer_sum", "elementwise", {tensor("a", "[7, 1]"), tensor("b", "[1, 13]")},
                  tensor("y", "[7, 13]"), "{ op = \"a + b\" }", ew, {"elementwise_broadcast_rows"}),
      // an expand: the output larger than what the inputs broadcast to (a token over a batch)
      family_task("token_expand", "elementwise", {tensor("t", "[1, 1, 67]")},
                  tensor("y", "[5, 1, 67]"), "{ op = \"t * 2.0\" }", ew,
                  {"elementwise_broadcast_rows"}),
      // scan: rows (odd, long, a single one, one element), a middle dim, reverse, exclusive,
      // cumprod
      family_task("cumsum_rows", "scan", {tensor("x", "[5, 1001]")}, tensor("y", "[5, 1001]"),
                  "{ op = \"cumsum\", dim = 1 }", sums,
                  {"scan_warp_rows", "scan_block_rows", "scan_decoupled_lookback"}),
      family_task("cumsum_long_row", "scan", {tensor("x", "[9000]")}, tensor("y", "[9000]"),
                  "{ op = \"cumsum\", dim = 0, reverse = true }", sums,
                  {"scan_warp_rows", "scan_block_rows", "scan_decoupled_lookback"}),
      family_task("cumsum_exclusive", "scan", {tensor("x", "[3, 4, 515]")},
                  tensor("y", "[3, 4, 515]"), "{ op = \"cumsum\", dim = -1, exclusive = true }",
                  sums, {"scan_warp_rows", "scan_block_rows", "scan_decoupled_lookback"}),
      family_task("cumprod_rows", "scan", {tensor("x", "[4, 700]", "positive")},
                  tensor("y", "[4, 700]"),
                  "{ op = \"cumprod\", dim = 1, reverse = true, exclusive = true }", products,
                  {"scan_warp_rows", "scan_block_rows", "scan_decoupled_lookback"}),
      family_task("cumsum_single", "scan", {tensor("x", "[6, 1]")}, tensor("y", "[6, 1]"),
                  "{ op = \"cumsum\", dim = 1 }", sums,
                  {"scan_warp_rows", "scan_block_rows", "scan_decoupled_lookback"}),
      family_task("cumsum_dim0", "scan", {tensor("x", "[300, 260]")}, tensor("y", "[300, 260]"),
                  "{ op = \"cumsum\", dim = 0 }", sums, {"scan_columns"}),
      family_task("cumsum_middle", "scan", {tensor("x", "[3, 77, 7]")}, tensor("y", "[3, 77, 7]"),
                  "{ op = \"cumsum\", dim = 1, reverse = true, exclusive = true }", sums,
                  {"scan_columns"}),
      family_task("cumprod_channels", "scan", {tensor("x", "[2, 9, 4, 16]", "positive")},
                  tensor("y", "[2, 9, 4, 16]"), "{ op = \"cumprod\", dim = 1 }", products,
                  {"scan_columns"}),
      // pool: the KernelBench window on odd planes, strides, dilation, ceil mode, avg both ways,
      // 1-d
      family_task("maxpool_k4", "pool", {tensor("x", "[2, 3, 37, 41]")},
                  tensor("y", "[2, 3, 36, 40]"),
                  "{ op = \"max\", kernel_size = 4, stride = 1, padding = 1 }", exact,
                  {"pool_shared_tile"}),
      family_task("maxpool_dilated", "pool", {tensor("x", "[1, 2, 23, 30]")},
                  tensor("y", "[1, 2, 11, 15]"),
                  "{ op = \"max\", kernel_size = 3, stride = 2, padding = 1, dilation = 2, "
                  "ceil_mode = true }",
                  exact, {"pool_shared_tile"}),
      family_task(
          "avgpool_excl", "pool", {tensor("x", "[2, 2, 19, 21]")}, tensor("y", "[2, 2, 10, 11]"),
          "{ op = \"avg\", kernel_size = 3, stride = 2, padding = 1, count_include_pad = false }",
          ew, {"pool_shared_tile"}),
      family_task(
          "avgpool_rect", "pool", {tensor("x", "[1, 3, 17, 29]")}, tensor("y", "[1, 3, 9, 15]"),
          "{ op = \"avg\", kernel_size = [3, 2], stride = 2, padding = [1, 1], ceil_mode = true }",
          ew, {"pool_shared_tile"}),
      family_task("avgpool1d", "pool", {tensor("x", "[4, 3, 257]")}, tensor("y", "[4, 3, 129]"),
                  "{ op = \"avg\", dims = 1, kernel_size = 4, stride = 2, padding = 2 }", ew,
                  {"pool_shared_tile"}),
      family_task("maxpool1d", "pool", {tensor("x", "[2, 5, 100]")}, tensor("y", "[2, 5, 98]"),
                  "{ op = \"max\", dims = 1, kernel_size = 3, stride = 1 }", exact,
                  {"pool_shared_tile", "pool_row_stream"}),
      // rows whose width is a multiple of 4 (row streaming): two warps of quads, unaligned and
      // aligned output rows, a vertical stride, dilation with a wide right halo
      family_task("maxpool_rows", "pool", {tensor("x", "[2, 3, 37, 40]")},
                  tensor("y", "[2, 3, 36, 39]"),
                  "{ op = \"max\", kernel_size = 4, stride = 1, padding = 1 }", exact,
                  {"pool_shared_tile", "pool_row_stream"}),
      family_task("avgpool_rows", "pool", {tensor("x", "[1, 2, 19, 132]")},
                  tensor("y", "[1, 2, 10, 132]"),
                  "{ op = \"avg\", kernel_size = 3, stride = [2, 1], padding = 1, "
                  "count_include_pad = false }",
                  ew, {"pool_shared_tile", "pool_row_stream"}),
      family_task("maxpool_rows_dilated", "pool", {tensor("x", "[1, 2, 23, 260]")},
                  tensor("y", "[1, 2, 21, 258]"),
                  "{ op = \"max\", kernel_size = 3, stride = 1, padding = 1, dilation = 2 }", exact,
                  {"pool_shared_tile", "pool_row_stream"}),
      // matvec: long rows, odd k, tall-skinny, transposed (odd m too)
      family_task("matvec_long", "matvec", {tensor("A", "[9, 20000]"), tensor("x", "[20000, 1]")},
                  tensor("y", "[9, 1]"), "{ m = 9, k = 20000 }", dots,
                  {"matvec_split_k", "matvec_block_rows"}),
      family_task("matvec_odd", "matvec", {tensor("A", "[37, 1001]"), tensor("x", "[1001]")},
                  tensor("y", "[37]"), "{ m = 37, k = 1001 }", dots,
                  {"matvec_split_k", "matvec_block_rows"}),
      family_task("matvec_skinny", "matvec", {tensor("A", "[5000, 24]"), tensor("x", "[24, 1]")},
                  tensor("y", "[5000, 1]"), "{ m = 5000, k = 24 }", dots,
                  {"matvec_split_k", "matvec_block_rows"}),
      family_task("matvec_transposed", "matvec",
                  {tensor("A", "[3000, 96]"), tensor("x", "[3000, 1]")}, tensor("y", "[96, 1]"),
                  "{ m = 96, k = 3000, transpose_a = true }", dots, {"matvec_split_k"}),
      family_task("matvec_transposed_odd", "matvec",
                  {tensor("A", "[300, 45]"), tensor("x", "[300]")}, tensor("y", "[45]"),
                  "{ m = 45, k = 300, transpose_a = true }", dots, {"matvec_split_k"}),
      // 3-d pools: a dilated max with NaNs, avg both ways, ceil mode, padding per dim, many
      // depth runs (both directions), a depth stride past the window, KernelBench's two
      with_edit(
          family_task("maxpool3d_dilated", "pool", {tensor("x", "[1, 2, 13, 14, 15]")},
                      tensor("y", "[1, 2, 5, 5, 6]"),
                      "{ op = \"max\", kernel_size = 3, stride = 2, padding = 1, dilation = 3 }",
                      exact, {"pool_shared_tile"}),
          some_nans),
      family_task(
          "avgpool3d", "pool", {tensor("x", "[2, 2, 9, 8, 10]")}, tensor("y", "[2, 2, 5, 4, 5]"),
          "{ op = \"avg\", kernel_size = 3, stride = 2, padding = 1 }", ew, {"pool_shared_tile"}),
      family_task(
          "avgpool3d_ceil_excl", "pool", {tensor("x", "[1, 3, 7, 9, 6]")},
          tensor("y", "[1, 3, 4, 5, 4]"),
          "{ op = \"avg\", kernel_size = [2, 3, 3], stride = [2, 2, 1], padding = [1, 1, 0], "
          "ceil_mode = true, count_include_pad = false }",
          ew, {"pool_shared_tile"}),
      with_extra(family_task("maxpool3d_runs", "pool", {tensor("x", "[1, 1, 40, 6, 7]")},
                             tensor("y", "[1, 1, 19, 5, 4]"),
                             "{ op = \"max\", kernel_size = [3, 2, 2], stride = [2, 1, 2], "
                             "padding = [1, 0, 1], dilation = [2, 1, 1] }",
                             exact, {"pool_shared_tile"}),
                 {{{"tx", 8}, {"ty", 4}, {"rw", 2}, {"rh", 2}, {"rd", 1}},
                  {{"tx", 16}, {"ty", 2}, {"rw", 1}, {"rh", 4}, {"rd", 4}}}),
      family_task("avgpool3d_depth_skip", "pool", {tensor("x", "[1, 2, 10, 5, 5]")},
                  tensor("y", "[1, 2, 4, 2, 2]"),
                  "{ op = \"avg\", kernel_size = [1, 2, 2], stride = [3, 2, 2] }", ew,
                  {"pool_shared_tile"}),
      family_task("maxpool3d_ceil", "pool", {tensor("x", "[2, 1, 11, 10, 9]")},
                  tensor("y", "[2, 1, 4, 5, 5]"),
                  "{ op = \"max\", kernel_size = [2, 3, 2], stride = [3, 2, 2], padding = 1, "
                  "dilation = [2, 2, 1], ceil_mode = true }",
                  exact, {"pool_shared_tile"}),
      compile_only(family_task("maxpool3d_kb", "pool", {tensor("x", "[16, 32, 128, 128, 128]")},
                               tensor("y", "[16, 32, 62, 62, 62]"),
                               "{ op = \"max\", kernel_size = 3, stride = 2, padding = 1, "
                               "dilation = 3 }",
                               exact, {"pool_shared_tile"})),
      compile_only(family_task("avgpool3d_kb", "pool", {tensor("x", "[16, 32, 64, 64, 64]")},
                               tensor("y", "[16, 32, 32, 32, 32]"),
                               "{ op = \"avg\", kernel_size = 3, stride = 2, padding = 1 }", ew,
                               {"pool_shared_tile"})),
      // norm: l1 by the sum and by the mean, an eps that wins (and lines of zeros), rows and
      // middle dims; a layer norm with weights and an l2 norm over channels
      family_task("l1norm_rows_mean", "norm", {tensor("x", "[37, 1000]")},
                  tensor("y", "[37, 1000]"), "{ op = \"l1\", dim = 1, mean = true }", norms,
                  {"norm_warp_rows"}),
      with_edit(family_task("l1norm_odd_eps", "norm", {tensor("x", "[33, 7]")},
                            tensor("y", "[33, 7]"),
                            "{ op = \"l1\", dim = -1, eps = 0.01, mean = true }", norms,
                            {"norm_warp_rows"}),
                small_lines),
      with_edit(family_task("l1norm_rows_sum", "norm", {tensor("x", "[5, 1001]")},
                            tensor("y", "[5, 1001]"), "{ op = \"l1\", dim = 1, eps = 0.05 }", norms,
                            {"norm_warp_rows"}),
                small_lines),
      with_edit(family_task("l1norm_channels_mean", "norm", {tensor("x", "[2, 64, 36]")},
                            tensor("y", "[2, 64, 36]"),
                            "{ op = \"l1\", dim = 1, mean = true, eps = 0.001 }", norms,
                            {"rmsnorm_channels_registers"}),
                small_lines),
      family_task("l1norm_channels_dims", "norm", {tensor("x", "[3, 5, 7, 9]")},
                  tensor("y", "[3, 5, 7, 9]"), "{ op = \"l1\", dims = [1, 2] }", norms,
                  {"rmsnorm_channels_registers"}),
      family_task("layernorm_rows_affine", "norm",
                  {tensor("x", "[9, 256]"), tensor("weight", "[256]"), tensor("bias", "[256]")},
                  tensor("y", "[9, 256]"), "{ op = \"layer\", dim = 1, affine = true }", norms,
                  {"norm_warp_rows"}),
      family_task("l2norm_channels", "norm", {tensor("x", "[2, 30, 17]")},
                  tensor("y", "[2, 30, 17]"), "{ op = \"l2\", dim = 1 }", norms,
                  {"rmsnorm_channels_registers"}),
      // rows held in a cluster: l1 (one CTA, clusters of 2 and 4 as ctas_per_sm grows, an eps
      // that wins by the mean), a Frobenius norm, a layer norm with weights merged across CTAs
      on_bigger_gpu(
          with_extra(family_task("l1norm_cluster_sum", "norm", {tensor("x", "[3, 30001]")},
                                 tensor("y", "[3, 30001]"), "{ op = \"l1\", dim = 1 }", norms,
                                 {"norm_cluster_rows"}),
                     {{{"ctas_per_sm", 4}, {"threads", 128}}})),
      on_bigger_gpu(with_edit(family_task("l1norm_cluster_mean", "norm", {tensor("x", "[6, 1003]")},
                                          tensor("y", "[6, 1003]"),
                                          "{ op = \"l1\", dim = 1, mean = true, eps = 0.01 }",
                                          norms, {"norm_cluster_rows", "norm_warp_rows"}),
                              small_lines)),
      on_bigger_gpu(with_extra(
          family_task("frobenius_cluster", "norm", {tensor("x", "[4, 5, 1001]")},
                      tensor("y", "[4, 5, 1001]"), "{ op = \"l2\", dims = [0, 1, 2], eps = 0 }",
                      norms, {"norm_cluster_rows"}),
          {{{"ctas_per_sm", 4}, {"threads", 256}}})),
      on_bigger_gpu(with_extra(family_task("layernorm_cluster_affine", "norm",
                                           {tensor("x", "[2, 20000]"), tensor("weight", "[20000]"),
                                            tensor("bias", "[20000]")},
                                           tensor("y", "[2, 20000]"),
                                           "{ op = \"layer\", dim = 1, affine = true }", norms,
                                           {"norm_cluster_rows"}),
                               {{{"ctas_per_sm", 4}, {"threads", 128}}})),
      // few long rows in a cooperative grid: held in shared memory (the bigger GPU; two rows,
      // so the next row's copies overlap this one's output), or streamed twice (4 SMs); l1 by
      // the mean and by the sum with an eps that wins, a Frobenius norm
      on_bigger_gpu(with_extra(family_task("l1norm_grid_mean", "norm", {tensor("x", "[2, 262147]")},
                                           tensor("y", "[2, 262147]"),
                                           "{ op = \"l1\", dim = 1, mean = true }", norms,
                                           {"norm_grid_rows", "norm_split_rows"}),
                               {{{"ctas_per_sm", 2}, {"threads", 512}}})),
      on_few_sms(
          with_edit(family_task("l1norm_grid_streamed", "norm", {tensor("x", "[3, 262145]")},
                                tensor("y", "[3, 262145]"), "{ op = \"l1\", dim = 1, eps = 50.0 }",
                                norms, {"norm_grid_rows", "norm_cluster_rows", "norm_split_rows"}),
                    small_lines)),
      on_bigger_gpu(family_task("frobenius_grid", "norm", {tensor("x", "[4, 8, 8192]")},
                                tensor("y", "[4, 8, 8192]"),
                                "{ op = \"l2\", dims = [0, 1, 2], eps = 0 }", norms,
                                {"norm_grid_rows", "norm_cluster_rows", "norm_split_rows"})),
      // a layer norm of two long rows with weights, split over many blocks per row
      on_bigger_gpu(family_task(
          "layernorm_split_affine", "norm",
          {tensor("x", "[2, 262148]"), tensor("weight", "[262148]"), tensor("bias", "[262148]")},
          tensor("y", "[2, 262148]"), "{ op = \"layer\", dim = 1, affine = true }", norms,
          {"norm_grid_rows", "norm_split_rows"})),
      // reduce of several maps (params.map "a; b"): two sums over rows sharing an input, one a
      // broadcast row; two means of everything (rows split across blocks)
      family_task("two_sums_shared_input", "reduce",
                  {tensor("a", "[33, 1003]"), tensor("p", "[33, 1003]"), tensor("n", "[1003]")},
                  tensor("y0", "[33]") + ", " + tensor("y1", "[33]"),
                  "{ op = \"sum\", dim = 1, map = \"(a - p) * (a - p); a * n\" }", sums,
                  {"reduce_rows"}),
      family_task("two_means_everything", "reduce",
                  {tensor("a", "[3, 100003]"), tensor("b", "[3, 100003]")},
                  tensor("y0", "[]") + ", " + tensor("y1", "[]"),
                  "{ op = \"mean\", dims = [0, 1], map = \"a + b; a * b\" }", sums,
                  {"reduce_rows"}),
      // reduce: logsumexp over rows, short rows, columns (split across blocks and not) and
      // everything, with lines of -inf, +inf, NaN and large values; a sum to a scalar
      with_edit(family_task("logsumexp_rows", "reduce", {tensor("x", "[37, 1001]")},
                            tensor("y", "[37]"), "{ op = \"logsumexp\", dim = 1 }", lse,
                            {"reduce_rows"}),
                lse_lines),
      with_edit(family_task("logsumexp_short_rows", "reduce", {tensor("x", "[1003, 7]")},
                            tensor("y", "[1003, 1]"),
                            "{ op = \"logsumexp\", dim = 1, keepdim = true }", lse,
                            {"reduce_rows"}),
                lse_lines),
      with_edit(family_task("logsumexp_everything", "reduce", {tensor("x", "[3, 40000]")},
                            tensor("y", "[]"), "{ op = \"logsumexp\", dims = [0, 1] }", lse,
                            {"reduce_rows"}),
                lse_one_line),
      with_edit(family_task("logsumexp_columns_split", "reduce", {tensor("x", "[3, 5000, 7]")},
                            tensor("y", "[3, 1, 7]"),
                            "{ op = \"logsumexp\", dim = 1, keepdim = true }", lse,
                            {"reduce_split_columns"}),
                lse_lines),
      with_edit(family_task("logsumexp_columns", "reduce", {tensor("x", "[4, 33, 5]")},
                            tensor("y", "[4, 5]"), "{ op = \"logsumexp\", dim = -2 }", lse,
                            {"reduce_split_columns"}),
                lse_lines),
      family_task("sum_to_scalar", "reduce", {tensor("x", "[3, 40000]")}, tensor("y", "[]"),
                  "{ op = \"sum\", dims = [0, 1] }", sums, {"reduce_rows"}),
      // params.map: a loss's terms summed as they are read (a row of weights broadcast, a row
      // length no multiple of 4), a middle-dim max of a difference with a broadcast operand,
      // and a cumsum of a u8 mask times x.
      family_task("weighted_squares_to_scalar", "reduce",
                  {tensor("p", "[3, 40001]"), tensor("t", "[3, 40001]"), tensor("w", "[40001]")},
                  tensor("y", "[]"), "{ op = \"sum\", dims = [0, 1], map = \"(p - t) ** 2 * w\" }",
                  sums, {"reduce_rows"}),
      // A broadcast row as long as the last dim (a hinge loss's targets: one 16-byte load a
      // quad) and a per-row scale (one load a quad).
      family_task("hinge_to_scalar", "reduce", {tensor("p", "[5, 4000]"), tensor("t", "[4000]")},
                  tensor("y", "[]"),
                  "{ op = \"mean\", dims = [0, 1], map = \"max(1.0 - p * t, 0.0)\" }", sums,
                  {"reduce_rows"}),
      family_task("row_scaled_sums", "reduce", {tensor("p", "[40, 1000]"), tensor("s", "[40, 1]")},
                  tensor("y", "[40]"), "{ op = \"sum\", dim = 1, map = \"p * s\" }", sums,
                  {"reduce_rows"}),
      family_task("max_abs_difference_columns", "reduce",
                  {tensor("a", "[4, 33, 5]"), tensor("b", "[4, 1, 5]")}, tensor("y", "[4, 5]"),
                  "{ op = \"max\", dim = 1, map = \"abs(a - b)\" }", exact,
                  {"reduce_split_columns"}),
      with_mapped_values(
          family_task("masked_cumsum_rows", "scan",
                      {tensor("x", "[5, 1001]"),
                       "{ name = \"mask\", dtype = \"u8\", shape = [5, 1001], init = "
                       "\"randint\", low = 0, high = 2 }"},
                      tensor("y", "[5, 1001]"), "{ op = \"cumsum\", dim = 1, map = \"x * mask\" }",
                      sums, {"scan_warp_rows", "scan_block_rows", "scan_decoupled_lookback"}),
          [](const std::vector<std::vector<double>>& in) {
            std::vector<double> v(in[0].size());
            for (size_t k = 0; k < v.size(); ++k)
              v[k] =
                  static_cast<double>(static_cast<float>(in[0][k]) * static_cast<float>(in[1][k]));
            return v;
          }),
  };
}

// -- references for the families whose own reference uses CUB ----------------------------------

std::vector<double> scan_reference(const engine::task& t, const std::vector<double>& x) {
  const int64_t outer = integer(t, "outer"), axis = integer(t, "axis"), inner = integer(t, "inner");
  const bool product = std::get<std::string>(t.derived.scalars.at("op")) == "cumprod";
  const bool reverse = flag(t, "reverse"), exclusive = flag(t, "exclusive");
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double carry = product ? 1.0 : 0.0;
      for (int64_t s = 0; s < axis; ++s) {
        const int64_t a = reverse ? axis - 1 - s : s;
        const size_t at = static_cast<size_t>((o * axis + a) * inner + i);
        if (exclusive)
          y[at] = carry;
        carry = product ? carry * x[at] : carry + x[at];
        if (!exclusive)
          y[at] = carry;
      }
    }
  return y;
}

std::vector<double> matvec_reference(const engine::task& t, const std::vector<double>& A,
                                     const std::vector<double>& x) {
  const int64_t m = integer(t, "m"), k = integer(t, "k");
  const bool transposed = flag(t, "transpose_a");
  std::vector<double> y(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < k; ++c)
      sum += static_cast<double>(A[static_cast<size_t>(transposed ? c * m + r : r * k + c)]) *
             x[static_cast<size_t>(c)];
    y[static_cast<size_t>(r)] = sum;
  }
  return y;
}

std::vector<std::vector<double>> draw_inputs(const engine::task& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<double>> values;
  for (const engine::tensor_spec& spec : t.inputs) {
    std::vector<double> v(static_cast<size_t>(spec.numel()));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> positive(0.5f, 1.5f);
    // A randint input (a u8 mask) holds integers in [low, high), as the bench draws it.
    std::uniform_int_distribution<int64_t> integers(spec.low, spec.high - 1);
    for (double& e : v)
      e = spec.init == engine::init_kind::randint    ? static_cast<double>(integers(rng))
          : spec.init == engine::init_kind::positive ? positive(rng)
                                                     : normal(rng);
    values.push_back(std::move(v));
  }
  return values;
}

struct rendered_case {
  std::string label;
  std::string source;
  const engine::task* subject;
  bool emulate;           // the first instantiation and one corner run; the rest only compile
  input_edit edit;        // the case's special inputs
  test::emulated_gpu gpu; // the GPU the emulator plays
};

/// The spread's tasks (loaded from manifests written in `context`) and their renderings.
struct spread {
  test::test_context context;
  std::vector<engine::task> tasks; ///< filled once, then never moved: rendered points into it
  std::vector<rendered_case> rendered;
};

/// Loads every manifest of cases() and renders, for every covered skill that applies, the
/// planner's first instantiation and the corners of each template's space, checking that the
/// expected skills apply and that every rendering succeeds.
void render_spread(spread& sp) {
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  for (const std::string& id : covered_skills)
    REQUIRE(library->find(id) != nullptr);

  std::vector<manifest_case> all = cases();
  for (const manifest_case& c : all) {
    auto loaded = engine::load_task_manifest(sp.context.write(c.file, c.toml));
    INFO(c.file << "\n" << (loaded ? "" : loaded.error().message()));
    REQUIRE(loaded.has_value());
    sp.tasks.push_back(std::move(*loaded));
  }

  for (size_t n = 0; n < sp.tasks.size(); ++n) {
    const engine::task& t = sp.tasks[n];
    auto reference = engine::read_reference(t);
    REQUIRE(reference.has_value());
    std::set<std::string> applied;
    for (const engine::skill& s : library->skills) {
      if (covered_skills.count(s.id) == 0 || !s.applies_to(t.family))
        continue;
      engine::applicability a = engine::check_applies(s, t, nullptr, *reference);
      INFO(t.name << " with skill " << s.id << ": " << a.why_not);
      // A skill that does not apply says so by its preconditions, never by a missing value.
      CHECK(a.why_not.find("has no") == std::string::npos);
      if (!a.applies)
        continue;
      applied.insert(s.id);
      for (const engine::skill_template& tp : s.templates) {
        auto space = engine::space_of(tp, t, *reference);
        REQUIRE(space.has_value());
        std::vector<param_values> valid;
        for (const param_values& v : all_instantiations(*space)) {
          auto why = engine::check_params(tp, *space, v, t);
          REQUIRE(why.has_value());
          if (!*why)
            valid.push_back(v);
        }
        if (valid.empty())
          continue; // a template for another case of the family (transpose_a)
        auto first = engine::first_valid(tp, *space, t);
        REQUIRE(first.has_value());
        REQUIRE(first->has_value());
        std::vector<std::pair<param_values, bool>> chosen{{**first, true}, {valid.front(), true}};
        for (const param_values& v : all[n].extra)
          if (std::find(valid.begin(), valid.end(), v) != valid.end())
            chosen.emplace_back(v, true);
        chosen.emplace_back(valid.back(), false);
        std::set<param_values> seen;
        for (const auto& [v, emulate] : chosen) {
          if (!seen.insert(v).second)
            continue;
          auto text = engine::render(s, tp, t, v, *reference);
          INFO(t.name << " " << s.id << "/" << tp.name << ": "
                      << (text ? "" : text.error().message()));
          REQUIRE(text.has_value());
          std::string label = t.name + " " + s.id + "/" + tp.name;
          for (const auto& [name, value] : v)
            label += " " + name + "=" + std::to_string(value);
          sp.rendered.push_back(
              {label, *text, &t, emulate && all[n].emulate, all[n].edit, all[n].gpu});
        }
      }
    }
    for (const std::string& id : all[n].expected_skills) {
      INFO(t.name << " should be served by " << id);
      CHECK(applied.count(id) == 1);
    }
  }
  CHECK(sp.rendered.size() > 60);
}

} // namespace

TEST_CASE("the memory-bound skills render for a spread of shapes", "[skills]") {
  spread sp;
  render_spread(sp);
}

TEST_CASE("the memory-bound skills' renderings for a spread of shapes compile for sm_90a "
          "without warnings",
          "[skills][nvcc]") {
  auto compiler = test::shared_compiler();
  if (!compiler)
    KS_SKIP("no nvcc: " + compiler.error().message());
  spread sp;
  render_spread(sp);
  test::check_compiles_clean(*compiler, sp.rendered);
}

TEST_CASE("the memory-bound skills compute what the family reference computes on the CPU "
          "emulator for a spread of shapes, twice in a row and from unaligned pointers",
          "[skills][emulation]") {
  spread sp;
  render_spread(sp);
  const std::vector<rendered_case>& rendered = sp.rendered;
  const std::vector<engine::task>& tasks = sp.tasks;
  // Compile the candidates and the references first, one host compiler per core.
  std::vector<const rendered_case*> runs;
  for (const rendered_case& c : rendered)
    if (c.emulate)
      runs.push_back(&c);
  std::map<const engine::task*, std::string> references;
  const std::vector<manifest_case> all = cases();
  for (size_t n = 0; n < tasks.size(); ++n)
    if (all[n].emulate && tasks[n].family != "scan" && tasks[n].family != "matvec")
      references[&tasks[n]] = *engine::read_reference(tasks[n]);
  std::vector<std::string> sources;
  for (const rendered_case* c : runs)
    sources.push_back(c->source);
  for (const auto& [t, text] : references)
    sources.push_back(text);
  std::vector<fs::path> objects;
  std::vector<std::string> logs;
  for (test::host_build& b : test::emulated_all(sources)) {
    objects.push_back(b.shared_object);
    logs.push_back(std::move(b.log));
  }
  std::map<const engine::task*, fs::path> reference_objects;
  size_t next = runs.size();
  for (const auto& [t, text] : references) {
    INFO("the " << t->family << " reference of " << t->name << "\n" << logs[next]);
    REQUIRE_FALSE(objects[next].empty());
    reference_objects[t] = objects[next++];
  }

  for (size_t r = 0; r < runs.size(); ++r) {
    const rendered_case& c = *runs[r];
    const engine::task& t = *c.subject;
    INFO(c.label << "\n" << logs[r]);
    REQUIRE_FALSE(objects[r].empty());
    for (int shift : {0, 1}) {
      std::vector<std::vector<double>> inputs = draw_inputs(t, 11 + static_cast<uint64_t>(shift));
      if (c.edit != nullptr)
        c.edit(t, inputs);
      std::vector<double> want;
      if (t.family == "scan") {
        const manifest_case& mc = all[static_cast<size_t>(c.subject - tasks.data())];
        want =
            scan_reference(t, mc.mapped_values != nullptr ? mc.mapped_values(inputs) : inputs[0]);
      } else if (t.family == "matvec") {
        want = matvec_reference(t, inputs[0], inputs[1]);
      } else {
        test::emulated_run ref = test::run_emulated(reference_objects.at(&t), t, inputs, 0, 1, 3);
        INFO("the family reference: " << ref.error);
        REQUIRE(ref.error.empty());
        want.assign(ref.output.begin(), ref.output.end());
      }
      test::emulated_run got =
          test::run_emulated(objects[r], t, inputs, shift, 2, 5 + static_cast<uint64_t>(r), c.gpu);
      INFO("pointers shifted by " << shift << " float(s)");
      CHECK(got.error == "");
      if (got.error.empty())
        CHECK(test::mismatch(t, got.output, want) == "");
    }
  }
}
