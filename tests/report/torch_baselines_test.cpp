#include "report/torch_baselines.hpp"

#include <catch2/catch.hpp>

#include <cmath>

#include "test_context.hpp"

using namespace ks;
using report::torch_baselines;

namespace {

/// A file as tools/torch_baselines.py writes it (trimmed of what the engine does not read).
const std::string tool_file = R"json({
  "format": "kernelskill-torch-baselines",
  "version": 1,
  "device": "NVIDIA H100 80GB HBM3",
  "torch_version": "2.11.0+cu130",
  "cuda_version": "13.0",
  "date": "2026-11-20T10:00:00Z",
  "method": {"compile_mode": "default", "l2_flush_bytes": 209715200},
  "tasks": {
    "relu": {
      "manifest": "tasks/kernelbench-l1/19_relu.toml",
      "torch": "torch.relu(x)",
      "inputs": "x:f32[4096,393216]",
      "eager": {"median_ms": 4.32, "p10_ms": 4.30, "p90_ms": 4.35, "trials": 10},
      "compile": {"median_ms": 4.43, "p10_ms": 4.40, "p90_ms": 4.50, "trials": 12},
      "max_abs_diff_eager_compile": 0.0
    },
    "softmax": {
      "inputs": "x:f32[4096,393216]",
      "eager": {"median_ms": 8.64, "p10_ms": 8.6, "p90_ms": 8.7, "trials": 10},
      "compile": {"error": "OutOfMemoryError: CUDA out of memory"}
    },
    "bad": {"torch": "torch.nosuch(x)", "error": "AttributeError: module 'torch' has no attribute 'nosuch'"}
  }
}
)json";

torch_baselines parsed(const std::string& text) {
  auto b = report::parse_torch_baselines(text, "b.json");
  INFO((b ? std::string() : b.error().message()));
  REQUIRE(b.has_value());
  return *b;
}

std::string error_of(const std::string& text) {
  auto b = report::parse_torch_baselines(text, "b.json");
  REQUIRE_FALSE(b.has_value());
  CHECK(b.error().code() == engine::errc::invalid_input);
  return b.error().message();
}

engine::task task_with_input(const std::string& name, std::vector<int64_t> shape) {
  engine::task t;
  t.name = name;
  engine::tensor_spec x;
  x.name = "x";
  x.shape = std::move(shape);
  t.inputs.push_back(x);
  return t;
}

} // namespace

TEST_CASE("a baselines file as the tool writes it reads every task's timings and errors",
          "[torch_baselines]") {
  torch_baselines b = parsed(tool_file);
  CHECK(b.source == "b.json");
  CHECK(b.device == "NVIDIA H100 80GB HBM3");
  CHECK(b.torch_version == "2.11.0+cu130");
  CHECK(b.compile_mode == "default");
  REQUIRE(b.tasks.size() == 3);
  const report::torch_baseline& relu = b.tasks.at("relu");
  CHECK(relu.inputs == "x:f32[4096,393216]");
  CHECK(relu.eager.median_ms == 4.32);
  CHECK(relu.eager.trials == 10);
  CHECK(relu.compiled.p90_ms == 4.50);
  CHECK(relu.max_abs_diff == 0.0);
  CHECK(b.tasks.at("softmax").eager.measured());
  CHECK_FALSE(b.tasks.at("softmax").compiled.measured());
  CHECK(b.tasks.at("softmax").compiled.error == "OutOfMemoryError: CUDA out of memory");
  CHECK(b.tasks.at("bad").error.find("no attribute 'nosuch'") != std::string::npos);
}

TEST_CASE("a JSON syntax error names the file with the line and column where it stops",
          "[torch_baselines]") {
  std::string message =
      error_of("{\n  \"format\": \"kernelskill-torch-baselines\",\n  \"tasks\": {,}\n}\n");
  CHECK(message.rfind("b.json:3:", 0) == 0);
  CHECK(message.find("not valid JSON") != std::string::npos);
  CHECK(error_of("{\"format\": ").rfind("b.json:1:", 0) == 0);
}

