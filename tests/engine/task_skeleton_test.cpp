// `task new`'s skeletons: every family of the engine's table has one that the manifest loader
// accepts as it is (its reference rendered, no warning), built from --shape as the family
// reads it; custom has a hand-written reference and no params. No GPU, no nvcc (the CLI test,
// tests/cli/task_command.sh, compiles them).

#include "engine/bench_memory.hpp"
#include "engine/op_family.hpp"
#include "engine/task_manifest.hpp"
#include "engine/task_skeleton.hpp"
#include "engine/task_warnings.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

using namespace ks::engine;
namespace fs = std::filesystem;

namespace {

/// Writes the skeleton's files into the test's folder and loads its manifest, failing the test
/// when the skeleton cannot be made or does not load.
task loaded(const ks::test::test_context& ctx, const std::string& name, std::string_view family,
            const std::vector<int64_t>& shape = {}) {
  expected<task_skeleton> s = make_task_skeleton(name, family, shape);
  INFO("family " << family << (s ? "" : ": " + s.error().message()));
  REQUIRE(s.has_value());
  REQUIRE_FALSE(s->files.empty());
  for (const skeleton_file& f : s->files)
    ctx.write(f.name, f.text);
  expected<task> t = load_task_manifest(ctx.dir() / s->files.front().name);
  INFO(s->files.front().text << "\n" << (t ? "" : t.error().message()));
  REQUIRE(t.has_value());
  return *t;
}

std::string refusal(std::string_view family, const std::vector<int64_t>& shape) {
  expected<task_skeleton> s = make_task_skeleton("t", family, shape);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().code() == errc::invalid_input);
  return s.error().message();
}

std::vector<int64_t> shape_of(const task& t, bool input, size_t i) {
  const std::vector<tensor_spec>& list = input ? t.inputs : t.outputs;
  REQUIRE(i < list.size());
  return list[i].shape;
}

} // namespace

TEST_CASE("every family of the engine's table has a skeleton that loads", "[skeleton]") {
  for (std::string_view family : family_names()) {
    ks::test::test_context ctx;
    std::string name = "t_" + std::string(family);
    task t = loaded(ctx, name, family);
    CHECK(t.family == family);
    // A family manifest: the reference is rendered, so skills and reference say one op.
    CHECK_FALSE(t.reference_source.empty());
    CHECK_FALSE(fs::exists(ctx.dir() / (name + "_ref.cu")));
    CHECK(task_warnings(t, assumed_gpu_memory()).empty());
    CHECK_FALSE(t.tunables.empty());
    CHECK(skeleton_shape_of(family).has_value());
  }
}

TEST_CASE("task new offers the table's families and custom", "[skeleton]") {
  std::vector<std::string> offered = skeleton_families();
  std::vector<std::string_view> table = family_names();
  REQUIRE(offered.size() == table.size() + 1);
  CHECK(std::equal(table.begin(), table.end(), offered.begin()));
  CHECK(offered.back() == custom_family);
  CHECK_FALSE(is_family(custom_family));
}

