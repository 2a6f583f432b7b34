// The op families of docs/tasks.md: each family's params checked against the manifest's
// tensors (problems at FILE:LINE:COL), its derived values, cost and torch expression, and
// what templates see of them. No GPU, no nvcc (family_reference_test.cpp compiles).

#include "engine/family_reference.hpp"
#include "engine/op_family.hpp"
#include "engine/skill_template.hpp"
#include "engine/task_manifest.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

using namespace ks::engine;
namespace fs = std::filesystem;

namespace {

/// Writes `manifest` as t.toml and loads it, failing the test if it does not load.
task loaded(const ks::test::test_context& ctx, const std::string& manifest) {
  fs::path path = ctx.write("t.toml", manifest);
  expected<task> t = load_task_manifest(path);
  INFO(manifest << "\n" << (t ? "" : t.error().message()));
  REQUIRE(t.has_value());
  return *t;
}

/// Writes `manifest` as t.toml and returns its problems, failing the test if it loads.
std::string problems(const ks::test::test_context& ctx, const std::string& manifest) {
  fs::path path = ctx.write("t.toml", manifest);
  expected<task> t = load_task_manifest(path);
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().code() == errc::invalid_input);
  return t.error().message();
}

/// Returns "t.toml:LINE:COL: " in the test's folder.
std::string at(const ks::test::test_context& ctx, int line, int column) {
  return (ctx.dir() / "t.toml").string() + ":" + std::to_string(line) + ":" +
         std::to_string(column) + ": ";
}

/// Returns a manifest of one input x and one output y, both f32.
std::string one_to_one(const std::string& family, const std::string& x_shape,
                       const std::string& y_shape, const std::string& params,
                       const std::string& y_type = "f32") {
  return "name = \"t\"\nfamily = \"" + family +
         "\"\ninputs = [ { name = \"x\", dtype = \"f32\", shape = " + x_shape +
         " } ]\noutputs = [ { name = \"y\", dtype = \"" + y_type + "\", shape = " + y_shape +
         " } ]\nparams = " + params + "\n";
}

template <class T>
T derived(const task& t, const std::string& name) {
  auto it = t.derived.scalars.find(name);
  INFO("derived value " << name);
  REQUIRE(it != t.derived.scalars.end());
  REQUIRE(std::holds_alternative<T>(it->second));
  return std::get<T>(it->second);
}

} // namespace

TEST_CASE("docs/tasks.md's eight families are known, sorted", "[engine][family]") {
  CHECK(family_names() == std::vector<std::string_view>{"elementwise", "matmul", "matvec", "norm",
                                                        "pool", "reduce", "scan", "softmax"});
  CHECK(is_family("pool"));
  CHECK_FALSE(is_family("conv"));
}

TEST_CASE("a softmax over any dim is viewed as [outer, axis, inner]", "[engine][family]") {
  ks::test::test_context ctx;
  task middle =
      loaded(ctx, one_to_one("softmax", "[2, 3, 5]", "[2, 3, 5]", "{ op = \"softmax\", dim = 1 }"));
  CHECK(derived<int64_t>(middle, "outer") == 2);
  CHECK(derived<int64_t>(middle, "axis") == 3);
  CHECK(derived<int64_t>(middle, "inner") == 5);
  CHECK_FALSE(derived<bool>(middle, "axis_is_last"));
  CHECK(derived<bool>(middle, "op_softmax"));
  CHECK_FALSE(derived<bool>(middle, "op_log_softmax"));

  task last = loaded(
      ctx, one_to_one("softmax", "[2, 3, 5]", "[2, 3, 5]", "{ op = \"log_softmax\", dim = -1 }"));
  CHECK(derived<int64_t>(last, "outer") == 6);
  CHECK(derived<int64_t>(last, "axis") == 5);
  CHECK(derived<int64_t>(last, "inner") == 1);
  CHECK(derived<int64_t>(last, "dim") == 2);
  CHECK(derived<bool>(last, "axis_is_last"));
  CHECK(last.torch == "torch.log_softmax(x, dim=2)");
}