TEST_CASE("a JSON file of another kind is refused, naming the file and the tool that writes one",
          "[torch_baselines]") {
  std::string message = error_of(R"({"format": "kernelskill-results", "version": 1})");
  CHECK(message.rfind("b.json: not a torch baselines file", 0) == 0);
  CHECK(message.find("tools/torch_baselines.py") != std::string::npos);
  CHECK(error_of("[1, 2]").rfind("b.json: not a torch baselines file", 0) == 0);
}

TEST_CASE("every schema problem is reported on its own line with the path of the value",
          "[torch_baselines]") {
  std::string message = error_of(R"({"format": "kernelskill-torch-baselines", "version": 2,
    "tasks": {"relu": {"eager": {"p10_ms": 1, "p90_ms": 2, "trials": 10},
                       "compile": {"median_ms": 1, "p10_ms": 1, "p90_ms": 2, "trials": 0}},
              "sum": {"eager": {"median_ms": "fast", "p10_ms": 1, "p90_ms": 2, "trials": 3}}}})");
  CHECK(message.find("b.json: version: not 1") != std::string::npos);
  CHECK(message.find("b.json: device: missing") != std::string::npos);
  CHECK(message.find("b.json: tasks.relu.eager.median_ms: missing") != std::string::npos);
  CHECK(message.find("b.json: tasks.relu.compile.trials: not an integer >= 1") !=
        std::string::npos);
  CHECK(message.find("b.json: tasks.sum.eager.median_ms: not a number > 0") != std::string::npos);
  CHECK(std::count(message.begin(), message.end(), '\n') == 4);
}

TEST_CASE("a baselines file that does not exist is not_found, naming it", "[torch_baselines]") {
  test::test_context ctx;
  auto b = report::read_torch_baselines(ctx.dir() / "nowhere.json");
  REQUIRE_FALSE(b.has_value());
  CHECK(b.error().code() == engine::errc::not_found);
  CHECK(b.error().message().find("nowhere.json: no such baselines file") != std::string::npos);
}

TEST_CASE("a campaign's checked copy reads back as the file it was made from",
          "[torch_baselines]") {
  test::test_context ctx;
  torch_baselines b = parsed(tool_file);
  b.source = "/data/h100.json";
  REQUIRE(report::write_campaign_baselines(ctx.dir(), &b));
  auto copy = report::read_campaign_baselines(ctx.dir());
  REQUIRE(copy.has_value());
  REQUIRE(copy->has_value());
  const torch_baselines& back = **copy;
  CHECK(back.source == "/data/h100.json"); // the file the user named, not the copy
  CHECK(back.device == b.device);
  CHECK(back.torch_version == b.torch_version);
  CHECK(back.date == b.date);
  CHECK(back.tasks.at("relu").eager.median_ms == 4.32);
  CHECK(back.tasks.at("relu").compiled.trials == 12);
  CHECK(back.tasks.at("softmax").compiled.error == b.tasks.at("softmax").compiled.error);
  CHECK(back.tasks.at("bad").error == b.tasks.at("bad").error);
  CHECK(report::torch_baselines_json(back) == report::torch_baselines_json(b));

  REQUIRE(report::write_campaign_baselines(ctx.dir(), nullptr));
  auto none = report::read_campaign_baselines(ctx.dir());
  REQUIRE(none.has_value());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("a baseline timed at other shapes than the task's is dropped with a warning",
          "[torch_baselines]") {
  torch_baselines b = parsed(tool_file);
  std::vector<engine::task> tasks{task_with_input("relu", {4096, 393216}),
                                  task_with_input("softmax", {64, 1000})};
  CHECK(report::tensor_signature(tasks[0].inputs) == "x:f32[4096,393216]");
  std::vector<std::string> warnings = report::check_shapes(b, tasks);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("softmax: its torch baseline in b.json was timed with inputs "
                         "x:f32[4096,393216], the task has x:f32[64,1000]") == 0);
  CHECK(b.tasks.at("relu").error.empty());
  report::torch_comparison c = report::compare_with_torch(&b, "softmax", 4.0);
  CHECK(c.eager_ms == 0);
  CHECK(c.speedup_vs_eager == 0);
  CHECK(c.note.find("timed with inputs") != std::string::npos);
}

