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

TEST_CASE("docs/tasks.md's twelve families are known, sorted", "[engine][family]") {
  CHECK(family_names() == std::vector<std::string_view>{
                              "channel_norm", "concat", "conv", "elementwise", "gather", "matmul",
                              "matvec", "norm", "pool", "reduce", "scan", "softmax"});
  CHECK(is_family("pool"));
  CHECK(is_family("conv"));
  CHECK_FALSE(is_family("fft"));
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
  // An output larger than what the inputs broadcast to is their expand.
  task expanded = loaded(ctx, one_to_one("elementwise", "[4, 1]", "[4, 3]", "{ op = \"x\" }"));
  CHECK(std::get<bool>(tensor_records(expanded, "inputs").at(0).at("broadcast")));
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

TEST_CASE("a channel norm normalizes per channel, per sample and channel, or per group",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string affine = R"(name = "t"
family = "channel_norm"
inputs = [
  { name = "x", dtype = "f32", shape = [8, 6, 5, 7] },
  { name = "w", dtype = "f32", shape = [6] },
  { name = "b", dtype = "f32", shape = [6] },
]
outputs = [ { name = "y", dtype = "f32", shape = [8, 6, 5, 7] } ]
params = { op = "batch", affine = true }
)";
  task batch = loaded(ctx, affine);
  CHECK(derived<int64_t>(batch, "batch") == 8);
  CHECK(derived<int64_t>(batch, "channels") == 6);
  CHECK(derived<int64_t>(batch, "spatial") == 35);
  CHECK(derived<int64_t>(batch, "groups") == 6);
  CHECK(derived<int64_t>(batch, "channels_per_group") == 1);
  CHECK(derived<double>(batch, "eps") == 1e-5);
  CHECK(derived<bool>(batch, "affine"));
  CHECK(derived<bool>(batch, "op_batch"));
  CHECK_FALSE(derived<bool>(batch, "op_group"));
  CHECK(batch.torch == "torch.nn.functional.batch_norm(x, None, None, weight=w, bias=b, "
                       "training=True, eps=1e-5)");
  CHECK(batch.cost.flops == 8.0 * 1680 + 3.0 * 6);
  CHECK(batch.cost.bytes == 4.0 * (1680 + 6 + 6 + 1680));

  task group = loaded(ctx, one_to_one("channel_norm", "[2, 6, 9]", "[2, 6, 9]",
                                      "{ op = \"group\", groups = 3, eps = 1e-6 }"));
  CHECK(derived<int64_t>(group, "groups") == 3);
  CHECK(derived<int64_t>(group, "channels_per_group") == 2);
  CHECK(group.torch == "torch.nn.functional.group_norm(x, 3, eps=1e-6)");
  CHECK(derived<int64_t>(group, "outer") == 6); // the rows of a layer norm
  CHECK(derived<int64_t>(group, "axis") == 18);
  CHECK(derived<int64_t>(group, "inner") == 1);
  CHECK(batch.derived.scalars.count("outer") == 0); // batch statistics are no rows
  CHECK(group.cost.flops == 6.0 * 108 + 3.0 * 6);
  task instance =
      loaded(ctx, one_to_one("channel_norm", "[2, 6, 9]", "[2, 6, 9]", "{ op = \"instance\" }"));
  CHECK(instance.torch == "torch.nn.functional.instance_norm(x, eps=1e-5)");
  CHECK(derived<int64_t>(instance, "groups") == 6);

  CHECK(problems(ctx, one_to_one("channel_norm", "[2, 6, 9]", "[2, 6, 9]",
                                 "{ op = \"group\", groups = 4 }")) ==
        at(ctx, 5, 35) + "params.groups 4 does not divide the 6 channels of input 'x'");
  CHECK(problems(ctx, one_to_one("channel_norm", "[2, 6, 9]", "[2, 6, 9]", "{ op = \"group\" }")) ==
        at(ctx, 5, 10) +
            "a group norm needs param 'groups' (an integer that divides the channels)");
  CHECK(problems(ctx, one_to_one("channel_norm", "[2, 6, 9]", "[2, 6, 9]",
                                 "{ op = \"batch\", groups = 2 }")) ==
        at(ctx, 5, 35) + "params.groups is for op \"group\" only");
  CHECK(problems(ctx, one_to_one("channel_norm", "[4, 6]", "[4, 6]", "{ op = \"instance\" }")) ==
        at(ctx, 3, 49) +
            "inputs[0] ('x') has shape [4, 6]: an instance norm needs more than one spatial "
            "element (torch refuses one)");
  CHECK(problems(ctx, one_to_one("channel_norm", "[1, 6, 1]", "[1, 6, 1]", "{ op = \"batch\" }")) ==
        at(ctx, 3, 49) +
            "inputs[0] ('x') has shape [1, 6, 1]: a batch norm needs more than one value per "
            "channel (torch refuses one)");
  CHECK(problems(ctx, one_to_one("channel_norm", "[6]", "[6]", "{ op = \"batch\" }")) ==
        at(ctx, 3, 49) +
            "inputs[0] ('x') has shape [6], but a channel norm takes [batch, channels, "
            "*spatial] (rank >= 2)");
  std::string wrong = affine;
  wrong.replace(wrong.find("[6] },\n  { name = \"b\""), 3, "[8]");
  CHECK(problems(ctx, wrong) ==
        at(ctx, 5, 40) +
            "inputs[1] ('w') has shape [8], but an affine weight per channel of [8, 6, 5, 7] "
            "gives [6]");
}

