#include "engine/task_manifest.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <filesystem>
#include <string>

using namespace ks::engine;
namespace fs = std::filesystem;

namespace {

/// The body of a valid manifest after its `name` line: 9 lines, so a test that appends to it
/// knows its own lines start at 11.
const std::string valid_body = R"(family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [4096, 1024] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4096, 1024] } ]
cost = { flops = 2.0e7, bytes = 3.3e7 }
# spare line 7
# spare line 8
# spare line 9
# spare line 10
)";

/// Writes a reference kernel and `manifest` as t.toml; returns the manifest's path.
fs::path write_task(const ks::test::test_context& ctx, const std::string& manifest) {
  ctx.write("softmax_ref.cu", "// reference\n");
  return ctx.write("t.toml", manifest);
}

/// Returns the error of loading `path`, failing the test if it loaded.
error error_of(const fs::path& path) {
  expected<task> loaded = load_task_manifest(path);
  REQUIRE_FALSE(loaded.has_value());
  return loaded.error();
}

/// Returns "PATH:LINE:COL: ", the prefix of a problem at that position.
std::string at(const fs::path& path, int line, int column) {
  return path.string() + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

} // namespace

TEST_CASE("a complete manifest loads with every field", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"toml(name = "softmax_rows"
family = "rowwise"
about = "Row softmax, 4096 x 1024 fp32"
reference = "softmax_ref.cu"
inputs = [
  { name = "x", dtype = "float32", shape = [4096, 1024], init = "uniform" },
  { name = "idx", dtype = "i64", shape = [16], init = "randint", low = 0, high = 1024 },
  { name = "scale", dtype = "f32", shape = [] },
]
outputs = [ { name = "y", dtype = "bf16", shape = [4096, 1024] } ]
params = { rows = 4096, eps = 1e-6, fused = true, layout = "row" }
tolerance = { atol = 2e-5, rtol = 3e-5, norm_rel = 4e-6 }
cost = { flops = 2.0e7, bytes = 33554432 }
torch = "torch.softmax(x, dim=1)"
)toml");
  expected<task> loaded = load_task_manifest(path);
  REQUIRE(loaded.has_value());
  const task& t = *loaded;
  CHECK(t.name == "softmax_rows");
  CHECK(t.family == "rowwise");
  CHECK(t.about == "Row softmax, 4096 x 1024 fp32");
  CHECK(t.manifest_path == fs::absolute(path));
  CHECK(t.reference_path == ctx.dir() / "softmax_ref.cu");
  CHECK(t.reference_path.is_absolute());

  REQUIRE(t.inputs.size() == 3);
  CHECK(t.inputs[0].name == "x");
  CHECK(t.inputs[0].type == dtype::f32);
  CHECK(t.inputs[0].shape == std::vector<int64_t>{4096, 1024});
  CHECK(t.inputs[0].init == init_kind::uniform);
  CHECK(t.inputs[1].name == "idx");
  CHECK(t.inputs[1].type == dtype::i64);
  CHECK(t.inputs[1].init == init_kind::randint);
  CHECK(t.inputs[1].low == 0);
  CHECK(t.inputs[1].high == 1024);
  CHECK(t.inputs[2].shape.empty());
  CHECK(t.inputs[2].numel() == 1);
  CHECK(t.inputs[2].init == init_kind::normal);
  REQUIRE(t.outputs.size() == 1);
  CHECK(t.outputs[0].name == "y");
  CHECK(t.outputs[0].type == dtype::bf16);

  REQUIRE(t.params.size() == 4);
  CHECK(std::get<int64_t>(t.params.at("rows")) == 4096);
  CHECK(std::get<double>(t.params.at("eps")) == 1e-6);
  CHECK(std::get<bool>(t.params.at("fused")) == true);
  CHECK(std::get<std::string>(t.params.at("layout")) == "row");

  CHECK(t.tol.atol == 2e-5);
  CHECK(t.tol.rtol == 3e-5);
  CHECK(t.tol.norm_rel == 4e-6);
  CHECK(t.cost.flops == 2.0e7);
  CHECK(t.cost.bytes == 33554432.0);
  CHECK(t.torch == "torch.softmax(x, dim=1)");
}

