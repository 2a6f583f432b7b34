// The memory-bound families' skills (elementwise, scan, pool, matvec) against a spread of
// shapes that the suites do not hold: odd sizes, a dim of 1, sizes that are no multiple of 4,
// broadcast inputs, reversed and exclusive scans, scans over a middle dim, average and dilated
// pools, 1-d pools, tall-skinny and transposed matrix-vector products. Each task is a family
// manifest loaded as the engine loads any (so the templates see exactly the derived values of
// docs/tasks.md); every skill of this set that applies renders its planner's first
// instantiation and the corners of its space, which must compile for sm_90a with no warning,
// and the first instantiation (plus a corner) runs on the CPU emulator
// (memops_cuda_emulator.hpp): twice, so that state a kernel keeps between calls (look-back
// tickets, arrival counters) is proven reset, and once more with every pointer shifted by one
// float, so that the scalar paths run. Outputs are compared with the task's tolerance against
// the family's own reference run on the same emulator (elementwise, pool) or a double-precision
// loop here (scan and matvec, whose references use CUB). No GPU: nvcc and g++ run on the CPU.

#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "tests/skills/emulated_kernel.hpp"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

using namespace ks;
using engine::param_values;
namespace fs = std::filesystem;

namespace {

/// The skills this test covers: the memory-bound families' templates.
const std::set<std::string> covered_skills = {
    "elementwise_vectorized",  "elementwise_broadcast_rows",
    "scan_warp_rows",          "scan_block_rows",
    "scan_decoupled_lookback", "scan_columns",
    "pool_shared_tile",        "pool_row_stream",
    "matvec_split_k",          "matvec_block_rows"};

struct manifest_case {
  std::string file;                         ///< the manifest's name
  std::string toml;                         ///< its text
  std::vector<std::string> expected_skills; ///< skills that must apply
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

/// The spread of shapes: each task small enough to emulate in well under a second.
std::vector<manifest_case> cases() {
  const std::string exact = "{ atol = 1e-6, rtol = 1e-6, norm_rel = 1e-6 }";
  const std::string ew = "{ atol = 1e-5, rtol = 1e-5, norm_rel = 1e-5 }";
  const std::string sums = "{ atol = 1e-3, rtol = 1e-4, norm_rel = 2e-5 }";
  const std::string products = "{ atol = 1e-6, rtol = 1e-4, norm_rel = 1e-5 }";
  const std::string dots = "{ atol = 2e-3, rtol = 1e-4, norm_rel = 2e-5 }";
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
  };
}

// -- references for the families whose own reference uses CUB ----------------------------------

int64_t integer(const engine::task& t, const std::string& name) {
  return std::get<int64_t>(t.derived.scalars.at(name));
}
bool flag(const engine::task& t, const std::string& name) {
  return std::get<bool>(t.derived.scalars.at(name));
}

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
    for (double& e : v)
      e = spec.init == engine::init_kind::positive ? positive(rng) : normal(rng);
    values.push_back(std::move(v));
  }
  return values;
}

/// Every instantiation of `space` (the odometer, last parameter fastest).
std::vector<param_values> all_instantiations(const std::vector<engine::param_space>& space) {
  std::vector<param_values> out{param_values{}};
  for (const engine::param_space& p : space) {
    std::vector<param_values> next;
    for (const param_values& partial : out)
      for (int64_t v : p.values) {
        param_values one = partial;
        one[p.name] = v;
        next.push_back(std::move(one));
      }
    out = std::move(next);
  }
  return out;
}

struct rendered_case {
  std::string label;
  std::string source;
  const engine::task* subject;
  bool emulate; // the first instantiation and one corner run; the rest only compile
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
        std::vector<std::pair<param_values, bool>> chosen{
            {**first, true}, {valid.front(), true}, {valid.back(), false}};
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
          sp.rendered.push_back({label, *text, &t, emulate});
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
  const std::vector<rendered_case>& rendered = sp.rendered;
  std::vector<gpu::compile_request> requests;
  for (const rendered_case& c : rendered)
    requests.push_back({c.source, c.label, {"-Xcompiler=-Wall,-Wextra"}, ""});
  std::vector<gpu::compile_result> results = compiler->compile_all(requests);
  REQUIRE(results.size() == rendered.size());
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(rendered[i].label << "\n" << results[i].diagnostics);
    CHECK(results[i].ok);
    std::string lower = results[i].diagnostics;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    CHECK(lower.find("warning") == std::string::npos);
    static const std::regex spills("[1-9][0-9]* bytes spill"); // ptxas -v: a spilled kernel
    CHECK_FALSE(std::regex_search(lower, spills));
  }
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
  for (const engine::task& t : tasks)
    if (t.family == "elementwise" || t.family == "pool")
      references[&t] = *engine::read_reference(t);
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
      std::vector<double> want;
      if (t.family == "scan") {
        want = scan_reference(t, inputs[0]);
      } else if (t.family == "matvec") {
        want = matvec_reference(t, inputs[0], inputs[1]);
      } else {
        test::emulated_run ref = test::run_emulated(reference_objects.at(&t), t, inputs, 0, 1, 3);
        INFO("the family reference: " << ref.error);
        REQUIRE(ref.error.empty());
        want.assign(ref.output.begin(), ref.output.end());
      }
      test::emulated_run got =
          test::run_emulated(objects[r], t, inputs, shift, 2, 5 + static_cast<uint64_t>(r));
      INFO("pointers shifted by " << shift << " float(s)");
      CHECK(got.error == "");
      if (got.error.empty())
        CHECK(test::mismatch(t, got.output, want) == "");
    }
  }
}
