// Warnings of a manifest that loads: a hand-written reference beside a family's params (at the
// `reference` line, saying what to do), and tensors the bench worker cannot hold on the GPU
// (at the largest tensor), with the worker's memory counted as gpu/worker/ allocates it.

#include "engine/bench_memory.hpp"
#include "engine/task_manifest.hpp"
#include "engine/task_warnings.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

using namespace ks::engine;
namespace fs = std::filesystem;

namespace {

task loaded(const ks::test::test_context& ctx, const std::string& manifest) {
  fs::path path = ctx.write("t.toml", manifest);
  expected<task> t = load_task_manifest(path);
  INFO(manifest << "\n" << (t ? "" : t.error().message()));
  REQUIRE(t.has_value());
  return *t;
}

std::string elementwise(const std::string& shape, const std::string& more) {
  return "name = \"t\"\nfamily = \"elementwise\"\n" + more +
         "inputs = [ { name = \"x\", dtype = \"f32\", shape = " + shape +
         " } ]\noutputs = [ { name = \"y\", dtype = \"f32\", shape = " + shape +
         " } ]\nparams = { op = \"x\" }\n";
}

gpu_memory gpu_of(int64_t bytes) {
  gpu_memory g;
  g.bytes = bytes;
  g.l2_bytes = int64_t{50} << 20;
  g.name = "NVIDIA Test GPU";
  g.origin = "from the calibration cache";
  return g;
}

} // namespace

TEST_CASE("a hand-written reference beside a family is warned about at its line", "[warnings]") {
  ks::test::test_context ctx;
  ctx.write("mine.cu", "// a reference\n");
  task t = loaded(ctx, elementwise("[64]", "about = \"gelu\"\nreference = \"mine.cu\"\n"));
  std::vector<task_warning> w = task_warnings(t, assumed_gpu_memory());
  REQUIRE(w.size() == 1);
  CHECK(w[0].at.line == 4);
  CHECK(w[0].at.column == 13);
  CHECK_THAT(w[0].message, Catch::Contains("a hand-written reference (mine.cu) beside family "
                                           "elementwise") &&
                               Catch::Contains("op = \"x\"") &&
                               Catch::Contains("remove `reference`") &&
                               Catch::Contains("family = \"custom\""));
  CHECK(located("ops/t.toml", w[0]).starts_with("ops/t.toml:4:13: warning: a hand-written"));
}

TEST_CASE("a family manifest and a custom one are not warned about", "[warnings]") {
  ks::test::test_context ctx;
  CHECK(task_warnings(loaded(ctx, elementwise("[64]", "")), assumed_gpu_memory()).empty());
  ctx.write("mine.cu", "// a reference\n");
  task custom = loaded(ctx, "name = \"t\"\nfamily = \"custom\"\nreference = \"mine.cu\"\n"
                            "inputs = [ { name = \"x\", dtype = \"f32\", shape = [64] } ]\n"
                            "outputs = [ { name = \"y\", dtype = \"f32\", shape = [64] } ]\n"
                            "cost = { flops = 64.0, bytes = 512.0 }\n");
  CHECK(task_warnings(custom, assumed_gpu_memory()).empty());
}

TEST_CASE("the bench worker's memory is counted as it allocates", "[warnings]") {
  ks::test::test_context ctx;
  int64_t l2 = int64_t{50} << 20;
  SECTION("small outputs: two input sets, outputs twice, timing references, a full cache") {
    task t = loaded(ctx, elementwise("[1024, 1024]", "")); // 4 MiB each
    bench_memory m = bench_memory_of(t, l2);
    int64_t mib4 = int64_t{4} << 20;
    CHECK(m.inputs == 2 * mib4);
    CHECK(m.outputs == 2 * mib4);
    CHECK(m.timing_references == 2 * mib4);
    CHECK(m.reference_cache == bench_reference_cache_bytes);
    CHECK(m.flush == 4 * l2);
    CHECK(m.total() == 6 * mib4 + bench_reference_cache_bytes + 4 * l2);
  }
  SECTION("outputs beyond the cache's budget are not cached; a small L2 flushes 64 MiB") {
    task t = loaded(ctx, elementwise("[1048576, 2048]", "")); // 8 GiB each
    bench_memory m = bench_memory_of(t, int64_t{4} << 20);
    CHECK(m.reference_cache == 0);
    CHECK(m.flush == bench_min_flush_bytes);
  }
  SECTION("a compute-bound task keeps no reference outputs for timing") {
    task t = loaded(ctx, "name = \"t\"\nfamily = \"matmul\"\n"
                         "inputs = [ { name = \"A\", dtype = \"f32\", shape = [1024, 1024] },\n"
                         "           { name = \"B\", dtype = \"f32\", shape = [1024, 1024] } ]\n"
                         "outputs = [ { name = \"C\", dtype = \"f32\", shape = [1024, 1024] } ]\n");
    CHECK(bench_memory_of(t, l2).timing_references == 0);
  }
}

TEST_CASE("tensors the GPU cannot hold are warned about at the largest tensor", "[warnings]") {
  ks::test::test_context ctx;
  // 16 GiB in, 16 GiB out: 2 x 16 + 2 x 16 + 2 x 16 GiB, about 104 GB with the rest.
  task t = loaded(ctx, "name = \"t\"\nfamily = \"elementwise\"\ninputs = [\n"
                       "  { name = \"b\", dtype = \"f32\", shape = [1024] },\n"
                       "  { name = \"x\", dtype = \"f32\", shape = [4194304, 1024] },\n]\n"
                       "outputs = [ { name = \"y\", dtype = \"f32\", shape = [4194304, 1024] } ]\n"
                       "params = { op = \"x + b\" }\n");
  SECTION("against the assumed GPU, saying it was assumed") {
    std::vector<task_warning> w = task_warnings(t, assumed_gpu_memory());
    REQUIRE(w.size() == 1);
    CHECK(w[0].at.line == 5);
    CHECK_THAT(w[0].message, Catch::Contains("needs about 104 GB") &&
                                 Catch::Contains("more than the GPU has (80 GB, assumed") &&
                                 Catch::Contains("inputs 2 x 17.2 GB") &&
                                 Catch::Contains("outputs 2 x 17.2 GB") &&
                                 Catch::Contains("Make the shapes smaller"));
  }
  SECTION("against a known GPU, by name; a larger one holds it") {
    std::vector<task_warning> w = task_warnings(t, gpu_of(int64_t{85} * 1000 * 1000 * 1000));
    REQUIRE(w.size() == 1);
    CHECK_THAT(w[0].message, Catch::Contains("more than NVIDIA Test GPU has (85 GB, from the "
                                             "calibration cache)"));
    CHECK(task_warnings(t, gpu_of(int64_t{141} * 1000 * 1000 * 1000)).empty());
  }
}

TEST_CASE("memory sizes are written in decimal units", "[warnings]") {
  CHECK(memory_text(80'000'000'000) == "80 GB");
  CHECK(memory_text(int64_t{8} << 30) == "8.59 GB");
  CHECK(memory_text(int64_t{64} << 20) == "67.1 MB");
  CHECK(memory_text(512) == "512 B");
}