TEST_CASE("tolerance keys left out default from the first output's dtype", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "half_copy"
family = "copy"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f16", shape = [8] } ]
outputs = [ { name = "y", dtype = "half", shape = [8] }, { name = "z", dtype = "f64", shape = [8] } ]
tolerance = { rtol = 0.5 }
cost = { flops = 0, bytes = 48 }
)");
  expected<task> loaded = load_task_manifest(path);
  REQUIRE(loaded.has_value());
  CHECK(loaded->tol.atol == 1e-3);
  CHECK(loaded->tol.rtol == 0.5);
  CHECK(loaded->tol.norm_rel == 1e-3);
  CHECK(loaded->about.empty());
  CHECK(loaded->torch.empty());
  CHECK(loaded->params.empty());
  CHECK(loaded->cost.flops == 0.0);
}

TEST_CASE("tensors and cost may be written as standard tables", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"

[[inputs]]
name = "x"
dtype = "f32"
shape = [4]

[[inputs]]
name = "w"
dtype = "f32"
shape = [4]
init = "positive"

[[outputs]]
name = "y"
dtype = "f32"
shape = [4]

[cost]
flops = 8
bytes = 48
)");
  expected<task> loaded = load_task_manifest(path);
  REQUIRE(loaded.has_value());
  REQUIRE(loaded->inputs.size() == 2);
  CHECK(loaded->inputs[1].name == "w");
  CHECK(loaded->inputs[1].init == init_kind::positive);
  CHECK(loaded->outputs.at(0).name == "y");
  CHECK(loaded->cost.bytes == 48.0);
}

TEST_CASE("a manifest given by a relative path yields absolute paths", "[engine][manifest]") {
  ks::test::test_context ctx;
  ctx.write("suite/softmax_ref.cu", "// reference\n");
  ctx.write("suite/t.toml", "name = \"softmax\"\n" + valid_body);
  expected<task> loaded = load_task_manifest("suite/t.toml");
  REQUIRE(loaded.has_value());
  CHECK(loaded->manifest_path == ctx.dir() / "suite" / "t.toml");
  CHECK(loaded->reference_path == ctx.dir() / "suite" / "softmax_ref.cu");
}

TEST_CASE("a manifest missing cost is reported with its file and line", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
)");
  error e = error_of(path);
  CHECK(e.code() == errc::invalid_input);
  CHECK(e.message() ==
        at(path, 1, 1) + "missing required key 'cost' (a table: { flops = ..., bytes = ... })");
}

TEST_CASE("a tensor missing a key is reported at its table", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", shape = [4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 4, 12) + "missing required key 'dtype' in inputs[0] (a string such as \"f32\")");
}

TEST_CASE("a key missing from a [table] is reported at its header", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]

[cost]
flops = 1
)");
  CHECK(error_of(path).message() ==
        at(path, 7, 1) +
            "missing required key 'bytes' in cost (a number: fewest bytes moved through memory)");
}

TEST_CASE("a value of the wrong type is reported with both types", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, "name = 3\n" + valid_body);
  CHECK(error_of(path).message() == at(path, 1, 8) + "'name' must be a string, got an integer");
}

TEST_CASE("a nested value of the wrong type is reported by its path", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path =
      write_task(ctx, "name = \"softmax\"\n" + valid_body + "tolerance = { atol = \"tight\" }\n");
  CHECK(error_of(path).message() ==
        at(path, 11, 22) + "'tolerance.atol' must be a number, got a string");
}

TEST_CASE("a misspelled key is reported with a suggestion", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path =
      write_task(ctx, "name = \"softmax\"\n" + valid_body + "tolerence = { atol = 1e-4 }\n");
  CHECK(error_of(path).message() ==
        at(path, 11, 1) + "unknown key 'tolerence' (did you mean 'tolerance'?)");
}

TEST_CASE("a misspelled key inside a tensor is reported with a suggestion", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [4], inti = "normal" } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 4, 54) + "unknown key 'inti' in inputs[0] (did you mean 'init'?)");
}