TEST_CASE("a reduce over several adjacent dims, to a scalar too, and logsumexp",
          "[engine][family]") {
  ks::test::test_context ctx;
  task two = loaded(ctx, one_to_one("reduce", "[3, 4, 5, 6]", "[3, 6]",
                                    "{ op = \"logsumexp\", dims = [2, -3] }"));
  CHECK(derived<int64_t>(two, "outer") == 3);
  CHECK(derived<int64_t>(two, "axis") == 20);
  CHECK(derived<int64_t>(two, "inner") == 6);
  CHECK(derived<std::vector<int64_t>>(two, "dims") == std::vector<int64_t>{1, 2});
  CHECK(derived<bool>(two, "op_logsumexp"));
  CHECK(two.torch == "torch.logsumexp(x, dim=(1, 2))");
  CHECK(two.cost.flops == 4.0 * 360 + 2.0 * 18);
  task scalar =
      loaded(ctx, one_to_one("reduce", "[3, 4]", "[]", "{ op = \"sum\", dims = [0, 1] }"));
  CHECK(derived<int64_t>(scalar, "axis") == 12);
  CHECK(derived<int64_t>(scalar, "outer") == 1);
  CHECK(scalar.torch == "torch.sum(x, dim=(0, 1))");
  task kept = loaded(ctx, one_to_one("reduce", "[3, 4, 5]", "[1, 1, 5]",
                                     "{ op = \"prod\", dims = [0, 1], keepdim = true }"));
  CHECK(kept.torch == "torch.prod(x.flatten(0, 1), dim=0, keepdim=True).reshape(1, 1, 5)");
  task flat =
      loaded(ctx, one_to_one("reduce", "[3, 4, 5]", "[5]", "{ op = \"prod\", dims = [0, 1] }"));
  CHECK(flat.torch == "torch.prod(x.flatten(0, 1), dim=0)");

  CHECK(problems(ctx, one_to_one("reduce", "[3, 4, 5]", "[3]",
                                 "{ op = \"sum\", dims = [1, 2] , "
                                 "keepdim = true }")) ==
        at(ctx, 4, 50) +
            "outputs[0] ('y') has shape [3], but a sum over dims (1, 2) of [3, 4, 5] with "
            "keepdim gives [3, 1, 1]");
  CHECK(problems(ctx, one_to_one("reduce", "[3, 4, 5]", "[3]", "{ op = \"argmax\", dims = [1, 2] }",
                                 "i64")) ==
        at(ctx, 5, 34) + "an argmax reduces one dim (torch.argmax takes one), not [1, 2]");
  CHECK(problems(ctx,
                 one_to_one("reduce", "[3, 4]", "[3]", "{ op = \"sum\", dim = 1, dims = [1] }")) ==
        at(ctx, 5, 40) + "give params.dim or params.dims, not both");
}

TEST_CASE("an l1 norm divides by the sum (or mean) of |x|; an l2 norm over all dims is the "
          "Frobenius norm",
          "[engine][family]") {
  ks::test::test_context ctx;
  task l1 = loaded(ctx, one_to_one("norm", "[6, 7]", "[6, 7]", "{ op = \"l1\", dim = 1 }"));
  CHECK(derived<double>(l1, "eps") == 1e-12);
  CHECK_FALSE(derived<bool>(l1, "mean"));
  CHECK(derived<bool>(l1, "op_l1"));
  CHECK(l1.torch == "torch.nn.functional.normalize(x, p=1.0, dim=1, eps=1e-12)");
  CHECK(l1.cost.flops == 3.0 * 42 + 1.0 * 6);
  task mean = loaded(ctx, one_to_one("norm", "[6, 7]", "[6, 7]",
                                     "{ op = \"l1\", dim = 1, mean = true, eps = 0 }"));
  CHECK(derived<bool>(mean, "mean"));
  CHECK(mean.torch == "x / torch.mean(torch.abs(x), dim=1, keepdim=True)");
  CHECK(mean.cost.flops == 3.0 * 42 + 2.0 * 6);
  task frobenius = loaded(ctx, one_to_one("norm", "[2, 3, 4]", "[2, 3, 4]",
                                          "{ op = \"l2\", dims = [0, 1, 2], eps = 0 }"));
  CHECK(derived<int64_t>(frobenius, "axis") == 24);
  CHECK(derived<int64_t>(frobenius, "outer") == 1);
  CHECK(frobenius.torch == "x / torch.linalg.vector_norm(x, dim=(0, 1, 2), keepdim=True)");
  task clamped =
      loaded(ctx, one_to_one("norm", "[2, 3, 4]", "[2, 3, 4]", "{ op = \"l1\", dims = [1, 2] }"));
  CHECK(clamped.torch ==
        "x / torch.clamp(torch.sum(torch.abs(x), dim=(1, 2), keepdim=True), min=1e-12)");

  CHECK(problems(ctx, one_to_one("norm", "[6, 7]", "[6, 7]",
                                 "{ op = \"rms\", dim = 1, mean = true }")) ==
        at(ctx, 5, 40) + "params.mean is for op \"l1\" only (divide by the mean of |x|)");
  CHECK(
      problems(ctx,
               one_to_one("norm", "[6, 7]", "[6, 7]", "{ op = \"l1\", dim = 1, affine = true }")) ==
      at(ctx, 5, 41) + "an l1 norm has no affine weights (torch.nn.functional.normalize has none)");
}

TEST_CASE("a 3-d pool takes [batch, channels, depth, height, width] and a window per dim",
          "[engine][family]") {
  ks::test::test_context ctx;
  task three =
      loaded(ctx, one_to_one("pool", "[2, 3, 9, 10, 11]", "[2, 3, 5, 10, 5]",
                             "{ op = \"max\", kernel_size = [3, 1, 2], stride = [2, 1, 2], "
                             "padding = [1, 0, 0] }"));
  CHECK(derived<int64_t>(three, "dims") == 3);
  CHECK(derived<int64_t>(three, "in_d") == 9);
  CHECK(derived<int64_t>(three, "out_d") == 5);
  CHECK(derived<int64_t>(three, "k_d") == 3);
  CHECK(derived<int64_t>(three, "s_d") == 2);
  CHECK(derived<int64_t>(three, "p_d") == 1);
  CHECK(derived<int64_t>(three, "d_d") == 1);
  CHECK(derived<int64_t>(three, "k_h") == 1);
  CHECK(three.torch == "torch.nn.functional.max_pool3d(x, kernel_size=(3, 1, 2), stride=(2, 1, "
                       "2), padding=(1, 0, 0), dilation=1)");
  CHECK(three.cost.flops == 2.0 * 3 * 5 * 10 * 5 * 6);
  task cube = loaded(ctx, one_to_one("pool", "[1, 1, 4, 4, 4]", "[1, 1, 2, 2, 2]",
                                     "{ op = \"avg\", kernel_size = 2 }"));
  CHECK(cube.torch == "torch.nn.functional.avg_pool3d(x, kernel_size=2, stride=2, padding=0)");
  task two = loaded(
      ctx, one_to_one("pool", "[1, 1, 4, 4]", "[1, 1, 2, 2]", "{ op = \"avg\", kernel_size = 2 }"));
  CHECK(derived<int64_t>(two, "k_d") == 1);
  CHECK(derived<int64_t>(two, "p_d") == 0);
  CHECK(derived<int64_t>(two, "out_d") == 1);

  CHECK(problems(ctx, one_to_one("pool", "[1, 1, 4, 4, 4]", "[1, 1, 2, 2, 2]",
                                 "{ op = \"max\", kernel_size = [2, 2] }")) ==
        at(ctx, 5, 38) +
            "params.kernel_size of a 3-d pool is one integer or 3 of them, got [2, 2]");
  CHECK(problems(ctx, one_to_one("pool", "[1, 1, 4, 4]", "[1, 1, 2, 2]",
                                 "{ op = \"max\", dims = 3, kernel_size = 2 }")) ==
        at(ctx, 3, 49) +
            "inputs[0] ('x') has shape [1, 1, 4, 4], but a 3-d pool takes [batch, channels, "
            "depth, height, width]");
}

