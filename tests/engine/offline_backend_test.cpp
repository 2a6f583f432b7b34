#include "engine/offline_backend.hpp"
#include "engine/task_manifest.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tests/test_context.hpp"

using namespace ks::engine;
namespace fs = std::filesystem;

namespace {

/// A reference with two overridable launch parameters, as the suites' references have.
const std::string reference_source = R"(// a reference
#include <stdint.h>

#ifndef KS_BLOCK_THREADS
#define KS_BLOCK_THREADS 256
#endif
#ifndef KS_MAX_BLOCKS
#define KS_MAX_BLOCKS 1048576  // the grid's cap
#endif
)";

/// Returns a task whose tunables match reference_source; reference_path is left empty.
task relu_like_task() {
  task t;
  t.name = "relu";
  t.family = "elementwise";
  t.tunables = {{"KS_BLOCK_THREADS", {64, 128, 256, 512, 1024}},
                {"KS_MAX_BLOCKS", {1024, 4096, 16384, 65536, 1048576}}};
  return t;
}

/// Returns the launch_params plan of a configuration (block threads, max blocks).
plan config(int64_t threads, int64_t max_blocks) {
  return launch_plan({{"KS_BLOCK_THREADS", threads}, {"KS_MAX_BLOCKS", max_blocks}}, "");
}

/// Returns the plan keys of `plans`, in order.
std::vector<std::string> keys_of(const std::vector<plan>& plans) {
  std::vector<std::string> keys;
  for (const plan& p : plans)
    keys.push_back(plan_key(p));
  return keys;
}

std::vector<std::string> keys_of(std::initializer_list<plan> plans) {
  return keys_of(std::vector<plan>(plans));
}

/// Returns a request for the root of `t`'s tree.
planning_request root_request(const task& t, int64_t count) {
  planning_request request;
  request.subject = &t;
  request.parent = 0;
  request.parent_lineage = {reference_plan()};
  request.parent_source = reference_source;
  request.count = count;
  return request;
}

/// Records `p` as tried (failed) on the request's parent.
void mark_tried(planning_request& request, const plan& p) {
  plan_outcome outcome;
  outcome.plan = p;
  outcome.outcome = outcome_kind::failed;
  request.tried.push_back(outcome);
}

} // namespace

TEST_CASE("make_backend makes the offline backend by name", "[engine][backend]") {
  expected<std::unique_ptr<agent_backend>> backend = make_backend("offline", {});
  REQUIRE(backend.has_value());
  CHECK((*backend)->name() == "offline");
  CHECK(backend_names() == std::vector<std::string_view>{"offline"});
}

TEST_CASE("make_backend says the LLM backends are not built yet", "[engine][backend]") {
  for (std::string name : {"openai", "anthropic"}) {
    expected<std::unique_ptr<agent_backend>> backend = make_backend(name, {{"model", "x"}});
    REQUIRE_FALSE(backend.has_value());
    CHECK(backend.error().code() == errc::invalid_input);
    CHECK(backend.error().message() == "the " + name +
                                           " backend is not built yet (the LLM issue); use "
                                           "backend = \"offline\"");
  }
}

TEST_CASE("make_backend lists the valid backends for an unknown name", "[engine][backend]") {
  expected<std::unique_ptr<agent_backend>> backend = make_backend("ofline", {});
  REQUIRE_FALSE(backend.has_value());
  CHECK(backend.error().code() == errc::invalid_input);
  CHECK(backend.error().message() == "unknown agent backend 'ofline'; valid backends: offline");
}

TEST_CASE("macro_default reads only a default guarded by its #ifndef", "[engine][backend]") {
  CHECK(macro_default(reference_source, "KS_BLOCK_THREADS") == 256);
  CHECK(macro_default(reference_source, "KS_MAX_BLOCKS") == 1048576);
  CHECK(macro_default(reference_source, "KS_TILE") == std::nullopt);
  CHECK(macro_default("#define KS_A 4\n", "KS_A") == std::nullopt);
  CHECK(macro_default("#define KS_A 8\n#ifndef KS_A\n\n#  define KS_A 4\n#endif\n", "KS_A") == 4);
  CHECK(macro_default("#ifndef KS_A\n#define KS_A (1 << 20)\n#endif\n", "KS_A") == std::nullopt);
  CHECK(macro_default("#ifndef KS_A\n#define KS_AB 3\n#endif\n", "KS_A") == std::nullopt);
}