TEST_CASE("a family task needs no reference, cost or torch: they are derived", "[engine][family]") {
  ks::test::test_context ctx;
  task t =
      loaded(ctx, one_to_one("softmax", "[4, 10]", "[4, 10]", "{ op = \"softmax\", dim = 1 }"));
  CHECK(t.cost.flops == 5.0 * 40);
  CHECK(t.cost.bytes == 2.0 * 40 * 4);
  CHECK(t.torch == "torch.softmax(x, dim=1)");
  CHECK(t.reference_path == reference_template(default_families_dir(), "softmax"));
  CHECK(t.reference_source.find("// Reference of task t, rendered from families/softmax") == 0);
  CHECK(t.reference_source.find("constexpr int64_t kAxis = 10;") != std::string::npos);
  expected<std::string> source = read_reference(t);
  REQUIRE(source.has_value());
  CHECK(*source == t.reference_source);
  CHECK(reference_name(t).find("the softmax reference rendered from ") == 0);
}

TEST_CASE("a manifest's cost, torch and hand-written reference win over the family's",
          "[engine][family]") {
  ks::test::test_context ctx;
  ctx.write("mine.cu", "// my reference\n");
  task t =
      loaded(ctx, one_to_one("softmax", "[4, 10]", "[4, 10]", "{ op = \"softmax\", dim = 1 }") +
                      "reference = \"mine.cu\"\ncost = { flops = 1.0, bytes = 2.0 }\n"
                      "torch = \"my_softmax(x)\"\n");
  CHECK(t.cost.flops == 1.0);
  CHECK(t.cost.bytes == 2.0);
  CHECK(t.torch == "my_softmax(x)");
  CHECK(t.reference_path == ctx.dir() / "mine.cu");
  CHECK(t.reference_source.empty());
  CHECK(*read_reference(t) == "// my reference\n");
  CHECK(derived<int64_t>(t, "axis") == 10); // a hand-written reference does not skip the checks
}

TEST_CASE("a family's params are checked where they are written", "[engine][family]") {
  ks::test::test_context ctx;
  CHECK(
      problems(ctx, one_to_one("softmax", "[4, 10]", "[4, 10]", "{ op = \"sofmax\", dim = 2 }")) ==
      at(ctx, 5, 17) +
          "unknown softmax op 'sofmax' (did you mean 'softmax'?); valid: \"log_softmax\", "
          "\"softmax\"\n" +
          at(ctx, 5, 33) + "params.dim: dim 2 is out of range for input 'x' of rank 2 (-2 to 1)");
  CHECK(problems(ctx, one_to_one("reduce", "[4, 10]", "[4]",
                                 "{ op = \"sum\", dim = 1, keep_dim = true }")) ==
        at(ctx, 5, 44) + "unknown param 'keep_dim' for family reduce (did you mean 'keepdim'?)");
  CHECK(problems(ctx, one_to_one("scan", "[4, 10]", "[4, 10]", "{ dim = 1.5 }")) ==
        at(ctx, 5, 10) + "family scan needs param 'op' (one of \"cumprod\", \"cumsum\")\n" +
            at(ctx, 5, 18) + "params.dim must be an integer, got a float (1.5)");
  CHECK(
      problems(ctx,
               "name = \"t\"\nfamily = \"scan\"\ninputs = [ { name = \"x\", dtype = \"f32\", "
               "shape = [4] } ]\noutputs = [ { name = \"y\", dtype = \"f32\", shape = [4] } ]\n") ==
      at(ctx, 1, 1) + "family scan needs param 'op' (one of \"cumprod\", \"cumsum\")\n" +
          at(ctx, 1, 1) + "family scan needs param 'dim' (an integer)");
}