TEST_CASE("an unknown key far from any known one lists the known keys", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, "name = \"softmax\"\n" + valid_body +
                                      "tolerance = { atol = 1e-5, slack = 2 }\n");
  CHECK(error_of(path).message() ==
        at(path, 11, 28) +
            "unknown key 'slack' in tolerance (expected one of: atol, rtol, norm_rel)");
}

TEST_CASE("an unknown dtype is reported with the valid ones", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "fp32", shape = [4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 4, 34) +
            "unknown dtype 'fp32' for inputs[0] (did you mean 'f32'?); valid dtypes: "
            "f32 (float32, float), f16 (float16, half), bf16 (bfloat16), f64 (float64, double), "
            "i32 (int32), i64 (int64), u8 (uint8, bool)");
}

TEST_CASE("an unknown init is reported with the valid ones", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [4], init = "gaussian" } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 4, 61) +
            "unknown init 'gaussian' for inputs[0]; valid inits: normal, uniform, uniform01, "
            "positive, randint");
}

TEST_CASE("a negative extent is reported at the extent", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [4096, -3] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4096, 0] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 4, 56) + "inputs[0].shape[1] must be a positive integer, got -3\n" +
            at(path, 5, 57) + "outputs[0].shape[1] must be a positive integer, got 0");
}

TEST_CASE("a shape of more than 8 dimensions is reported", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [1, 2, 3, 4, 5, 6, 7, 8, 9] } ]
outputs = [ { name = "y", dtype = "f32", shape = [1.5] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 4, 49) + "inputs[0].shape has 9 dimensions; at most 8 fit a ks_tensor\n" +
            at(path, 5, 51) + "outputs[0].shape[0] must be a positive integer, got 1.5");
}

TEST_CASE("a shape whose byte count overflows is reported", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f64", shape = [4294967296, 4294967296] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 4, 49) + "inputs[0].shape describes more than 2^63 bytes");
}

TEST_CASE("duplicate tensor names are reported at the second one", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [4] } ]
outputs = [ { name = "x", dtype = "f32", shape = [4] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 5, 22) +
            "duplicate tensor name 'x' in outputs[0] (first used by inputs[0] at 4:21)");
}

TEST_CASE("names that are not identifiers are reported", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "Soft-max"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x 1", dtype = "f32", shape = [4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 1, 8) + "task name \"Soft-max\" must match [a-z0-9_]+\n" + at(path, 4, 21) +
            "inputs[0].name must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got \"x 1\"");
}

TEST_CASE("a missing reference file names the folder it looked in", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = ctx.write("t.toml", "name = \"softmax\"\n" + valid_body);
  CHECK(error_of(path).message() == at(path, 3, 13) +
                                        "reference file 'softmax_ref.cu' not found (looked in " +
                                        ctx.dir().string() + ")");
}

TEST_CASE("a TOML syntax error is reported at its line and column", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, "name = \"softmax\"\nfamily = softmax\n");
  error e = error_of(path);
  CHECK(e.code() == errc::invalid_input);
  INFO(e.message());
  CHECK(e.message().rfind(at(path, 2, 10), 0) == 0);
  CHECK(e.message().find('\n') == std::string::npos);
}

TEST_CASE("randint needs integer bounds with low below high", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "gather"
family = "gather"
reference = "softmax_ref.cu"
inputs = [
  { name = "a", dtype = "i32", shape = [4], init = "randint", low = 5, high = 5 },
  { name = "b", dtype = "i32", shape = [4], init = "randint", high = 8 },
  { name = "c", dtype = "u8", shape = [4], init = "randint", low = 0, high = 300 },
  { name = "d", dtype = "f32", shape = [4], init = "uniform", low = 0 },
  { name = "e", dtype = "i64", shape = [4], init = "randint", low = 0.5, high = 8 },
]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 5, 79) + "inputs[0].high must be greater than low (5), got 5\n" + at(path, 6, 3) +
            "missing required key 'low' in inputs[1] (an integer: init = \"randint\" draws from "
            "[low, high))\n" +
            at(path, 7, 68) + "inputs[2] draws from [0, 300), which does not fit u8 ([0, 255])\n" +
            at(path, 8, 69) + "inputs[3].low is only used with init = \"randint\"\n" +
            at(path, 9, 69) + "'inputs[4].low' must be an integer, got a float");
}