TEST_CASE("a launch plan names its whole configuration", "[engine][backend]") {
  plan p = config(128, 4096);
  CHECK(p.skill == "launch_params");
  CHECK(plan_key(p) == "launch_params(KS_BLOCK_THREADS=128,KS_MAX_BLOCKS=4096)");
  CHECK(launch_config_of(p) == launch_config{{"KS_BLOCK_THREADS", 128}, {"KS_MAX_BLOCKS", 4096}});
  CHECK(launch_config_of(plan{"launch_params", "", {{"KS_A", "16.0"}}}) ==
        launch_config{{"KS_A", 16}});
  CHECK(launch_config_of(plan{"launch_params", "", {{"KS_A", "wide"}}}) == std::nullopt);
  CHECK(launch_config_of(reference_plan()) == std::nullopt);
}

TEST_CASE("propose returns the root's one-step neighbours nearest first", "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend;
  planning_request request = root_request(t, 8);

  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  // Halving and doubling the block change as much (x2); the cap's only neighbour is 16x away.
  CHECK(keys_of(*plans) ==
        keys_of({config(512, 1048576), config(128, 1048576), config(256, 65536)}));
  CHECK((*plans)[0].description == "KS_BLOCK_THREADS 256 -> 512");
  CHECK((*plans)[1].description == "KS_BLOCK_THREADS 256 -> 128");
  CHECK((*plans)[2].description == "KS_MAX_BLOCKS 1048576 -> 65536");
  for (const plan& p : *plans)
    CHECK(p.params.size() == 2);

  SECTION("a compute-bound diagnosis tries smaller values first") {
    request.diagnosis = "compute-bound: 40.1 TFLOP/s of 51.2 measured (78%); memory at 3%.";
    plans = backend.propose(request);
    REQUIRE(plans.has_value());
    CHECK(keys_of(*plans) ==
          keys_of({config(128, 1048576), config(512, 1048576), config(256, 65536)}));
  }
  SECTION("a memory-bound diagnosis tries larger values first") {
    request.diagnosis = "memory-bound: 2.1 TB/s of 3.0 measured (70%); compute-bound it is not.";
    plans = backend.propose(request);
    REQUIRE(plans.has_value());
    CHECK(keys_of(*plans) ==
          keys_of({config(512, 1048576), config(128, 1048576), config(256, 65536)}));
  }
  SECTION("count bounds the number of plans") {
    request.count = 1;
    plans = backend.propose(request);
    REQUIRE(plans.has_value());
    CHECK(keys_of(*plans) == keys_of({config(512, 1048576)}));
  }
}

TEST_CASE("propose never repeats a plan tried on the parent", "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend;
  planning_request request = root_request(t, 8);
  // The same configuration, reworded and written with other digits, is the same plan.
  mark_tried(request, plan{"launch_params",
                           "more threads",
                           {{"KS_BLOCK_THREADS", "512.0"}, {"KS_MAX_BLOCKS", "01048576"}}});
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  CHECK(keys_of(*plans) == keys_of({config(128, 1048576), config(256, 65536)}));
}

TEST_CASE("propose never steps back to a configuration of the lineage", "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend;
  planning_request request = root_request(t, 8);
  request.parent = 1;
  request.parent_lineage = {reference_plan(), config(128, 1048576)};
  coding_request coding;
  coding.subject = &t;
  coding.plan = config(128, 1048576);
  coding.reference_source = reference_source;
  expected<std::string> parent_source = backend.write_code(coding);
  REQUIRE(parent_source.has_value());
  request.parent_source = *parent_source; // defaults still read from the guarded #defines

  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  // 128 -> 256 would be the root again.
  CHECK(keys_of(*plans) == keys_of({config(64, 1048576), config(128, 65536)}));
  CHECK((*plans)[0].description == "KS_BLOCK_THREADS 128 -> 64");
}

TEST_CASE("propose returns none when the neighbours run out", "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend;

  SECTION("every neighbour was tried") {
    planning_request request = root_request(t, 8);
    for (const plan& p : {config(512, 1048576), config(128, 1048576), config(256, 65536)})
      mark_tried(request, p);
    expected<std::vector<plan>> plans = backend.propose(request);
    REQUIRE(plans.has_value());
    CHECK(plans->empty());
  }
  SECTION("a one-value list has no neighbour") {
    t.tunables = {{"KS_BLOCK_THREADS", {256}}};
    expected<std::vector<plan>> plans = backend.propose(root_request(t, 8));
    REQUIRE(plans.has_value());
    CHECK(plans->empty());
  }
  SECTION("a task without tunables gives no plans") {
    t.tunables.clear();
    expected<std::vector<plan>> plans = backend.propose(root_request(t, 8));
    REQUIRE(plans.has_value());
    CHECK(plans->empty());
  }
  SECTION("a count of zero asks for nothing") {
    expected<std::vector<plan>> plans = backend.propose(root_request(t, 0));
    REQUIRE(plans.has_value());
    CHECK(plans->empty());
  }
}