namespace {

/// Returns a conv manifest: x (line 4), the weight w (line 5), a bias b when `b` is given (line
/// 6), y and the params on the last line.
std::string conv(const std::string& x, const std::string& w, const std::string& y,
                 const std::string& params, const std::string& b = "") {
  std::string text = "name = \"t\"\nfamily = \"conv\"\ninputs = [\n"
                     "  { name = \"x\", dtype = \"f32\", shape = " +
                     x + " },\n  { name = \"w\", dtype = \"f32\", shape = " + w + " },\n";
  if (!b.empty())
    text += "  { name = \"b\", dtype = \"f32\", shape = " + b + " },\n";
  return text + "]\noutputs = [ { name = \"y\", dtype = \"f32\", shape = " + y +
         " } ]\nparams = " + params + "\n";
}

} // namespace

TEST_CASE("a conv is 1-, 2- or 3-d, standard or transposed, grouped or depthwise, with its "
          "weight in torch's layout and torch's output size",
          "[engine][family]") {
  ks::test::test_context ctx;
  // Standard 2-d: stride, padding and dilation per dim, 2 groups, a bias.
  task two =
      loaded(ctx, conv("[2, 4, 9, 11]", "[6, 2, 3, 5]", "[2, 6, 4, 7]",
                       "{ stride = [2, 1], padding = [1, 2], dilation = 2, groups = 2 }", "[6]"));
  CHECK(derived<int64_t>(two, "dims") == 2);
  CHECK_FALSE(derived<bool>(two, "transposed"));
  CHECK(derived<bool>(two, "has_bias"));
  CHECK(derived<int64_t>(two, "batch") == 2);
  CHECK(derived<int64_t>(two, "in_channels") == 4);
  CHECK(derived<int64_t>(two, "out_channels") == 6);
  CHECK(derived<int64_t>(two, "groups") == 2);
  CHECK(derived<int64_t>(two, "in_per_group") == 2);
  CHECK(derived<int64_t>(two, "out_per_group") == 3);
  CHECK_FALSE(derived<bool>(two, "depthwise"));
  CHECK_FALSE(derived<bool>(two, "pointwise"));
  CHECK(derived<int64_t>(two, "in_d") == 1);
  CHECK(derived<int64_t>(two, "in_h") == 9);
  CHECK(derived<int64_t>(two, "in_w") == 11);
  CHECK(derived<int64_t>(two, "out_d") == 1);
  CHECK(derived<int64_t>(two, "out_h") == 4);
  CHECK(derived<int64_t>(two, "out_w") == 7);
  CHECK(derived<int64_t>(two, "k_d") == 1);
  CHECK(derived<int64_t>(two, "k_h") == 3);
  CHECK(derived<int64_t>(two, "k_w") == 5);
  CHECK(derived<int64_t>(two, "s_d") == 1);
  CHECK(derived<int64_t>(two, "s_h") == 2);
  CHECK(derived<int64_t>(two, "s_w") == 1);
  CHECK(derived<int64_t>(two, "p_d") == 0);
  CHECK(derived<int64_t>(two, "p_h") == 1);
  CHECK(derived<int64_t>(two, "p_w") == 2);
  CHECK(derived<int64_t>(two, "d_d") == 1);
  CHECK(derived<int64_t>(two, "d_h") == 2);
  CHECK(derived<int64_t>(two, "d_w") == 2);
  CHECK(derived<int64_t>(two, "outpad_w") == 0);
  CHECK(derived<int64_t>(two, "in_spatial") == 99);
  CHECK(derived<int64_t>(two, "out_spatial") == 28);
  CHECK(derived<int64_t>(two, "kernel_volume") == 15);
  CHECK(two.torch == "torch.nn.functional.conv2d(x, w, bias=b, stride=(2, 1), padding=(1, 2), "
                     "dilation=2, groups=2)");
  // 2 x N x C_out x out_spatial x C_in / groups x kernel volume, + a bias per output.
  CHECK(two.cost.flops == 2.0 * 2 * 6 * 28 * 2 * 15 + 2 * 6 * 28);
  CHECK(two.cost.bytes == 4.0 * (2 * 4 * 99 + 6 * 2 * 15 + 6 + 2 * 6 * 28));
  CHECK(two.reference_source.find("// Reference of task t, rendered from families/conv/") == 0);

  // Transposed 3-d: the weight is [C_in, C_out / groups, k...], output_padding per dim.
  task three = loaded(ctx, conv("[1, 4, 3, 4, 5]", "[4, 3, 2, 3, 3]", "[1, 6, 7, 7, 10]",
                                "{ transposed = true, stride = 2, padding = [0, 1, 1], "
                                "output_padding = [1, 0, 1], groups = 2 }"));
  CHECK(derived<int64_t>(three, "dims") == 3);
  CHECK(derived<bool>(three, "transposed"));
  CHECK_FALSE(derived<bool>(three, "has_bias"));
  CHECK(derived<int64_t>(three, "in_channels") == 4);
  CHECK(derived<int64_t>(three, "out_channels") == 6);
  CHECK(derived<int64_t>(three, "in_per_group") == 2);
  CHECK(derived<int64_t>(three, "out_per_group") == 3);
  CHECK(derived<int64_t>(three, "out_d") == 7);
  CHECK(derived<int64_t>(three, "out_h") == 7);
  CHECK(derived<int64_t>(three, "out_w") == 10);
  CHECK(derived<int64_t>(three, "k_d") == 2);
  CHECK(derived<int64_t>(three, "s_h") == 2);
  CHECK(derived<int64_t>(three, "p_d") == 0);
  CHECK(derived<int64_t>(three, "outpad_d") == 1);
  CHECK(derived<int64_t>(three, "outpad_h") == 0);
  CHECK(derived<int64_t>(three, "outpad_w") == 1);
  CHECK(three.torch == "torch.nn.functional.conv_transpose3d(x, w, stride=2, padding=(0, 1, 1), "
                       "output_padding=(1, 0, 1), groups=2, dilation=1)");
  // Counted per input element: 2 x N x C_in x in_spatial x C_out / groups x kernel volume.
  CHECK(three.cost.flops == 2.0 * 1 * 4 * 60 * 3 * 18);

  // Depthwise 1-d (groups = channels): a 1-d conv is a 3-d one of depth and height 1.
  task one =
      loaded(ctx, conv("[3, 8, 50]", "[8, 1, 5]", "[3, 8, 50]", "{ groups = 8, padding = 2 }"));
  CHECK(derived<int64_t>(one, "dims") == 1);
  CHECK(derived<bool>(one, "depthwise"));
  CHECK(derived<int64_t>(one, "in_per_group") == 1);
  CHECK(derived<int64_t>(one, "in_h") == 1);
  CHECK(derived<int64_t>(one, "k_h") == 1);
  CHECK(derived<int64_t>(one, "p_h") == 0);
  CHECK(derived<int64_t>(one, "p_w") == 2);
  CHECK(derived<int64_t>(one, "out_w") == 50);
  CHECK(one.torch == "torch.nn.functional.conv1d(x, w, stride=1, padding=2, dilation=1, groups=8)");
  CHECK(one.cost.flops == 2.0 * 3 * 8 * 50 * 1 * 5);
  // A depthwise conv with a channel multiplier of 2; a pointwise one.
  task multiplier =
      loaded(ctx, conv("[1, 4, 7, 7]", "[8, 1, 3, 3]", "[1, 8, 5, 5]", "{ groups = 4 }"));
  CHECK(derived<bool>(multiplier, "depthwise"));
  CHECK(derived<int64_t>(multiplier, "out_per_group") == 2);
  task pointwise = loaded(ctx, conv("[2, 3, 4, 4]", "[5, 3, 1, 1]", "[2, 5, 4, 4]", "{}"));
  CHECK(derived<bool>(pointwise, "pointwise"));
  CHECK_FALSE(derived<bool>(pointwise, "depthwise"));
  CHECK(pointwise.torch ==
        "torch.nn.functional.conv2d(x, w, stride=1, padding=0, dilation=1, groups=1)");
  // A transposed 1-d conv with a bias, stride 3 and dilation 2: output padding below either.
  task up = loaded(ctx, conv("[2, 3, 5]", "[3, 4, 3]", "[2, 4, 19]",
                             "{ transposed = true, stride = 3, dilation = 2, output_padding = 2 "
                             "}",
                             "[4]"));
  CHECK(derived<int64_t>(up, "out_w") == 19);
  CHECK(up.torch == "torch.nn.functional.conv_transpose1d(x, w, bias=b, stride=3, padding=0, "
                    "output_padding=2, groups=1, dilation=2)");
  CHECK(up.cost.flops == 2.0 * 2 * 3 * 5 * 4 * 3 + 2 * 4 * 19);
}