TEST_CASE("outputs may not have an init", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4], init = "normal" } ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(error_of(path).message() ==
        at(path, 5, 62) +
            "outputs[0].init is not allowed: outputs are written by the kernel, not drawn");
}

TEST_CASE("empty or malformed tensor lists are reported", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = []
outputs = [ "y" ]
cost = { flops = 1, bytes = 2 }
)");
  CHECK(
      error_of(path).message() ==
      at(path, 4, 10) + "'inputs' must hold at least one tensor\n" + at(path, 5, 13) +
          "'outputs[0]' must be a table: { name = ..., dtype = ..., shape = [...] }, got a string");
}

TEST_CASE("negative tolerances and a zero byte cost are reported", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, R"(name = "softmax"
family = "rowwise"
reference = "softmax_ref.cu"
inputs = [ { name = "x", dtype = "f32", shape = [4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
tolerance = { atol = -1e-5, norm_rel = nan }
cost = { flops = -1, bytes = 0 }
)");
  CHECK(error_of(path).message() ==
        at(path, 6, 22) + "tolerance.atol must be a finite number >= 0, got -1e-05\n" +
            at(path, 6, 40) + "tolerance.norm_rel must be a finite number >= 0, got nan\n" +
            at(path, 7, 18) + "cost.flops must be a finite number >= 0, got -1\n" +
            at(path, 7, 30) + "cost.bytes must be a finite number > 0, got 0");
}

TEST_CASE("a parameter that is neither a scalar nor a list of integers is reported",
          "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path =
      write_task(ctx, "name = \"softmax\"\n" + valid_body +
                          "params = { rows = 4096, tiles = [1, 2], names = [\"a\"] }\n");
  CHECK(error_of(path).message() ==
        at(path, 11, 49) + "'params.names' must be an integer, float, boolean, string or array "
                           "of integers, got an array");
}

TEST_CASE("several problems in one file are all reported in source order", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = ctx.write("t.toml", R"(name = 7
famly = "softmax"
reference = "missing_ref.cu"
inputs = [ { name = "x", dtype = "flaot32", shape = [4, -1] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4] } ]
)");
  error e = error_of(path);
  CHECK(e.code() == errc::invalid_input);
  CHECK(e.message() ==
        at(path, 1, 1) + "missing required key 'family' (a string such as \"softmax\")\n" +
            at(path, 1, 1) +
            "missing required key 'cost' (a table: { flops = ..., bytes = ... })\n" +
            at(path, 1, 8) + "'name' must be a string, got an integer\n" + at(path, 2, 1) +
            "unknown key 'famly' (did you mean 'family'?)\n" + at(path, 3, 13) +
            "reference file 'missing_ref.cu' not found (looked in " + ctx.dir().string() + ")\n" +
            at(path, 4, 34) +
            "unknown dtype 'flaot32' for inputs[0] (did you mean 'float32'?); valid dtypes: f32 "
            "(float32, "
            "float), f16 (float16, half), bf16 (bfloat16), f64 (float64, double), i32 (int32), "
            "i64 (int64), u8 (uint8, bool)\n" +
            at(path, 4, 57) + "inputs[0].shape[1] must be a positive integer, got -1");
}

TEST_CASE("a missing manifest is not_found and a folder is an io error", "[engine][manifest]") {
  ks::test::test_context ctx;
  error missing = error_of(ctx.dir() / "nope.toml");
  CHECK(missing.code() == errc::not_found);
  CHECK(missing.message() == (ctx.dir() / "nope.toml").string() + ": task manifest not found");

  fs::create_directory(ctx.dir() / "folder.toml");
  error folder = error_of(ctx.dir() / "folder.toml");
  CHECK(folder.code() == errc::io);
  CHECK(folder.message().find("folder.toml") != std::string::npos);
}

TEST_CASE("a suite's manifest that is a device, a pipe, too large or too deep is refused, "
          "never read without end or parsed into a crash",
          "[engine][manifest]") {
  ks::test::test_context ctx;
  ctx.write("suite/softmax_ref.cu", "// reference\n");
  fs::path good = ctx.write("suite/a.toml", "name = \"fine\"\n" + valid_body);
  fs::create_symlink("/dev/zero", ctx.dir() / "suite" / "b.toml");
  REQUIRE(::mkfifo((ctx.dir() / "suite" / "c.toml").c_str(), 0600) == 0); // no writer
  fs::path deep = ctx.write("suite/d.toml", "[a" + ks::test::repeated(".a", 299999) + "]\n");
  // toml++ 3.3 reached __builtin_unreachable on U+00A1 to U+0499 (and three more ranges) in a
  // table header
  // (tests/fuzz/corpus/manifest/m12-toml-unreachable); refused before it parses.
  fs::path header =
      ctx.write("suite/e.toml", "name = \"x\"\n" + valid_body + "[t\xc2\xa1]\n[u\xd2\x99]\n");
  fs::path large =
      ctx.write("suite/f.toml", "# " + std::string(size_t{5} << 20, 'x') + "\n" + valid_body);
  expected<std::vector<task>> suite = load_task_suite(ctx.dir() / "suite");
  REQUIRE_FALSE(suite.has_value());
  CHECK(suite.error().code() == errc::invalid_input);
  const std::string& message = suite.error().message();
  INFO(message.substr(0, 2000));
  CHECK_THAT(message,
             Catch::Contains("b.toml: holds more than 4 MiB, too much for a task manifest"));
  // The empty pipe is an empty manifest: its missing keys, read at once.
  CHECK_THAT(message, Catch::Contains("c.toml:1:1: missing required key 'name'"));
  CHECK_THAT(message, Catch::Contains(at(deep, 1, 2) +
                                      "a dotted key or table header of more than 64 parts"));
  CHECK_THAT(message, Catch::Contains(at(header, 11, 3) + "a character outside ASCII outside a "
                                                          "string or a comment"));
  CHECK_THAT(message,
             Catch::Contains("f.toml: holds more than 4 MiB, too much for a task manifest"));
  CHECK(message.find(good.string()) == std::string::npos);
}

TEST_CASE("a suite folder loads its manifests sorted by file name", "[engine][manifest]") {
  ks::test::test_context ctx;
  ctx.write("suite/softmax_ref.cu", "// reference\n");
  ctx.write("suite/b.toml", "name = \"second\"\n" + valid_body);
  ctx.write("suite/a.toml", "name = \"first\"\n" + valid_body);
  ctx.write("suite/notes.md", "not a manifest\n");
  expected<std::vector<task>> suite = load_task_suite(ctx.dir() / "suite");
  REQUIRE(suite.has_value());
  REQUIRE(suite->size() == 2);
  CHECK((*suite)[0].name == "first");
  CHECK((*suite)[1].name == "second");
}

TEST_CASE("a suite given one file loads that file", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, "name = \"only\"\n" + valid_body);
  expected<std::vector<task>> suite = load_task_suite(path);
  REQUIRE(suite.has_value());
  REQUIRE(suite->size() == 1);
  CHECK(suite->front().name == "only");
}