TEST_CASE("a baselines file of another GPU is flagged and one of the same GPU is not",
          "[torch_baselines]") {
  torch_baselines b = parsed(tool_file);
  CHECK(report::device_mismatch(b, {"NVIDIA H100 80GB HBM3"}).empty());
  CHECK(report::device_mismatch(b, {}).empty());
  std::string note = report::device_mismatch(b, {"NVIDIA H200", "NVIDIA H200"});
  CHECK(note == "the torch baselines in b.json were measured on \"NVIDIA H100 80GB HBM3\", this "
                "campaign runs on \"NVIDIA H200\": the vs eager and vs compile columns compare "
                "times of different GPUs");
}

TEST_CASE("a task's speedups over torch are the baseline medians over its best time",
          "[torch_baselines]") {
  torch_baselines b = parsed(tool_file);
  report::torch_comparison relu = report::compare_with_torch(&b, "relu", 2.0);
  CHECK(relu.eager_ms == 4.32);
  CHECK(relu.compile_ms == 4.43);
  CHECK(relu.speedup_vs_eager == Approx(2.16));
  CHECK(relu.speedup_vs_compile == Approx(2.215));
  CHECK(relu.note.empty());

  report::torch_comparison softmax = report::compare_with_torch(&b, "softmax", 4.32);
  CHECK(softmax.speedup_vs_eager == Approx(2.0));
  CHECK(softmax.speedup_vs_compile == 0);
  CHECK(softmax.note == "compile: OutOfMemoryError: CUDA out of memory");

  CHECK(report::compare_with_torch(&b, "matmul", 1.0).note == "not in the baselines file");
  CHECK(report::compare_with_torch(&b, "bad", 1.0).speedup_vs_eager == 0);
  report::torch_comparison untimed = report::compare_with_torch(&b, "relu", 0);
  CHECK(untimed.eager_ms == 4.32);
  CHECK(untimed.speedup_vs_eager == 0);
  report::torch_comparison none = report::compare_with_torch(nullptr, "relu", 2.0);
  CHECK(none.eager_ms == 0);
  CHECK(none.note.empty());
}

TEST_CASE("a task trails torch beyond the noise only when its p10 is above torch's p90",
          "[torch_baselines]") {
  torch_baselines b = parsed(tool_file); // relu: eager p10-p90 4.30-4.35, compile 4.40-4.50
  // 4.46 ms with a 1% spread: slower than eager beyond the noise, within compile's.
  engine::timing tight{4.46, 4.4154, 4.50, 20, {}};
  report::torch_comparison c = report::compare_with_torch(&b, "relu", 4.46, &tight);
  CHECK(c.trails_eager_beyond_noise);
  CHECK_FALSE(c.trails_compile_beyond_noise);
  // The same median with a 5% spread overlaps eager's: within the noise.
  engine::timing wide{4.46, 4.237, 4.70, 20, {}};
  CHECK_FALSE(report::compare_with_torch(&b, "relu", 4.46, &wide).trails_eager_beyond_noise);
  // Far slower than both: both flagged; without a spread the median stands for its p10.
  report::torch_comparison slow = report::compare_with_torch(&b, "relu", 5.0);
  CHECK(slow.trails_eager_beyond_noise);
  CHECK(slow.trails_compile_beyond_noise);
  // Faster than torch: never flagged.
  report::torch_comparison fast = report::compare_with_torch(&b, "relu", 2.0, &tight);
  CHECK_FALSE(fast.trails_eager_beyond_noise);
  CHECK_FALSE(fast.trails_compile_beyond_noise);
}

TEST_CASE("the geometric mean skips ratios that are missing", "[torch_baselines]") {
  CHECK(report::geometric_mean({2.0, 0.5}) == Approx(1.0));
  CHECK(report::geometric_mean({4.0, 0, 1.0}) == Approx(2.0));
  CHECK(report::geometric_mean({0.71}) == Approx(0.71));
  CHECK(report::geometric_mean({}) == 0);
  CHECK(report::geometric_mean({0, 0}) == 0);
}