TEST_CASE("a conv's params and tensors are checked where they are written", "[engine][family]") {
  ks::test::test_context ctx;
  CHECK(problems(ctx,
                 conv("[1, 4, 8, 8]", "[6, 4, 3, 3]", "[1, 6, 6, 6]", "{ output_padding = 1 }")) ==
        at(ctx, 8, 29) +
            "params.output_padding is for transposed convolutions only (transposed = true)");
  CHECK(problems(ctx, conv("[1, 4, 8]", "[4, 6, 3]", "[1, 6, 17]",
                           "{ transposed = true, stride = 2, output_padding = 2 }")) ==
        at(ctx, 8, 60) +
            "params.output_padding 2 must be smaller than the stride 2 or the dilation 1 in every "
            "dim (torch's rule)");
  CHECK(problems(ctx, conv("[1, 4, 8, 8]", "[6, 4, 3, 3]", "[1, 6, 6, 6]",
                           "{ stride = 0, dilation = [1, 0], padding = -1, groups = 0 }")) ==
        at(ctx, 8, 21) + "params.stride must be >= 1, got 0\n" + at(ctx, 8, 35) +
            "params.dilation must be >= 1, got [1, 0]\n" + at(ctx, 8, 53) +
            "params.padding must be >= 0, got -1\n" + at(ctx, 8, 66) +
            "params.groups must be >= 1, got 0");
  CHECK(problems(ctx,
                 conv("[1, 4, 8, 8]", "[6, 4, 3, 3]", "[1, 6, 6, 6]", "{ stride = [1, 2, 3] }")) ==
        at(ctx, 8, 21) + "params.stride of a 2-d conv is one integer or 2 of them, got [1, 2, 3]");
  CHECK(problems(ctx, conv("[1, 6, 8, 8]", "[4, 2, 3, 3]", "[1, 4, 6, 6]", "{ groups = 4 }")) ==
        at(ctx, 8, 21) + "params.groups 4 does not divide the 6 channels of input 'x'");
  CHECK(problems(ctx, conv("[1, 4, 8, 8]", "[6, 1, 3, 3]", "[1, 6, 6, 6]", "{ groups = 4 }")) ==
        at(ctx, 8, 21) +
            "params.groups 4 does not divide the 6 output channels of weight 'w' [6, 1, 3, 3]");
  CHECK(problems(ctx, conv("[1, 4, 8, 8]", "[6, 4, 3, 3]", "[1, 6, 6, 6]", "{ groups = 2 }")) ==
        at(ctx, 5, 40) +
            "inputs[1] ('w') has shape [6, 4, 3, 3], but a 2-d conv of input 'x' [1, 4, 8, 8] in "
            "2 groups takes a weight [out_channels, 2, k_h, k_w] (torch's layout: [out_channels, "
            "in_channels / groups, kernel...])");
  CHECK(problems(ctx,
                 conv("[1, 4, 8, 8]", "[6, 2, 3, 3]", "[1, 6, 10, 10]", "{ transposed = true }")) ==
        at(ctx, 5, 40) +
            "inputs[1] ('w') has shape [6, 2, 3, 3], but a 2-d transposed conv of input 'x' [1, "
            "4, 8, 8] takes a weight [4, out_channels / groups, k_h, k_w] (torch's layout: "
            "[in_channels, out_channels / groups, kernel...])");
  CHECK(problems(ctx, conv("[1, 4, 8, 8]", "[6, 4, 3]", "[1, 6, 6, 6]", "{}")) ==
        at(ctx, 5, 40) +
            "inputs[1] ('w') has shape [6, 4, 3], but a 2-d conv of input 'x' [1, 4, 8, 8] takes "
            "a weight of rank 4 (torch's layout: [out_channels, in_channels / groups, "
            "kernel...])");
  CHECK(problems(ctx, conv("[1, 1, 4]", "[1, 1, 5]", "[1, 1, 1]", "{}")) ==
        at(ctx, 5, 40) +
            "inputs[1] ('w') has shape [1, 1, 5]: the window (kernel 5, stride 1, padding 0, "
            "dilation 1) does not fit input 'x' [1, 1, 4]");
  CHECK(problems(ctx, conv("[1, 1, 4]", "[1, 1, 3]", "[1, 1, 1]",
                           "{ transposed = true, padding = 4 }")) ==
        at(ctx, 8, 41) +
            "params.padding 4 leaves no output: 1-d transposed conv (kernel 3, stride 1, padding "
            "4, dilation 1) of input 'x' [1, 1, 4] gives (in - 1) * stride - 2 * padding + "
            "dilation * (kernel - 1) + output_padding + 1 < 1");
  CHECK(problems(ctx, conv("[1, 4, 8, 8]", "[6, 4, 3, 3]", "[1, 6, 8, 8]", "{}")) ==
        at(ctx, 7, 50) +
            "outputs[0] ('y') has shape [1, 6, 8, 8], but this 2-d conv of [1, 4, 8, 8] by "
            "weight [6, 4, 3, 3] gives [1, 6, 6, 6]");
  CHECK(problems(ctx, conv("[1, 4, 8, 8]", "[6, 4, 3, 3]", "[1, 6, 6, 6]", "{}", "[4]")) ==
        at(ctx, 6, 40) +
            "inputs[2] ('b') has shape [4], but a bias per output channel of this 2-d conv gives "
            "[6]");
  CHECK(problems(ctx, conv("[4, 8]", "[6, 4]", "[4, 6]", "{}")) ==
        at(ctx, 4, 40) +
            "inputs[0] ('x') has shape [4, 8], but a conv takes [batch, channels, width] (1-d), "
            "[batch, channels, height, width] (2-d) or [batch, channels, depth, height, width] "
            "(3-d)");
  CHECK(problems(ctx, conv("[1, 4, 8]", "[6, 4, 3]", "[1, 6, 6]", "{ kernel_size = 3 }")) ==
        at(ctx, 8, 26) + "unknown param 'kernel_size' for family conv (its params: bias, dilation, "
                         "epilogue, groups, output_padding, padding, stride, transposed)");
}