TEST_CASE("a suite reports the problems of every file and duplicate names", "[engine][manifest]") {
  ks::test::test_context ctx;
  ctx.write("suite/softmax_ref.cu", "// reference\n");
  fs::path a = ctx.write("suite/a.toml", "name = \"same\"\n" + valid_body);
  fs::path b = ctx.write("suite/b.toml", "name = 1\n" + valid_body);
  fs::path c = ctx.write("suite/c.toml", "name = \"same\"\n" + valid_body);
  fs::path d = ctx.write("suite/d.toml", "name = \"fine\"\n" + valid_body + "famly = \"x\"\n");
  expected<std::vector<task>> suite = load_task_suite(ctx.dir() / "suite");
  REQUIRE_FALSE(suite.has_value());
  CHECK(suite.error().code() == errc::invalid_input);
  CHECK(suite.error().message() ==
        at(b, 1, 8) + "'name' must be a string, got an integer\n" + at(c, 1, 8) +
            "duplicate task name 'same' (first defined at " + a.string() + ":1:8)\n" +
            at(d, 11, 1) + "unknown key 'famly' (did you mean 'family'?)");
}

TEST_CASE("a suite folder without manifests is not_found", "[engine][manifest]") {
  ks::test::test_context ctx;
  ctx.write("empty/readme.txt", "nothing here\n");
  expected<std::vector<task>> suite = load_task_suite(ctx.dir() / "empty");
  REQUIRE_FALSE(suite.has_value());
  CHECK(suite.error().code() == errc::not_found);
  CHECK(suite.error().message().find("no task manifests") != std::string::npos);

  expected<std::vector<task>> missing = load_task_suite(ctx.dir() / "absent");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code() == errc::not_found);
}