TEST_CASE("a reduce's output shape follows keepdim, and argmax writes int64", "[engine][family]") {
  ks::test::test_context ctx;
  task kept = loaded(ctx, one_to_one("reduce", "[3, 7, 2]", "[3, 1, 2]",
                                     "{ op = \"max\", dim = 1, keepdim = true }"));
  CHECK(derived<bool>(kept, "keepdim"));
  CHECK(kept.torch == "torch.amax(x, dim=1, keepdim=True)");
  task dropped =
      loaded(ctx, one_to_one("reduce", "[3, 7, 2]", "[3, 2]", "{ op = \"mean\", dim = -2 }"));
  CHECK_FALSE(derived<bool>(dropped, "keepdim"));
  CHECK(dropped.cost.flops == 42 + 6);
  CHECK(dropped.torch == "torch.mean(x, dim=1)");
  task scalar =
      loaded(ctx, one_to_one("reduce", "[9]", "[]", "{ op = \"argmin\", dim = 0 }", "i64"));
  CHECK(derived<int64_t>(scalar, "outer") == 1);
  CHECK(derived<int64_t>(scalar, "axis") == 9);

  CHECK(problems(ctx, one_to_one("reduce", "[3, 7, 2]", "[3, 2]",
                                 "{ op = \"sum\", dim = 1, keepdim = true }")) ==
        at(ctx, 4, 50) +
            "outputs[0] ('y') has shape [3, 2], but a sum over dim 1 of [3, 7, 2] with "
            "keepdim gives [3, 1, 2]");
  CHECK(problems(ctx, one_to_one("reduce", "[3, 7]", "[3]", "{ op = \"argmax\", dim = 1 }")) ==
        at(ctx, 4, 35) + "outputs[0] ('y') must be i64 for family reduce, got f32");
}

TEST_CASE("a norm acts on adjacent dims, and its affine weights have the normalized extents",
          "[engine][family]") {
  ks::test::test_context ctx;
  task rms = loaded(
      ctx, one_to_one("norm", "[2, 3, 4, 5]", "[2, 3, 4, 5]", "{ op = \"rms\", dims = [-2, 1] }"));
  CHECK(derived<int64_t>(rms, "outer") == 2);
  CHECK(derived<int64_t>(rms, "axis") == 12);
  CHECK(derived<int64_t>(rms, "inner") == 5);
  CHECK(derived<double>(rms, "eps") == 1e-5);
  CHECK_FALSE(derived<bool>(rms, "affine"));
  CHECK(derived<std::vector<int64_t>>(rms, "dims") == std::vector<int64_t>{1, 2});
  CHECK(rms.torch == "x / torch.sqrt(torch.mean(x ** 2, dim=(1, 2), keepdim=True) + 1e-5)");
  CHECK(rms.cost.flops == 3.0 * 120 + 3.0 * 10);

  task l2 = loaded(ctx, one_to_one("norm", "[6, 7]", "[6, 7]", "{ op = \"l2\", dim = 1 }"));
  CHECK(derived<double>(l2, "eps") == 1e-12);
  CHECK(l2.torch == "torch.nn.functional.normalize(x, p=2.0, dim=1, eps=1e-12)");

  CHECK(problems(ctx,
                 one_to_one("norm", "[2, 3, 4]", "[2, 3, 4]", "{ op = \"rms\", dims = [0, 2] }")) ==
        at(ctx, 5, 31) + "params.dims [0, 2] must name adjacent dims (as [1, 2, 3]), once each");

  std::string layer = R"(name = "t"
family = "norm"
inputs = [
  { name = "x", dtype = "f32", shape = [8, 16, 32] },
  { name = "w", dtype = "f32", shape = [16, 32] },
  { name = "b", dtype = "f32", shape = [32, 16] },
]
outputs = [ { name = "y", dtype = "f32", shape = [8, 16, 32] } ]
params = { op = "layer", dims = [1, 2], affine = true }
)";
  CHECK(problems(ctx, layer) ==
        at(ctx, 6, 40) +
            "inputs[2] ('b') has shape [32, 16], but an affine bias has shape [512] or "
            "[16, 32] (the normalized extents)");
  task affine = loaded(ctx, std::string(layer).replace(layer.find("[32, 16]"), 8, "[512]"));
  CHECK(affine.torch == "torch.nn.functional.layer_norm(x, (16, 32), weight=w.reshape((16, 32)), "
                        "bias=b.reshape((16, 32)), eps=1e-5)");
  CHECK(affine.cost.flops == (6.0 + 2.0) * 4096 + 3.0 * 8);
  CHECK(
      problems(ctx,
               one_to_one("norm", "[6, 7]", "[6, 7]", "{ op = \"l2\", dim = 1, affine = true }")) ==
      at(ctx, 5, 41) + "an l2 norm has no affine weights (torch.nn.functional.normalize has none)");
}