TEST_CASE("a matmul folds A's leading dims into m, scales by alpha and keeps a triangle",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string folded = R"(name = "t"
family = "matmul"
inputs = [
  { name = "A", dtype = "f32", shape = [2, 3, 5, 7] },
  { name = "B", dtype = "f32", shape = [7, 4] },
]
outputs = [ { name = "C", dtype = "f32", shape = [2, 3, 5, 4] } ]
params = { alpha = 0.5, m = 30 }
)";
  task t = loaded(ctx, folded);
  CHECK(derived<int64_t>(t, "m") == 30);
  CHECK(derived<int64_t>(t, "batch") == 1);
  CHECK(derived<bool>(t, "folded"));
  CHECK_FALSE(derived<bool>(t, "batched"));
  CHECK(derived<int64_t>(t, "lda") == 7);
  CHECK(derived<int64_t>(t, "batch_stride_a") == 0);
  CHECK(derived<double>(t, "alpha") == 0.5);
  CHECK_FALSE(derived<bool>(t, "triangular"));
  CHECK(t.torch == "torch.matmul(A, B) * 0.5");
  CHECK(t.cost.flops == 30.0 * 4 * (2 * 7 + 1));

  task upper = loaded(ctx, R"(name = "t"
family = "matmul"
inputs = [ { name = "A", dtype = "f32", shape = [4, 3] }, { name = "B", dtype = "f32", shape = [3, 4] } ]
outputs = [ { name = "C", dtype = "f32", shape = [4, 4] } ]
params = { triangle = "upper" }
)");
  CHECK(derived<bool>(upper, "triangle_upper"));
  CHECK_FALSE(derived<bool>(upper, "triangle_lower"));
  CHECK(derived<bool>(upper, "triangular"));
  CHECK(upper.torch == "torch.triu(torch.matmul(A, B))");
  CHECK(upper.cost.flops == 10.0 * 2 * 3); // 4 + 3 + 2 + 1 outputs kept

  std::string transposed = folded;
  transposed.replace(transposed.find("alpha = 0.5, m = 30"), 19, "transpose_a = true");
  CHECK(problems(ctx, transposed) ==
        at(ctx, 4, 40) +
            "inputs[0] ('A') has shape [2, 3, 5, 7], but a matmul operand is [rows, cols] or "
            "[batch, rows, cols] (an A of higher rank times a matrix B, not transposed, folds "
            "its leading dims into its rows)");
  std::string triangle = folded;
  triangle.replace(triangle.find("alpha = 0.5"), 11, "triangle = \"uper\"");
  CHECK(problems(ctx, triangle) ==
        at(ctx, 8, 23) +
            "unknown matmul triangle 'uper' (did you mean 'upper'?); valid: \"lower\", \"upper\"");
  // torch keeps a triangle of each matrix: the folded rows cannot.
  std::string folded_triangle = folded;
  folded_triangle.replace(folded_triangle.find("alpha = 0.5"), 11, "triangle = \"lower\"");
  CHECK_THAT(problems(ctx, folded_triangle),
             Catch::Contains("params.triangle keeps a triangle of each matrix, but A [2, 3, 5, 7] "
                             "folds its leading dims into the rows of one product"));
}