TEST_CASE("tunables load as macro names with their values in the manifest's order",
          "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, "name = \"softmax\"\n" + valid_body +
                                      "tunables = { KS_BLOCK_THREADS = [256, 128, 512], "
                                      "KS_TILE_2 = [-1] }\n");
  expected<task> loaded = load_task_manifest(path);
  REQUIRE(loaded.has_value());
  CHECK(loaded->tunables == std::map<std::string, std::vector<int64_t>>{
                                {"KS_BLOCK_THREADS", {256, 128, 512}}, {"KS_TILE_2", {-1}}});
}

TEST_CASE("a manifest without tunables has none", "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, "name = \"softmax\"\n" + valid_body + "tunables = {}\n");
  expected<task> loaded = load_task_manifest(path);
  REQUIRE(loaded.has_value());
  CHECK(loaded->tunables.empty());
}

TEST_CASE("tunables that are not a table are reported with the expected form",
          "[engine][manifest]") {
  ks::test::test_context ctx;
  fs::path path = write_task(ctx, "name = \"softmax\"\n" + valid_body + "tunables = [256, 512]\n");
  CHECK(error_of(path).message() ==
        at(path, 11, 12) + "'tunables' must be a table: { KS_BLOCK_THREADS = [128, 256, 512], "
                           "... }, got an array");
}

TEST_CASE("bad tunable names, empty lists, non-integers and repeats are all reported",
          "[engine][manifest]") {
  ks::test::test_context ctx;
  const std::string line = "tunables = { ks_block = [1, 2], KS_A = [], KS_B = 4, "
                           "KS_C = [1, 2.5, \"x\"], KS_D = [8, 16, 8] }";
  auto column = [&](const std::string& text) { return static_cast<int>(line.find(text)) + 1; };
  fs::path path = write_task(ctx, "name = \"softmax\"\n" + valid_body + line + "\n");
  CHECK(error_of(path).message() ==
        at(path, 11, column("ks_block")) +
            "tunable 'ks_block' must be a macro name ([A-Z_][A-Z0-9_]*)\n" +
            at(path, 11, column("[]")) + "'tunables.KS_A' must list at least one value\n" +
            at(path, 11, column("4,")) +
            "'tunables.KS_B' must be an array of integers such as [128, 256, 512], got "
            "an integer\n" +
            at(path, 11, column("2.5")) + "tunables.KS_C[1] must be an integer, got 2.5\n" +
            at(path, 11, column("\"x\"")) + "tunables.KS_C[2] must be an integer, got \"x\"\n" +
            at(path, 11, column("8] }")) +
            "tunables.KS_D[2] repeats 8 (first at tunables.KS_D[0])");
}

TEST_CASE("every task of the shipped suites declares tunables", "[engine][manifest]") {
  for (const char* suite : {"kernelbench-l1", "quickstart"}) {
    expected<std::vector<task>> tasks = load_task_suite(ks::test::source_dir() / "tasks" / suite);
    REQUIRE(tasks.has_value());
    CHECK(tasks->size() == 8);
    for (const task& t : *tasks) {
      INFO(suite << "/" << t.name);
      CHECK_FALSE(t.tunables.empty());
    }
  }
}