TEST_CASE("a scan's torch expression reverses and shifts as its params say", "[engine][family]") {
  ks::test::test_context ctx;
  task t =
      loaded(ctx, one_to_one("scan", "[3, 9, 2]", "[3, 9, 2]",
                             "{ op = \"cumprod\", dim = 1, reverse = true, exclusive = true }"));
  CHECK(derived<bool>(t, "reverse"));
  CHECK(derived<bool>(t, "exclusive"));
  CHECK(t.torch == "torch.flip(torch.nn.functional.pad(torch.cumprod(torch.flip(x, [1]), dim=1)"
                   ".narrow(1, 0, 8), (0, 0, 1, 0), value=1.0), [1])");
}

TEST_CASE("elementwise inputs broadcast by numpy's rules, each with its offset",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = R"(name = "t"
family = "elementwise"
inputs = [
  { name = "x", dtype = "f32", shape = [4, 5, 6] },
  { name = "b", dtype = "f32", shape = [5, 1] },
  { name = "c", dtype = "f32", shape = [6] },
  { name = "s", dtype = "f32", shape = [1] },
]
outputs = [ { name = "y", dtype = "f32", shape = [4, 5, 6] } ]
params = { op = "x * b + relu(c) - s" }
)";
  task t = loaded(ctx, manifest);
  CHECK(derived<std::string>(t, "expr") ==
        "(((v_x * v_b) + ([](float t) { return t < 0.0f ? 0.0f : t; }(v_c))) - v_s)");
  CHECK_FALSE(derived<bool>(t, "all_same_shape"));
  std::vector<template_record> inputs = tensor_records(t, "inputs");
  REQUIRE(inputs.size() == 4);
  CHECK(std::get<std::string>(inputs[0]["offset"]) == "i");
  CHECK(std::get<std::string>(inputs[1]["offset"]) == "(i / 6 % 5)");
  CHECK(std::get<std::string>(inputs[2]["offset"]) == "(i % 6)");
  CHECK(std::get<std::string>(inputs[3]["offset"]) == "0");
  CHECK_FALSE(std::get<bool>(inputs[0]["broadcast"]));
  CHECK(std::get<bool>(inputs[1]["broadcast"]));
  CHECK(std::get<std::string>(inputs[1]["name"]) == "b");
  CHECK(t.cost.flops == 4.0 * 120);
  CHECK(t.cost.bytes == 4.0 * (120 + 5 + 6 + 1 + 120));
  CHECK(t.torch == "(((x * b) + torch.relu(c)) - s)");

  std::string bad = manifest;
  bad.replace(bad.find("[5, 1]"), 6, "[5, 2]");
  bad.replace(bad.find("relu(c)"), 7, "rellu(c)");
  CHECK(problems(ctx, bad) ==
        at(ctx, 5, 40) +
            "inputs[1] ('b') has shape [5, 2], which does not broadcast to the "
            "output's [4, 5, 6] (aligned from the last dim, each extent equal or 1)\n" +
            at(ctx, 10, 26) +
            "params.op: unknown function 'rellu' (did you mean 'relu'?); functions: " +
            "abs, clamp, cos, elu, erf, exp, gelu, gelu_tanh, hardsigmoid, hardswish, hardtanh, "
            "leaky_relu, log, log1p, max, min, mish, neg, pow, relu, rsqrt, selu, sigmoid, sign, "
            "silu, sin, softplus, sqrt, tanh, where");
  CHECK(problems(ctx, one_to_one("elementwise", "[4, 1]", "[4, 3]", "{ op = \"x\" }")) ==
        at(ctx, 4, 50) + "outputs[0] ('y') has shape [4, 3], but the inputs broadcast to [4, 1]");
  std::string unused = manifest;
  unused.replace(unused.find(" - s"), 4, "");
  CHECK(problems(ctx, unused) == at(ctx, 10, 17) + "params.op does not use input 's'");
}