TEST_CASE("a gather picks along dim at an int64 index drawn in range", "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = R"(name = "t"
family = "gather"
inputs = [
  { name = "x", dtype = "f32", shape = [4, 10, 3] },
  { name = "target", dtype = "i64", shape = [4, 1, 3], init = "randint", low = 0, high = 10 },
]
outputs = [ { name = "y", dtype = "f32", shape = [4, 1, 3] } ]
params = { dim = 1 }
)";
  task t = loaded(ctx, manifest);
  CHECK(derived<int64_t>(t, "outer") == 4);
  CHECK(derived<int64_t>(t, "axis") == 10);
  CHECK(derived<int64_t>(t, "inner") == 3);
  CHECK(derived<int64_t>(t, "index_extent") == 1);
  CHECK(t.torch == "torch.gather(x, 1, target)");
  CHECK(t.cost.flops == 0);
  CHECK(t.cost.bytes == 12.0 * 8 + 12.0 * 4 + 12.0 * 4);

  std::string shape = manifest;
  shape.replace(shape.find("[4, 1, 3], init"), 9, "[4, 1, 2]");
  CHECK(problems(ctx, shape) ==
        at(ctx, 5, 45) +
            "inputs[1] ('target') has shape [4, 1, 2], but a gather's index has the extents "
            "of x [4, 10, 3] but along dim 1 (as [4, 1, 3])");
  std::string range = manifest;
  range.replace(range.find("high = 10"), 9, "high = 11");
  CHECK(problems(ctx, range) ==
        at(ctx, 5, 30) +
            "inputs[1] ('target') must be drawn in range: init = \"randint\", low >= 0, high "
            "<= 10 (x's extent along dim 1), so that every trial gathers");
  std::string type = manifest;
  type.replace(type.find("\"i64\""), 5, "\"i32\"");
  CHECK(problems(ctx, type) ==
        at(ctx, 5, 30) +
            "inputs[1] ('target') is the index: it must be i64 for family gather, got i32");
}

TEST_CASE("an elementwise expression reads u8, i32 and i64 inputs as float", "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = R"(name = "t"
family = "elementwise"
inputs = [
  { name = "x", dtype = "f32", shape = [4, 6] },
  { name = "mask", dtype = "u8", shape = [4, 6], init = "randint", low = 0, high = 2 },
]
outputs = [ { name = "y", dtype = "f32", shape = [4, 6] } ]
params = { op = "x * mask" }
)";
  task t = loaded(ctx, manifest);
  CHECK_FALSE(derived<bool>(t, "all_inputs_f32"));
  CHECK(t.cost.bytes == 24.0 * (4 + 1 + 4));
  CHECK(t.reference_source.find("const uint8_t* __restrict__ in_mask") != std::string::npos);
  CHECK(t.reference_source.find("const float v_mask = (float)in_mask[i];") != std::string::npos);
  std::string half = manifest;
  half.replace(half.find("\"u8\""), 4, "\"f16\"");
  const std::string init = ", init = \"randint\", low = 0, high = 2";
  half.replace(half.find(init), init.size(), "");
  CHECK(problems(ctx, half) ==
        at(ctx, 5, 28) +
            "inputs[1] ('mask') must be f32, or u8, i32 or i64 (read as float) for family "
            "elementwise, got f16");
}

TEST_CASE("a task of another family keeps free params and needs its own reference and cost",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = one_to_one("fft", "[4]", "[4]", "{ anything = \"goes\", n = 4 }");
  CHECK(problems(ctx, manifest) ==
        at(ctx, 1, 1) +
            "missing required key 'reference' (a string: the reference .cu, relative "
            "to this file): family 'fft' is none of docs/tasks.md's (channel_norm, concat, conv, "
            "elementwise, gather, matmul, matvec, norm, pool, reduce, scan, softmax), whose "
            "references are rendered\n" +
            at(ctx, 1, 1) + "missing required key 'cost' (a table: { flops = ..., bytes = ... })");
  // A misspelt family is most likely one of ours: the message suggests it.
  std::string misspelt = one_to_one("softmx", "[4]", "[4]", "{ dim = 0 }");
  CHECK_THAT(problems(ctx, misspelt), Catch::Contains("family 'softmx' is none of docs/tasks.md's "
                                                      "(did you mean 'softmax'? channel_norm, "));
  ctx.write("fft.cu", "// fft\n");
  task t = loaded(ctx, manifest + "reference = \"fft.cu\"\ncost = { flops = 1.0, bytes = 32.0 }\n");
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

TEST_CASE("a reduce or a scan reads params.map of several inputs, broadcast and of integer dtypes "
          "too, as it reads them",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = R"(name = "t"
family = "reduce"
inputs = [
  { name = "p", dtype = "f32", shape = [8, 6] },
  { name = "t", dtype = "f32", shape = [8, 6] },
  { name = "w", dtype = "f32", shape = [6] },
]
outputs = [ { name = "y", dtype = "f32", shape = [] } ]
params = { op = "mean", dims = [0, 1], map = "(p - t) ** 2 * w" }
)";
  task t = loaded(ctx, manifest);
  CHECK(derived<bool>(t, "mapped"));
  CHECK(derived<int64_t>(t, "axis") == 48);
  CHECK(t.torch == "torch.mean(((((p - t) ** 2.0) * w)), dim=(0, 1))");
  // The map's three operations and the mean's add per element, its divide per output.
  CHECK(t.cost.flops == 3.0 * 48 + 48 + 1);
  CHECK(t.cost.bytes == 4.0 * (48 + 48 + 6 + 1));
  std::vector<template_record> inputs = tensor_records(t, "inputs");
  REQUIRE(inputs.size() == 3);
  CHECK(std::get<std::string>(inputs[2]["offset"]) == "(i % 6)");
  CHECK(std::get<bool>(inputs[2]["broadcast"]));
  std::string source = derived<std::string>(t, "source");
  CHECK(source.find("const float v_w = __ldg(in_w + ((i % 6)));") != std::string::npos);
  CHECK(source.find("const float4 q_p = __ldcs(reinterpret_cast<const float4*>(in_p + i));") !=
        std::string::npos);
  CHECK(source.find("if (n_inputs != 3) return 1;") != std::string::npos);

  // Without a map the source is the one input, read whole.
  task plain = loaded(ctx, one_to_one("reduce", "[3, 4]", "[3]", "{ op = \"sum\", dim = 1 }"));
  CHECK_FALSE(derived<bool>(plain, "mapped"));
  CHECK(derived<std::string>(plain, "source").find("return map(v_x);") != std::string::npos);

  // A masked cumsum: a u8 mask read as 0.0 and 1.0.
  task scan = loaded(ctx, R"(name = "t"
family = "scan"
inputs = [
  { name = "x", dtype = "f32", shape = [4, 9] },
  { name = "mask", dtype = "u8", shape = [4, 9], init = "randint", low = 0, high = 2 },
]
outputs = [ { name = "y", dtype = "f32", shape = [4, 9] } ]
params = { op = "cumsum", dim = 1, map = "x * mask" }
)");
  CHECK(scan.torch == "torch.cumsum(((x * mask)), dim=1)");
  CHECK(derived<std::string>(scan, "source").find("uchar4 u_mask") != std::string::npos);

  // Two inputs without a map; a map that leaves an input out; inputs that do not broadcast.
  std::string two = manifest;
  two.replace(two.find(", map = \"(p - t) ** 2 * w\""), 26, "");
  CHECK(problems(ctx, two) == at(ctx, 9, 10) + "family reduce takes 1 input (x), the task has 3");
  std::string unused = manifest;
  unused.replace(unused.find(" * w\""), 5, "\"");
  CHECK(problems(ctx, unused) == at(ctx, 9, 46) + "params.map does not use input 'w'");
  std::string apart = manifest;
  apart.replace(apart.find("shape = [6]"), 11, "shape = [5]");
  CHECK(problems(ctx, apart) ==
        at(ctx, 6, 40) +
            "inputs[2] ('w') has shape [5], which does not broadcast with the other inputs of "
            "params.map (aligned from the last dim, each extent equal or 1)");
}