TEST_CASE("a walk of one plan at a time visits every one-step neighbour of the root once",
          "[engine][backend]") {
  task t;
  t.name = "matmul";
  t.tunables = {{"KS_TILE_X", {16, 32, 64}}, {"KS_TILE_Y", {1, 2, 4, 8, 16}}};
  offline_backend backend;
  planning_request request;
  request.subject = &t;
  request.parent = 0;
  request.parent_lineage = {reference_plan()};
  request.parent_source =
      "#ifndef KS_TILE_X\n#define KS_TILE_X 32\n#endif\n#ifndef KS_TILE_Y\n#define KS_TILE_Y 8\n"
      "#endif\n";
  request.count = 1;

  std::vector<std::string> visited;
  for (int round = 0; round < 10; ++round) {
    expected<std::vector<plan>> plans = backend.propose(request);
    REQUIRE(plans.has_value());
    REQUIRE(plans->size() <= 1);
    if (plans->empty())
      break;
    visited.push_back(plan_key(plans->front()));
    mark_tried(request, plans->front());
  }
  auto tiles = [](int64_t x, int64_t y) {
    return plan_key(launch_plan({{"KS_TILE_X", x}, {"KS_TILE_Y", y}}, ""));
  };
  // x2 steps first (both tiles), larger first without a diagnosis, then names in order.
  CHECK(visited ==
        std::vector<std::string>{tiles(64, 8), tiles(32, 16), tiles(16, 8), tiles(32, 4)});
  CHECK(std::set<std::string>(visited.begin(), visited.end()).size() == visited.size());
}

TEST_CASE("propose fails without a task or without the reference's default", "[engine][backend]") {
  offline_backend backend;
  planning_request request;
  request.count = 2;
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE_FALSE(plans.has_value());
  CHECK(plans.error().code() == errc::invalid_input);

  task t = relu_like_task();
  t.tunables["KS_TILE"] = {8, 16};
  plans = backend.propose(root_request(t, 2));
  REQUIRE_FALSE(plans.has_value());
  CHECK(plans.error().code() == errc::invalid_input);
  CHECK(plans.error().message().find("no overridable default for tunable KS_TILE") !=
        std::string::npos);
}

TEST_CASE("write_code prepends the plan's defines, the same text for the same plan",
          "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend;
  coding_request request;
  request.subject = &t;
  request.plan = config(128, 4096);
  request.plan.description = "KS_BLOCK_THREADS 256 -> 128";
  request.reference_source = reference_source;
  expected<std::string> code = backend.write_code(request);
  REQUIRE(code.has_value());
  CHECK(*code == "// kernelskill offline coder: plan "
                 "launch_params(KS_BLOCK_THREADS=128,KS_MAX_BLOCKS=4096)\n"
                 "#define KS_BLOCK_THREADS 128\n"
                 "#define KS_MAX_BLOCKS 4096\n" +
                     reference_source);

  coding_request reworded = request;
  reworded.plan = plan{" Launch_Params ",
                       "fewer threads",
                       {{"KS_MAX_BLOCKS", "4096.0"}, {"KS_BLOCK_THREADS", "0128"}}};
  expected<std::string> same = backend.write_code(reworded);
  REQUIRE(same.has_value());
  CHECK(*same == *code);

  coding_request root = request;
  root.plan = reference_plan();
  expected<std::string> reference = backend.write_code(root);
  REQUIRE(reference.has_value());
  CHECK(*reference == reference_source);
}

TEST_CASE("write_code refuses other skills, unknown parameters and non-integers",
          "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend;
  coding_request request;
  request.subject = &t;
  request.reference_source = reference_source;

  request.plan = plan{"vectorize_loads", "", {{"width", "16"}}};
  expected<std::string> code = backend.write_code(request);
  REQUIRE_FALSE(code.has_value());
  CHECK(code.error().code() == errc::invalid_input);
  CHECK(code.error().message().find("only launch_params") != std::string::npos);

  request.plan = launch_plan({{"KS_UNROLL", 4}}, "");
  code = backend.write_code(request);
  REQUIRE_FALSE(code.has_value());
  CHECK(code.error().message().find("KS_UNROLL is not a tunable of task 'relu'") !=
        std::string::npos);

  request.plan = plan{"launch_params", "", {{"KS_BLOCK_THREADS", "256; exit(1)"}}};
  code = backend.write_code(request);
  REQUIRE_FALSE(code.has_value());
  CHECK(code.error().message().find("must be an integer") != std::string::npos);
}