TEST_CASE("pooling sizes follow torch, ceil mode included; 1-d is 2-d of height 1",
          "[engine][family]") {
  ks::test::test_context ctx;
  task two = loaded(ctx, one_to_one("pool", "[4, 8, 37, 50]", "[4, 8, 18, 50]",
                                    "{ op = \"max\", kernel_size = [3, 2], stride = [2, 1], "
                                    "padding = 1, dilation = 2, ceil_mode = true }"));
  CHECK(derived<int64_t>(two, "out_h") == 18);
  CHECK(derived<int64_t>(two, "k_w") == 2);
  CHECK(derived<int64_t>(two, "p_w") == 1);
  CHECK(derived<int64_t>(two, "d_h") == 2);
  CHECK(two.torch == "torch.nn.functional.max_pool2d(x, kernel_size=(3, 2), stride=(2, 1), "
                     "padding=1, dilation=2, ceil_mode=True)");
  task one = loaded(ctx, one_to_one("pool", "[2, 3, 10]", "[2, 3, 5]",
                                    "{ op = \"avg\", kernel_size = 3, stride = 2, padding = 1, "
                                    "count_include_pad = false }"));
  CHECK(derived<int64_t>(one, "dims") == 1);
  CHECK(derived<int64_t>(one, "in_h") == 1);
  CHECK(derived<int64_t>(one, "k_h") == 1);
  CHECK(derived<int64_t>(one, "p_h") == 0);
  CHECK(derived<int64_t>(one, "out_w") == 5);
  CHECK_FALSE(derived<bool>(one, "count_include_pad"));
  CHECK(one.cost.flops == 30.0 * 4);
  CHECK(one.torch == "torch.nn.functional.avg_pool1d(x, kernel_size=3, stride=2, padding=1, "
                     "count_include_pad=False)");

  CHECK(problems(ctx, one_to_one("pool", "[1, 1, 9, 9]", "[1, 1, 9, 9]",
                                 "{ op = \"max\", kernel_size = 3, padding = 2 }")) ==
        at(ctx, 5, 51) + "params.padding 2 must be at most half the kernel 3 (torch's rule)");
  CHECK(problems(ctx, one_to_one("pool", "[1, 1, 9]", "[1, 1, 3]",
                                 "{ op = \"avg\", kernel_size = 3, dilation = 2 }")) ==
        at(ctx, 5, 52) + "avg pooling has no dilation (torch's avg_pool has none)");
  CHECK(problems(ctx, one_to_one("pool", "[1, 1, 9]", "[1, 1, 3]",
                                 "{ op = \"max\", kernel_size = 3, count_include_pad = true }")) ==
        at(ctx, 5, 61) + "params.count_include_pad is for avg pooling only");
  CHECK(problems(ctx, one_to_one("pool", "[1, 1, 9]", "[1, 1, 4]",
                                 "{ op = \"max\", kernel_size = 3 }")) ==
        at(ctx, 4, 50) +
            "outputs[0] ('y') has shape [1, 1, 4], but this max pool of [1, 1, 9] gives [1, 1, 3]");
}

TEST_CASE("matrix products take their sizes from the shapes, transposes and a shared operand "
          "included",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string shared = R"(name = "t"
family = "matmul"
inputs = [
  { name = "A", dtype = "f32", shape = [4, 129, 257] },
  { name = "W", dtype = "f32", shape = [65, 129] },
]
outputs = [ { name = "C", dtype = "f32", shape = [4, 257, 65] } ]
params = { transpose_a = true, transpose_b = true, k = 129 }
)";
  task t = loaded(ctx, shared);
  CHECK(derived<int64_t>(t, "m") == 257);
  CHECK(derived<int64_t>(t, "n") == 65);
  CHECK(derived<int64_t>(t, "k") == 129);
  CHECK(derived<int64_t>(t, "batch") == 4);
  CHECK(derived<int64_t>(t, "lda") == 257);
  CHECK(derived<int64_t>(t, "ldb") == 129);
  CHECK(derived<int64_t>(t, "ldc") == 65);
  CHECK(derived<int64_t>(t, "batch_stride_a") == int64_t{129} * 257);
  CHECK(derived<int64_t>(t, "batch_stride_b") == 0);
  CHECK(t.cost.flops == 2.0 * 4 * 257 * 65 * 129);
  CHECK(t.torch == "torch.matmul(A.mT, W.mT)");

  std::string wrong = shared;
  wrong.replace(wrong.find("[65, 129]"), 9, "[65, 128]");
  CHECK(problems(ctx, wrong) ==
        at(ctx, 5, 40) +
            "inputs[1] ('W'): B [65, 128] (transposed) has k = 128, but A [4, 129, 257] "
            "(transposed) has k = 129");
  std::string m_wrong = shared;
  m_wrong.replace(m_wrong.find("k = 129"), 7, "m = 256");
  CHECK(problems(ctx, m_wrong) ==
        at(ctx, 8, 56) + "params.m is 256, but A [4, 129, 257] (transposed) gives 257");

  task mv = loaded(ctx, R"(name = "t"
family = "matvec"
inputs = [ { name = "A", dtype = "f32", shape = [7, 3] }, { name = "x", dtype = "f32", shape = [3, 1] } ]
outputs = [ { name = "y", dtype = "f32", shape = [7, 1] } ]
)");
  CHECK(derived<int64_t>(mv, "m") == 7);
  CHECK(derived<int64_t>(mv, "lda") == 3);
  CHECK(mv.torch == "torch.matmul(A, x)");
  CHECK(mv.cost.flops == 2.0 * 7 * 3);
}