TEST_CASE("a reduce of several maps (params.map \"a; b\") sums each into its own output in one "
          "read",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = R"M(name = "t"
family = "reduce"
inputs = [
  { name = "a", dtype = "f32", shape = [8, 6] },
  { name = "p", dtype = "f32", shape = [8, 6] },
  { name = "n", dtype = "f32", shape = [8, 6] },
]
outputs = [ { name = "dp", dtype = "f32", shape = [8] }, { name = "dn", dtype = "f32", shape = [8] } ]
params = { op = "sum", dim = 1, map = "(a - p) * (a - p); (a - n) * (a - n)" }
)M";
  task t = loaded(ctx, manifest);
  CHECK(derived<int64_t>(t, "maps") == 2);
  CHECK(t.torch == "(torch.sum((((a - p) * (a - p))), dim=1), torch.sum((((a - n) * (a - n))), "
                   "dim=1))");
  // Both maps' three operations and both sums' add per element.
  CHECK(t.cost.flops == 6.0 * 48 + 2.0 * 48);
  std::string source = derived<std::string>(t, "source");
  CHECK(source.find("enum : int { maps = 2 };") != std::string::npos);
  CHECK(source.find("void quads(int64_t i, float4 (&r)[2]) const") != std::string::npos);
  CHECK(source.find("s.which = k;") != std::string::npos);
  // One map keeps its single output.
  task one = loaded(ctx, one_to_one("reduce", "[3, 4]", "[3]", "{ op = \"sum\", dim = 1 }"));
  CHECK(derived<int64_t>(one, "maps") == 1);

  // A max of two maps; one output for two maps; a scan of two maps; a bad second expression.
  std::string max = manifest;
  max.replace(max.find("op = \"sum\""), 10, "op = \"max\"");
  CHECK(problems(ctx, max) ==
        at(ctx, 9, 39) + "params.map holds 2 expressions (separated by ';'): that is for a sum "
                         "or a mean, one output each, not a max");
  std::string single = manifest;
  single.replace(single.find(", { name = \"dn\""), 46, "");
  CHECK(problems(ctx, single).find("family reduce takes 1 input") == std::string::npos);
  CHECK(problems(ctx, single).find("2 outputs") != std::string::npos);
  std::string bad = manifest;
  bad.replace(bad.find("(a - n) * (a - n)"), 17, "(a - n) * (a -");
  CHECK(problems(ctx, bad).find("params.map") != std::string::npos);
  task scan_one = loaded(ctx, R"(name = "t"
family = "scan"
inputs = [ { name = "x", dtype = "f32", shape = [4, 9] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4, 9] } ]
params = { op = "cumsum", dim = 1, map = "x * 2.0" }
)");
  CHECK(derived<int64_t>(scan_one, "maps") == 1);
  CHECK(problems(ctx, R"(name = "t"
family = "scan"
inputs = [ { name = "x", dtype = "f32", shape = [4, 9] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4, 9] } ]
params = { op = "cumsum", dim = 1, map = "x * 2.0; x" }
)") == at(ctx, 5, 42) + "a scan takes one expression in params.map (';' separates a reduce's)");
}

