// Every family's reference template renders for a spread of shapes and params (odd sizes, a
// dim of 1, sizes that no vector width divides, negative dims, keepdim, reverse and exclusive
// scans, padding, dilation and ceil mode, transposes, batches, broadcasting, lines split
// across blocks, 3-d pools, folded and triangular products, integer inputs, standard and
// transposed convolutions of 1 to 3 dims, grouped and depthwise) and compiles with
// nvcc for sm_90a without a warning; so does the reference of every task of the shipped
// suites. No GPU: nvcc runs on the CPU (without nvcc, the compile test skips).

#include "engine/family_reference.hpp"
#include "engine/op_family.hpp"
#include "engine/task_manifest.hpp"
#include "tests/engine/compile_check.hpp"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

using namespace ks;
namespace fs = std::filesystem;

namespace {

/// One manifest of the spread: a label and its text.
struct family_case {
  std::string label;
  std::string manifest;
};

std::string tensor(const std::string& name, const std::string& shape,
                   const std::string& type = "f32") {
  return "{ name = \"" + name + "\", dtype = \"" + type + "\", shape = " + shape + " }";
}

/// Returns a manifest of `family` with these inputs, one output and params.
std::string manifest(const std::string& family, const std::vector<std::string>& inputs,
                     const std::string& output, const std::string& params) {
  std::string text = "name = \"t\"\nfamily = \"" + family + "\"\ninputs = [\n";
  for (const std::string& input : inputs)
    text += "  " + input + ",\n";
  return text + "]\noutputs = [ " + output + " ]\nparams = " + params + "\n";
}

std::string one_to_one(const std::string& family, const std::string& x, const std::string& y,
                       const std::string& params, const std::string& y_type = "f32") {
  return manifest(family, {tensor("x", x)}, tensor("y", y, y_type), params);
}

std::vector<family_case> spread() {
  std::vector<family_case> cases;
  auto add = [&](std::string label, std::string text) {
    cases.push_back({std::move(label), std::move(text)});
  };
  // softmax: both schemes (a block per line, a thread per line), a line of 1, a dim of 1.
  add("softmax last dim, odd",
      one_to_one("softmax", "[3, 1001]", "[3, 1001]", "{ op = \"softmax\", dim = -1 }"));
  add("log_softmax dim 0, many lines",
      one_to_one("softmax", "[129, 4097]", "[129, 4097]", "{ op = \"log_softmax\", dim = 0 }"));
  add("softmax over a dim of 1",
      one_to_one("softmax", "[5, 1, 7]", "[5, 1, 7]", "{ op = \"softmax\", dim = 1 }"));
  // norm
  add("rms norm dim 1 of 4-d", one_to_one("norm", "[2, 65, 3, 33]", "[2, 65, 3, 33]",
                                          "{ op = \"rms\", dim = 1, eps = 1e-6 }"));
  add("l2 norm dims [-2, -1]",
      one_to_one("norm", "[3, 5, 7]", "[3, 5, 7]", "{ op = \"l2\", dims = [-2, -1] }"));
  add("layer norm affine last dim",
      manifest("norm", {tensor("x", "[17, 1000]"), tensor("w", "[1000]"), tensor("b", "[1000]")},
               tensor("y", "[17, 1000]"), "{ op = \"layer\", dim = 1, affine = true, eps = 0.0 }"));
  add("rms norm affine, weight of the extents",
      manifest("norm", {tensor("x", "[4, 3, 5, 64]"), tensor("w", "[3, 5]")},
               tensor("y", "[4, 3, 5, 64]"), "{ op = \"rms\", dims = [1, 2], affine = true }"));
  // reduce: every op, keepdim or not, to a scalar.
  for (const char* op : {"sum", "mean", "max", "min", "prod"})
    add(std::string("reduce ") + op,
        one_to_one("reduce", "[7, 33, 5]", "[7, 1, 5]",
                   std::string("{ op = \"") + op + "\", dim = 1, keepdim = true }"));
  add("argmax to a scalar",
      one_to_one("reduce", "[1023]", "[]", "{ op = \"argmax\", dim = -1 }", "i64"));
  add("argmin dim 0, many lines",
      one_to_one("reduce", "[9, 64, 130]", "[64, 130]", "{ op = \"argmin\", dim = 0 }", "i64"));
  add("sum over a dim of 1", one_to_one("reduce", "[6, 1]", "[6]", "{ op = \"sum\", dim = 1 }"));
  // scan
  add("cumsum inclusive last dim",
      one_to_one("scan", "[3, 1025]", "[3, 1025]", "{ op = \"cumsum\", dim = 1 }"));
  add("cumsum reverse exclusive",
      one_to_one("scan", "[3, 1025]", "[3, 1025]",
                 "{ op = \"cumsum\", dim = -1, reverse = true, exclusive = true }"));
  add("cumprod exclusive dim 0, many lines",
      one_to_one("scan", "[33, 4099]", "[33, 4099]",
                 "{ op = \"cumprod\", dim = 0, exclusive = true }"));
  // elementwise
  add("relu", one_to_one("elementwise", "[1023, 3]", "[1023, 3]", "{ op = \"relu(x)\" }"));
  add("gelu_tanh of a scalar", one_to_one("elementwise", "[]", "[]", "{ op = \"gelu_tanh(x)\" }"));
  add("three inputs broadcast",
      manifest("elementwise", {tensor("a", "[4, 1, 6]"), tensor("b", "[5, 1]"), tensor("c", "[1]")},
               tensor("out", "[4, 5, 6]"),
               "{ op = \"where(a > b, clamp(a * c, -1, 1), hardswish(b) ** 2)\" }"));
  add("every other function",
      manifest("elementwise", {tensor("x", "[7]"), tensor("y", "[7]")}, tensor("z", "[7]"),
               "{ op = \"elu(x, 1.5) + leaky_relu(y, 0.1) + hardtanh(x, -2, 2) + hardsigmoid(y) + "
               "selu(x) + mish(y) + softplus(x) + silu(y) + sigmoid(x) + tanh(y) + log1p(abs(x)) + "
               "sqrt(abs(y)) + rsqrt(abs(x) + 1) + neg(sign(y)) + sin(x) * cos(y) + erf(x) + "
               "exp(-abs(y)) + log(abs(x) + 1) + pow(abs(x), y) + min(x, y) - max(x, 0.5) + "
               "(x != y) + (x == y) + (x >= y) + (x <= y) + (x < 0)\" }"));
  // pool
  add("max pool 2d, dilation, ceil mode",
      one_to_one("pool", "[2, 3, 37, 50]", "[2, 3, 18, 50]",
                 "{ op = \"max\", kernel_size = [3, 2], stride = [2, 1], padding = [1, 1], "
                 "dilation = 2, ceil_mode = true }"));
  add("avg pool 2d, padding counted",
      one_to_one("pool", "[1, 2, 9, 11]", "[1, 2, 5, 6]",
                 "{ op = \"avg\", kernel_size = 3, stride = 2, padding = 1 }"));
  add("avg pool 1d, padding not counted, ceil",
      one_to_one("pool", "[2, 3, 999]", "[2, 3, 500]",
                 "{ op = \"avg\", dims = 1, kernel_size = 3, stride = 2, padding = 1, ceil_mode = "
                 "true, count_include_pad = false }"));
  add("max pool 1d, kernel 1",
      one_to_one("pool", "[1, 1, 5]", "[1, 1, 5]", "{ op = \"max\", kernel_size = 1 }"));
  // matvec
  add("matvec, x [k]", manifest("matvec", {tensor("A", "[33, 1001]"), tensor("x", "[1001]")},
                                tensor("y", "[33]"), "{}"));
  add("matvec transposed, x [k, 1]",
      manifest("matvec", {tensor("A", "[1001, 33]"), tensor("x", "[1001, 1]")},
               tensor("y", "[33, 1]"), "{ transpose_a = true, m = 33, k = 1001 }"));
  // matmul
  add("matmul, odd sizes", manifest("matmul", {tensor("A", "[33, 7]"), tensor("B", "[7, 65]")},
                                    tensor("C", "[33, 65]"), "{}"));
  add("matmul batched, both transposed",
      manifest("matmul", {tensor("A", "[3, 7, 33]"), tensor("B", "[3, 65, 7]")},
               tensor("C", "[3, 33, 65]"),
               "{ transpose_a = true, transpose_b = true, batch = 3 }"));
  add("matmul, shared A, tall-skinny",
      manifest("matmul", {tensor("A", "[4097, 3]"), tensor("B", "[2, 3, 1]")},
               tensor("C", "[2, 4097, 1]"), "{}"));
  // the ops of issue 20: per-channel norms (split or not), reductions over several dims and
  // to a scalar, logsumexp, l1 and Frobenius norms, 3-d pools, folded, scaled and triangular
  // products, gathers, integer inputs of an elementwise expression.
  add("batch norm, affine, long channels (split)",
      manifest("channel_norm",
               {tensor("x", "[4, 3, 3000]"), tensor("w", "[3]"), tensor("b", "[3]")},
               tensor("y", "[4, 3, 3000]"), "{ op = \"batch\", affine = true }"));
  add("instance norm of many planes",
      one_to_one("channel_norm", "[40, 64, 9]", "[40, 64, 9]", "{ op = \"instance\", eps = 0.0 }"));
  add("group norm",
      one_to_one("channel_norm", "[3, 4, 5, 7]", "[3, 4, 5, 7]", "{ op = \"group\", groups = 2 }"));
  add("sum to a scalar (split)",
      one_to_one("reduce", "[3, 5000]", "[]", "{ op = \"sum\", dims = [0, 1] }"));
  add("argmax of one long line (split)",
      one_to_one("reduce", "[20000]", "[]", "{ op = \"argmax\", dim = 0 }", "i64"));
  for (const char* keep : {"false", "true"})
    add(std::string("logsumexp, keepdim ") + keep,
        one_to_one("reduce", "[3, 4, 5]", std::string(keep) == "true" ? "[3, 1, 1]" : "[3]",
                   std::string("{ op = \"logsumexp\", dims = [1, 2], keepdim = ") + keep + " }"));
  add("logsumexp of long rows (split)",
      one_to_one("reduce", "[2, 10000]", "[2]", "{ op = \"logsumexp\", dim = 1 }"));
  add("logsumexp, thread per line",
      one_to_one("reduce", "[2, 7, 4096]", "[2, 4096]", "{ op = \"logsumexp\", dim = 1 }"));
  add("l1 norm, mean",
      one_to_one("norm", "[5, 33]", "[5, 33]", "{ op = \"l1\", dim = 1, mean = true }"));
  add("Frobenius norm (split)",
      one_to_one("norm", "[3, 5000]", "[3, 5000]", "{ op = \"l2\", dims = [0, 1], eps = 0 }"));
  add("layer norm over all dims, affine (split)",
      manifest("norm", {tensor("x", "[3, 4000]"), tensor("w", "[3, 4000]"), tensor("b", "[12000]")},
               tensor("y", "[3, 4000]"), "{ op = \"layer\", dims = [0, 1], affine = true }"));
  add("max pool 3d", one_to_one("pool", "[1, 2, 5, 6, 9]", "[1, 2, 6, 4, 4]",
                                "{ op = \"max\", kernel_size = [2, 3, 2], stride = [1, 2, 2], "
                                "padding = [1, 1, 0], dilation = [1, 1, 2], ceil_mode = true }"));
  add("avg pool 3d", one_to_one("pool", "[2, 1, 4, 5, 6]", "[2, 1, 2, 3, 3]",
                                "{ op = \"avg\", kernel_size = 3, stride = 2, padding = 1, "
                                "count_include_pad = false }"));
  add("matmul, folded 4-d A, alpha",
      manifest("matmul", {tensor("A", "[2, 3, 5, 7]"), tensor("B", "[7, 4]")},
               tensor("C", "[2, 3, 5, 4]"), "{ alpha = 0.5 }"));
  add("matmul, lower triangle, batched",
      manifest("matmul", {tensor("A", "[2, 7, 3]"), tensor("B", "[2, 5, 3]")},
               tensor("C", "[2, 7, 5]"), "{ triangle = \"lower\", transpose_b = true }"));
  add("matmul, upper triangle", manifest("matmul", {tensor("A", "[6, 5]"), tensor("B", "[5, 6]")},
                                         tensor("C", "[6, 6]"), "{ triangle = \"upper\" }"));
  add("gather", manifest("gather",
                         {tensor("x", "[4, 10]"),
                          "{ name = \"i\", dtype = \"i64\", shape = [4, 1], init = \"randint\", "
                          "low = 0, high = 10 }"},
                         tensor("y", "[4, 1]"), "{ dim = 1 }"));
  add("matmul with an epilogue over a bias and a u8 mask",
      manifest("matmul",
               {tensor("A", "[6, 5]"), tensor("B", "[5, 6]"), tensor("bias", "[6]"),
                tensor("keep", "[6, 6]", "u8")},
               tensor("C", "[6, 6]"), "{ epilogue = \"where(keep, gelu(acc + bias), -inf)\" }"));
  add("concat, i64, along dim 0",
      manifest("concat", {tensor("a", "[2, 3]", "i64"), tensor("b", "[5, 3]", "i64")},
               tensor("y", "[7, 3]", "i64"), "{ dim = 0 }"));
  add("elementwise with u8, i32 and i64 inputs",
      manifest("elementwise",
               {tensor("x", "[4, 6]"), tensor("m", "[4, 6]", "u8"), tensor("i", "[6]", "i32"),
                tensor("j", "[1]", "i64")},
               tensor("y", "[4, 6]"), "{ op = \"where(m, x, 0.0) + i * j\" }"));
  // conv (issue 21): every param at values other than 1, odd sizes, one channel, groups that
  // do not divide 32, standard and transposed, 1-, 2- and 3-d, with and without a bias.
  add("conv 2d, stride, padding, dilation per dim, 2 groups, bias",
      manifest("conv",
               {tensor("x", "[2, 4, 9, 11]"), tensor("w", "[6, 2, 3, 5]"), tensor("b", "[6]")},
               tensor("y", "[2, 6, 4, 7]"),
               "{ stride = [2, 1], padding = [1, 2], dilation = 2, groups = 2 }"));
  add("conv 1d depthwise, one sample",
      manifest("conv", {tensor("x", "[1, 3, 17]"), tensor("w", "[3, 1, 4]")},
               tensor("y", "[1, 3, 16]"), "{ groups = 3, padding = 1 }"));
  add("conv 3d, one channel, odd sizes",
      manifest("conv", {tensor("x", "[1, 1, 5, 6, 7]"), tensor("w", "[1, 1, 3, 2, 3]")},
               tensor("y", "[1, 1, 3, 5, 5]"), "{}"));
  add("conv 2d pointwise",
      manifest("conv", {tensor("x", "[2, 3, 4, 5]"), tensor("w", "[4, 3, 1, 1]")},
               tensor("y", "[2, 4, 4, 5]"), "{}"));
  add("conv transposed 2d, output padding, 3 groups",
      manifest("conv", {tensor("x", "[2, 3, 5, 4]"), tensor("w", "[3, 1, 3, 3]")},
               tensor("y", "[2, 3, 10, 8]"),
               "{ transposed = true, stride = 2, padding = 1, output_padding = 1, groups = 3 }"));
  add("conv transposed 3d, dilation, output padding per dim, bias",
      manifest(
          "conv",
          {tensor("x", "[1, 2, 3, 4, 3]"), tensor("w", "[2, 2, 2, 3, 2]"), tensor("b", "[4]")},
          tensor("y", "[1, 4, 6, 8, 10]"),
          "{ transposed = true, stride = [1, 2, 3], padding = [0, 1, 0], dilation = [2, 1, 1], "
          "output_padding = [1, 1, 2], groups = 2 }"));
  add("conv transposed 1d",
      manifest("conv", {tensor("x", "[2, 4, 7]"), tensor("w", "[4, 2, 3]")},
               tensor("y", "[2, 2, 15]"), "{ transposed = true, stride = 2 }"));
  return cases;
}

/// Renders every family's reference for the spread and every reference of the suites,
/// checking each.
std::vector<test::labelled_source> render_references() {
  std::vector<test::labelled_source> sources;
  std::set<std::string> families;
  ks::test::test_context ctx;
  for (const family_case& c : spread()) {
    fs::path path = ctx.write("t.toml", c.manifest);
    auto t = engine::load_task_manifest(path);
    INFO(c.label << "\n" << c.manifest << (t ? "" : t.error().message()));
    REQUIRE(t.has_value());
    // Every reference template opens with what it is and where it came from.
    CHECK(t->reference_source.find("// Reference of task t, rendered from families/" + t->family +
                                   "/") == 0);
    sources.push_back({c.label, t->reference_source});
    families.insert(t->family);
  }
  CHECK(families.size() == engine::family_names().size());
  for (const char* suite : {"quickstart", "kernelbench-l1", "families"}) {
    auto tasks = engine::load_task_suite(test::source_dir() / "tasks" / suite);
    INFO(suite << ": " << (tasks ? "" : tasks.error().message()));
    REQUIRE(tasks.has_value());
    for (const engine::task& t : *tasks) {
      INFO(suite << "/" << t.name);
      // The suites are family manifests: their references are all rendered.
      CHECK_FALSE(t.reference_source.empty());
      sources.push_back({std::string(suite) + "/" + t.name, t.reference_source});
    }
  }
  return sources;
}

} // namespace

TEST_CASE("every family's reference renders for a spread of shapes and params, and every "
          "reference of the suites",
          "[families]") {
  CHECK_FALSE(render_references().empty());
}

TEST_CASE("every family's reference for the spread and every reference of the suites compiles "
          "for sm_90a without warnings",
          "[families][nvcc]") {
  auto compiler = test::shared_compiler();
  if (!compiler)
    KS_SKIP("no nvcc: " + compiler.error().message());
  test::check_compiles_clean(*compiler, render_references());
}