TEST_CASE("a skeleton's tensors follow --shape as its family reads it", "[skeleton]") {
  ks::test::test_context ctx;
  SECTION("the axis families act along the last dim") {
    task s = loaded(ctx, "s", "softmax", {8, 16, 32});
    CHECK(shape_of(s, true, 0) == std::vector<int64_t>{8, 16, 32});
    CHECK(std::get<int64_t>(s.derived.scalars.at("axis")) == 32);
    CHECK(std::get<int64_t>(s.derived.scalars.at("inner")) == 1);
    task r = loaded(ctx, "r", "reduce", {8, 16, 32});
    CHECK(shape_of(r, false, 0) == std::vector<int64_t>{8, 16});
    task one = loaded(ctx, "one", "reduce", {1000});
    CHECK(shape_of(one, false, 0).empty());
    task n = loaded(ctx, "n", "norm", {4, 8});
    CHECK(std::get<std::string>(n.params.at("op")) == "rms");
    task c = loaded(ctx, "c", "scan", {3, 5, 7, 9});
    CHECK(std::get<int64_t>(c.derived.scalars.at("axis")) == 9);
  }
  SECTION("pool takes [N, C, H, W] or [N, C, W]") {
    CHECK(shape_of(loaded(ctx, "p", "pool", {2, 3, 9, 9}), false, 0) ==
          std::vector<int64_t>{2, 3, 4, 4});
    CHECK(shape_of(loaded(ctx, "q", "pool", {2, 3, 9}), false, 0) == std::vector<int64_t>{2, 3, 4});
    CHECK(shape_of(loaded(ctx, "u", "pool", {2, 3, 1, 5}), false, 0) ==
          std::vector<int64_t>{2, 3, 1, 5});
  }
  SECTION("matvec is A [m, k] @ x [k]") {
    task t = loaded(ctx, "mv", "matvec", {100, 200});
    CHECK(shape_of(t, true, 0) == std::vector<int64_t>{100, 200});
    CHECK(shape_of(t, true, 1) == std::vector<int64_t>{200});
    CHECK(shape_of(t, false, 0) == std::vector<int64_t>{100});
  }
  SECTION("matmul is A [m, k] @ B [k, n], batched with four values") {
    task t = loaded(ctx, "mm", "matmul", {64, 32, 16});
    CHECK(shape_of(t, true, 0) == std::vector<int64_t>{64, 32});
    CHECK(shape_of(t, true, 1) == std::vector<int64_t>{32, 16});
    CHECK(shape_of(t, false, 0) == std::vector<int64_t>{64, 16});
    task b = loaded(ctx, "bmm", "matmul", {4, 64, 32, 16});
    CHECK(shape_of(b, false, 0) == std::vector<int64_t>{4, 64, 16});
    CHECK(std::get<int64_t>(b.derived.scalars.at("batch")) == 4);
  }
  SECTION("elementwise writes NAME(x) when NAME is a function of one argument") {
    task g = loaded(ctx, "gelu", "elementwise", {16});
    CHECK(std::get<std::string>(g.params.at("op")) == "gelu(x)");
    task l = loaded(ctx, "log", "elementwise", {16});
    CHECK(l.inputs.front().init == init_kind::positive);
    task other = loaded(ctx, "my_op", "elementwise", {16});
    CHECK(std::get<std::string>(other.params.at("op")) == "relu(x)");
  }
}

TEST_CASE("a skeleton says what each param means, optional ones commented out", "[skeleton]") {
  expected<task_skeleton> s = make_task_skeleton("n", "norm", {});
  REQUIRE(s.has_value());
  const std::string& text = s->files.front().text;
  CHECK(text.find("\n# op: \"rms\"") != std::string::npos);
  CHECK(text.find("\nop = \"rms\"\n") != std::string::npos);
  CHECK(text.find("\n# dim: the dim it normalizes over") != std::string::npos);
  CHECK(text.find("\n# eps = 1e-5\n") != std::string::npos);
  CHECK(text.find("\n# affine = false\n") != std::string::npos);
  CHECK(text.find("reference =") == std::string::npos);
}

TEST_CASE("the custom skeleton has a hand-written reference and no family's params", "[skeleton]") {
  ks::test::test_context ctx;
  task t = loaded(ctx, "myop", custom_family, {256, 512});
  CHECK(t.family == "custom");
  CHECK(t.params.empty());
  CHECK(t.reference_source.empty());
  CHECK(t.reference_path.filename() == "myop_ref.cu");
  CHECK(shape_of(t, true, 0) == std::vector<int64_t>{256, 512});
  CHECK(t.cost.bytes == 8.0 * 256 * 512);
  CHECK(t.tunables.size() == 2);
  CHECK(task_warnings(t, assumed_gpu_memory()).empty());
}

TEST_CASE("a family or a shape task new cannot make is refused with the reason", "[skeleton]") {
  CHECK_THAT(refusal("sofmax", {}),
             Catch::Contains("did you mean 'softmax'") && Catch::Contains("custom"));
  CHECK_THAT(refusal("pool", {1024, 1024}), Catch::Contains("[N, C, H, W]"));
  CHECK_THAT(refusal("matvec", {1, 2, 3}), Catch::Contains("m,k"));
  CHECK_THAT(refusal("matmul", {2, 2}), Catch::Contains("3 to 4"));
  CHECK_THAT(refusal("softmax", {4, 0}), Catch::Contains(">= 1"));
}