TEST_CASE("a concat lays its inputs one after another along dim, any dtype", "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = R"(name = "t"
family = "concat"
inputs = [
  { name = "a", dtype = "f32", shape = [2, 3, 4] },
  { name = "b", dtype = "f32", shape = [2, 5, 4] },
]
outputs = [ { name = "y", dtype = "f32", shape = [2, 8, 4] } ]
params = { dim = -2 }
)";
  task t = loaded(ctx, manifest);
  CHECK(derived<int64_t>(t, "outer") == 2);
  CHECK(derived<int64_t>(t, "axis") == 8);
  CHECK(derived<int64_t>(t, "inner") == 4);
  CHECK(derived<int64_t>(t, "dim") == 1);
  CHECK(derived<std::string>(t, "word") == "uint32_t");
  std::vector<template_record> records = tensor_records(t, "inputs");
  REQUIRE(records.size() == 2);
  CHECK(std::get<int64_t>(records[1].at("start")) == 3);
  CHECK(std::get<int64_t>(records[1].at("extent")) == 5);
  CHECK(t.torch == "torch.cat([a, b], dim=1)");
  CHECK(t.cost.flops == 0);
  CHECK(t.cost.bytes == (24.0 + 40.0 + 64.0) * 4);

  std::string shape = manifest;
  shape.replace(shape.find("[2, 5, 4]"), 9, "[3, 5, 4]");
  CHECK(problems(ctx, shape) ==
        at(ctx, 5, 40) +
            "inputs[1] ('b') has shape [3, 5, 4], but a concatenation along dim 1 into [2, 8, "
            "4] needs the output's extents but along dim 1 (as [2, 5, 4])");
  std::string sum = manifest;
  sum.replace(sum.find("[2, 8, 4]"), 9, "[2, 9, 4]");
  CHECK(problems(ctx, sum) == at(ctx, 7, 50) +
                                  "outputs[0] ('y') has extent 9 along dim 1, but the inputs' "
                                  "extents there add up to 8");
  std::string type = manifest;
  type.replace(type.find("\"f32\", shape = [2, 5"), 5, "\"i64\"");
  CHECK(problems(ctx, type) ==
        at(ctx, 5, 25) + "inputs[1] ('b') is i64, but the output is f32: a concatenation keeps "
                         "the dtype");
  std::string dim = manifest;
  dim.replace(dim.find("dim = -2"), 8, "dim = 3");
  CHECK(problems(ctx, dim) ==
        at(ctx, 8, 18) + "params.dim: dim 3 is out of range for rank 3 (-3 to 2)");
}

TEST_CASE("a matmul's epilogue reads the inputs after A and B where C is stored",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = R"toml(name = "t"
family = "matmul"
inputs = [
  { name = "x", dtype = "f32", shape = [8, 16] },
  { name = "w", dtype = "f32", shape = [32, 16] },
  { name = "bias", dtype = "f32", shape = [32] },
]
outputs = [ { name = "y", dtype = "f32", shape = [8, 32] } ]
params = { transpose_b = true, epilogue = "relu(acc + bias)" }
)toml";
  task t = loaded(ctx, manifest);
  CHECK(derived<bool>(t, "has_epilogue"));
  const std::string source = derived<std::string>(t, "epilogue_source");
  CHECK_THAT(source, Catch::Contains("static constexpr int kInputs = 1;"));
  CHECK_THAT(source, Catch::Contains("const float v_bias = (float)in_bias[(i % 32)];"));
  CHECK_THAT(source, Catch::Contains("if (in[2].shape[0] != 32) return 7;"));
  CHECK(t.torch == "torch.relu(((torch.matmul(x, w.mT)) + bias))");
  CHECK(t.cost.flops == 8.0 * 32 * (2 * 16) + 8.0 * 32 * 2);

  std::string plain = manifest;
  plain.replace(plain.find(", epilogue = \"relu(acc + bias)\""), 31, "");
  CHECK(problems(ctx, plain) ==
        at(ctx, 6, 43) + "inputs[2] ('bias') comes after A and B: the inputs after them are "
                         "params.epilogue's, and there is none");
  std::string no_acc = manifest;
  no_acc.replace(no_acc.find("relu(acc + bias)"), 16, "relu(bias)");
  CHECK(problems(ctx, no_acc) == at(ctx, 9, 43) + "params.epilogue does not use acc, the product");
  std::string wide = manifest;
  wide.replace(wide.find("[32] }"), 4, "[33]");
  CHECK(problems(ctx, wide) ==
        at(ctx, 6, 43) + "inputs[2] ('bias') has shape [33], which does not broadcast to C [8, "
                         "32] (aligned from the last dim, each extent equal or 1)");
  std::string triangle = manifest;
  triangle.replace(triangle.find("transpose_b = true"), 18,
                   "transpose_b = true, triangle = \"upper\"");
  CHECK_THAT(problems(ctx, triangle), Catch::Contains("params.epilogue with params.triangle"));
}

TEST_CASE("a conv's epilogue follows its bias when params.bias says it has one",
          "[engine][family]") {
  ks::test::test_context ctx;
  std::string manifest = R"toml(name = "t"
family = "conv"
inputs = [
  { name = "x", dtype = "f32", shape = [2, 4, 8, 8] },
  { name = "w", dtype = "f32", shape = [6, 4, 3, 3] },
  { name = "b", dtype = "f32", shape = [6] },
  { name = "scale", dtype = "f32", shape = [6, 1, 1] },
]
outputs = [ { name = "y", dtype = "f32", shape = [2, 6, 6, 6] } ]
params = { bias = true, epilogue = "relu(acc) * scale" }
)toml";
  task t = loaded(ctx, manifest);
  CHECK(derived<bool>(t, "has_bias"));
  CHECK(derived<bool>(t, "has_epilogue"));
  CHECK_THAT(derived<std::string>(t, "epilogue_source"),
             Catch::Contains("static constexpr int kInputs = 1;"));
  CHECK_THAT(t.torch, Catch::StartsWith("(torch.relu((torch.nn.functional.conv2d(x, w, bias=b, "));
  std::string no_epilogue = manifest;
  const std::string params = "bias = true, epilogue = \"relu(acc) * scale\"";
  no_epilogue.replace(no_epilogue.find(params), params.size(), "groups = 1");
  CHECK_THAT(problems(ctx, no_epilogue), Catch::Contains("x, the weight and an optional bias"));
  // params.bias with no third input is refused at the param, not read past the inputs.
  std::string two = manifest;
  two.erase(two.find("  { name = \"b\""),
            two.find("  { name = \"scale\"") - two.find("  { name = \"b\""));
  two.erase(two.find("  { name = \"scale\""),
            two.find("]\noutputs") - two.find("  { name = \"scale\""));
  two.replace(two.find("relu(acc) * scale"), 17, "relu(acc)");
  CHECK_THAT(problems(ctx, two),
             Catch::Contains("params.bias is true, but the conv has no third input for its bias"));
}