TEST_CASE("the written code compiles with nvcc and reaches the reference's kernel",
          "[engine][backend][compiler]") {
  const char* configured = std::getenv("KS_NVCC");
  fs::path nvcc = configured != nullptr ? fs::path(configured) : "/usr/local/cuda/bin/nvcc";
  if (!fs::exists(nvcc)) {
    WARN("skipped: no nvcc at " << nvcc);
    return;
  }
  ks::test::test_context ctx;
  expected<task> t =
      load_task_manifest(ks::test::source_dir() / "tasks" / "kernelbench-l1" / "19_relu.toml");
  REQUIRE(t.has_value());
  offline_backend backend;
  coding_request request;
  request.subject = &*t;
  request.reference_source = ks::test::read_file(t->reference_path);
  auto compiles = [&](const plan& p) {
    request.plan = p;
    expected<std::string> code = backend.write_code(request);
    REQUIRE(code.has_value());
    fs::path source = ctx.write("candidate.cu", *code);
    std::string command = nvcc.string() +
                          " -shared -Xcompiler -fPIC -cudart shared -std=c++17 -O3"
                          " -gencode=arch=compute_90a,code=sm_90a -I " +
                          (ks::test::source_dir() / "gpu" / "include").string() + " -o " +
                          (ctx.dir() / "candidate.so").string() + " " + source.string() + " > " +
                          (ctx.dir() / "nvcc.log").string() + " 2>&1";
    return std::system(command.c_str()) == 0;
  };
  CHECK(compiles(launch_plan({{"KS_BLOCK_THREADS", 128}, {"KS_MAX_BLOCKS", 4096}}, "")));
  CHECK(fs::exists(ctx.dir() / "candidate.so"));
  // The reference's static_assert sees the prepended value: the #define reached the kernel.
  CHECK_FALSE(compiles(launch_plan({{"KS_BLOCK_THREADS", 2048}}, "")));
  CHECK(ks::test::read_file(ctx.dir() / "nvcc.log").find("KS_BLOCK_THREADS") != std::string::npos);
}

TEST_CASE("the shipped references hold every tunable's default in its list", "[engine][backend]") {
  offline_backend backend;
  for (const char* suite : {"kernelbench-l1", "quickstart"}) {
    expected<std::vector<task>> tasks = load_task_suite(ks::test::source_dir() / "tasks" / suite);
    REQUIRE(tasks.has_value());
    for (const task& t : *tasks) {
      INFO(suite << "/" << t.name);
      std::string source = ks::test::read_file(t.reference_path);
      REQUIRE_FALSE(t.tunables.empty());
      for (const auto& [name, values] : t.tunables) {
        INFO(name);
        std::optional<int64_t> fallback = macro_default(source, name);
        REQUIRE(fallback.has_value());
        CHECK(std::find(values.begin(), values.end(), *fallback) != values.end());
      }
      planning_request request;
      request.subject = &t;
      request.parent_lineage = {reference_plan()};
      request.parent_source = source;
      request.count = 16;
      expected<std::vector<plan>> plans = backend.propose(request);
      REQUIRE(plans.has_value());
      CHECK_FALSE(plans->empty());
      for (const plan& p : *plans) {
        coding_request coding;
        coding.subject = &t;
        coding.plan = p;
        coding.reference_source = source;
        CHECK(backend.write_code(coding).has_value());
      }
    }
  }
}

TEST_CASE("repair gives up, naming the parameter set and the first error line",
          "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend;
  repair_request request;
  request.subject = &t;
  request.plan = config(1024, 1048576);
  request.failure_kind = "compile_error";
  request.error_text =
      "nvcc warning : something harmless\n"
      "candidate.cu(21): error: static assertion failed with \"KS_BLOCK_THREADS\"\n"
      "1 error detected\n";
  expected<repair_reply> reply = backend.repair(request);
  REQUIRE(reply.has_value());
  CHECK(reply->gave_up);
  CHECK(reply->source.empty());
  CHECK(reply->diagnosis ==
        "launch parameters KS_BLOCK_THREADS=1024 KS_MAX_BLOCKS=1048576 failed (compile_error): "
        "candidate.cu(21): error: static assertion failed with \"KS_BLOCK_THREADS\"");
  CHECK_FALSE(reply->fix_summary.empty());

  request.failure_kind = "wrong_result";
  request.error_text = "\n  output y: 12 elements outside tolerance\n";
  reply = backend.repair(request);
  REQUIRE(reply.has_value());
  CHECK(reply->gave_up);
  CHECK(reply->diagnosis == "launch parameters KS_BLOCK_THREADS=1024 KS_MAX_BLOCKS=1048576 "
                            "failed (wrong_result): output y: 12 elements outside tolerance");
}