TEST_CASE("a task of another family keeps free params and needs its own reference and cost",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = one_to_one("conv", "[4]", "[4]", "{ anything = \"goes\", n = 4 }");
  CHECK(problems(ctx, manifest) ==
        at(ctx, 1, 1) +
            "missing required key 'reference' (a string: the reference .cu, relative "
            "to this file): family 'conv' is none of docs/tasks.md's (elementwise, "
            "matmul, matvec, norm, pool, reduce, scan, softmax), whose references are "
            "rendered\n" +
            at(ctx, 1, 1) + "missing required key 'cost' (a table: { flops = ..., bytes = ... })");
  // A misspelt family is most likely one of ours: the message suggests it.
  std::string misspelt = one_to_one("softmx", "[4]", "[4]", "{ dim = 0 }");
  CHECK_THAT(problems(ctx, misspelt), Catch::Contains("family 'softmx' is none of docs/tasks.md's "
                                                      "(did you mean 'softmax'? elementwise, "));
  ctx.write("conv.cu", "// conv\n");
  task t =
      loaded(ctx, manifest + "reference = \"conv.cu\"\ncost = { flops = 1.0, bytes = 32.0 }\n");
  CHECK(t.derived.scalars.empty());
  CHECK(std::get<std::string>(t.params.at("anything")) == "goes");
}

TEST_CASE("constraints see derived values, booleans as 0 or 1; templates see booleans as "
          "sections and refuse them as values",
          "[engine][family]") {
  ks::test::test_context ctx;
  task t = loaded(ctx, one_to_one("reduce", "[3, 7, 2]", "[3, 2]", "{ op = \"sum\", dim = 1 }"));
  fact_map facts = task_facts(t);
  CHECK(std::get<int64_t>(facts.at("task.outer")) == 3);
  CHECK(std::get<int64_t>(facts.at("task.keepdim")) == 0);
  CHECK(std::get<int64_t>(facts.at("task.op_sum")) == 1);
  CHECK(std::get<int64_t>(facts.at("task.inputs")) == 1);
  CHECK(std::get<std::string>(facts.at("task.dtype")) == "f32");
  CHECK(std::get<int64_t>(facts.at("task.x_numel")) == 42);
  CHECK(std::get<int64_t>(facts.at("task.y_rank")) == 2);

  skill s;
  s.id = "probe";
  skill_template tp;
  tp.name = "probe";
  tp.file = "probe.cu.mustache";
  tp.text = "{{#task.keepdim}}kept{{/task.keepdim}}{{^task.keepdim}}dropped{{/task.keepdim}} "
            "{{task.outer}}x{{task.axis}}x{{task.inner}} {{#task.inputs}}{{name}}:{{shape}}"
            "{{#extents}} {{at}}={{value}}{{/extents}}{{/task.inputs}} {{task.input_count}}";
  s.templates.push_back(tp);
  expected<std::string> text = render(s, s.templates[0], t, {}, "");
  INFO((text ? "" : text.error().message()));
  REQUIRE(text.has_value());
  CHECK(*text == "dropped 3x7x2 x:[3, 7, 2] 0=3 1=7 2=2 1");

  s.templates[0].text = "constexpr bool k = {{task.keepdim}};";
  expected<std::string> refused = render(s, s.templates[0], t, {}, "");
  REQUIRE_FALSE(refused.has_value());
  CHECK(
      refused.error().message() ==
      "skill probe, template probe.cu.mustache uses {{task.keepdim}} as a value, but it is a "
      "boolean or a list, which renders as nothing (write {{#task.keepdim}}...{{/task.keepdim}})");
}
