#include "engine/offline_backend.hpp"
#include "engine/retrieval.hpp"
#include "engine/skill_library.hpp"
#include "engine/task_manifest.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

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
  t.params = {{"op", std::string("relu")}};
  t.tunables = {{"KS_BLOCK_THREADS", {64, 128, 256, 512, 1024}},
                {"KS_MAX_BLOCKS", {1024, 4096, 16384, 65536, 1048576}}};
  return t;
}

const char* launch_toml = R"(id = "launch_params"
title = "Launch parameters"
version = 1
families = ["*"]
guidance = "vary the launch parameters"
[[templates]]
name = "reference_defines"
file = "t.cu.mustache"
params_from = "tunables"
)";

const char* launch_template =
    "// {{plan}}\n{{#defines}}\n#define {{name}} {{value}}\n{{/defines}}\n{{reference}}";

const char* tiles_toml = R"(id = "tiles"
title = "Tiles"
version = 3
families = ["elementwise"]
guidance = "tile it"
[[templates]]
name = "grid"
file = "grid.cu.mustache"
params = [
  { name = "threads", values = [128, 256, 512], default = 256 },
  { name = "items", values = [1, 2, 4], default = 2 },
]
constraints = ["threads * items <= 1024"]
)";

const char* tiles_template =
    "// {{plan}} op {{task.op}}\nconstexpr int t = {{threads}}, i = {{items}};\n";

skill load(const char* dir, std::map<std::string, std::string> files) {
  auto s = load_skill(skill_files{dir, std::move(files)});
  REQUIRE(s.has_value());
  return std::move(*s);
}

/// Returns a library of two skills: launch_params and tiles (threads x items <= 1024).
skill_library_ptr test_library() {
  std::vector<skill> skills;
  skills.push_back(
      load("launch_params", {{"skill.toml", launch_toml}, {"t.cu.mustache", launch_template}}));
  skills.push_back(
      load("tiles", {{"skill.toml", tiles_toml}, {"grid.cu.mustache", tiles_template}}));
  auto library = make_library(std::move(skills));
  REQUIRE(library.has_value());
  return std::make_shared<const skill_library>(std::move(*library));
}

std::vector<std::string> keys_of(const std::vector<plan>& plans) {
  std::vector<std::string> keys;
  for (const plan& p : plans)
    keys.push_back(plan_key(p));
  return keys;
}

/// Returns a request for the root of `t`'s tree with every skill of `library` retrieved (all
/// untried: ordered by prior, then id).
planning_request root_request(const task& t, const skill_library& library, int64_t count) {
  planning_request request;
  request.subject = &t;
  request.parent = 0;
  request.parent_lineage = {reference_plan()};
  request.parent_source = reference_source;
  request.reference_source = reference_source;
  request.skills = retrieve(library, t, nullptr, reference_source, {}, retrieval_rules{});
  request.count = count;
  return request;
}

plan tiles(int64_t threads, int64_t items) {
  return plan{"tiles",
              "",
              {{"threads", std::to_string(threads)}, {"items", std::to_string(items)}},
              3,
              "grid"};
}

plan launch(int64_t threads, int64_t max_blocks) {
  return plan{"launch_params",
              "",
              {{"KS_BLOCK_THREADS", std::to_string(threads)},
               {"KS_MAX_BLOCKS", std::to_string(max_blocks)}},
              1,
              "reference_defines"};
}

} // namespace

TEST_CASE("macro_default reads only a default guarded by its #ifndef", "[engine][backend]") {
  CHECK(macro_default(reference_source, "KS_BLOCK_THREADS") == 256);
  CHECK(macro_default(reference_source, "KS_MAX_BLOCKS") == 1048576);
  CHECK(macro_default(reference_source, "KS_TILE") == std::nullopt);
  CHECK(macro_default("#define KS_A 4\n", "KS_A") == std::nullopt);
  CHECK(macro_default("#define KS_A 8\n#ifndef KS_A\n\n#  define KS_A 4\n#endif\n", "KS_A") == 4);
  CHECK(macro_default("#ifndef KS_A\n#define KS_A (1 << 20)\n#endif\n", "KS_A") == std::nullopt);
}

TEST_CASE("the root gets one plan of each retrieved skill in turn, best ranked first",
          "[engine][backend]") {
  task t = relu_like_task();
  skill_library_ptr library = test_library();
  offline_backend backend(library);
  planning_request request = root_request(t, *library, 4);
  // Both untried with the same prior: by id, launch_params before tiles.
  REQUIRE(request.skills.size() == 2);
  REQUIRE(request.skills[0].id == "launch_params");
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  // launch_params' defaults are the reference itself: its first idea is a neighbour of them;
  // tiles' first is its defaults; then each skill's next idea.
  // Steps of equal relative change go larger first (undiagnosed), then by parameter name.
  CHECK(keys_of(*plans) ==
        std::vector<std::string>{plan_key(launch(512, 1048576)), plan_key(tiles(256, 2)),
                                 plan_key(launch(128, 1048576)), plan_key(tiles(256, 4))});
  CHECK((*plans)[1].skill_version == 3);
  CHECK((*plans)[1].template_name == "grid");
}

TEST_CASE("a parent made by a skill gets that skill's one-step neighbours within its constraints",
          "[engine][backend]") {
  task t = relu_like_task();
  skill_library_ptr library = test_library();
  offline_backend backend(library);
  planning_request request = root_request(t, *library, 16);
  request.parent_lineage = {reference_plan(), tiles(512, 2)};
  // Only tiles: its neighbours of (512, 2) within threads * items <= 1024.
  request.skills.erase(request.skills.begin());
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  std::set<std::string> keys;
  for (const plan& p : *plans)
    keys.insert(plan_key(p));
  CHECK(keys == std::set<std::string>{plan_key(tiles(256, 2)), plan_key(tiles(512, 1))});
}

TEST_CASE("propose never repeats a plan tried on the parent nor one of the lineage",
          "[engine][backend]") {
  task t = relu_like_task();
  skill_library_ptr library = test_library();
  offline_backend backend(library);
  planning_request request = root_request(t, *library, 64);
  plan_outcome tried;
  tried.plan = tiles(256, 2);
  tried.outcome = outcome_kind::failed;
  request.tried.push_back(tried);
  request.parent_lineage.push_back(launch(512, 1048576));
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  for (const plan& p : *plans) {
    CHECK(plan_key(p) != plan_key(tiles(256, 2)));
    CHECK(plan_key(p) != plan_key(launch(512, 1048576)));
    // The launch skill's defaults are the reference: never proposed.
    CHECK(plan_key(p) != plan_key(launch(256, 1048576)));
  }
  std::set<std::string> distinct;
  for (const plan& p : *plans)
    CHECK(distinct.insert(plan_key(p)).second);
}

TEST_CASE("propose never repeats a plan already in the tree under another parent",
          "[engine][backend]") {
  // Templates render from the task and the parameters, not the parent: tiles(256, 2) made
  // under another branch is the same kernel, measured already.
  task t = relu_like_task();
  skill_library_ptr library = test_library();
  offline_backend backend(library);
  planning_request request = root_request(t, *library, 4);
  request.in_tree = {reference_plan(), tiles(256, 2), launch(512, 1048576)};
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  REQUIRE_FALSE(plans->empty());
  for (const plan& p : *plans) {
    CHECK(plan_key(p) != plan_key(tiles(256, 2)));
    CHECK(plan_key(p) != plan_key(launch(512, 1048576)));
  }
  // Without the tree's plans the first ideas are exactly those two.
  request.in_tree.clear();
  plans = backend.propose(request);
  REQUIRE(plans.has_value());
  CHECK(keys_of(*plans)[0] == plan_key(launch(512, 1048576)));
  CHECK(keys_of(*plans)[1] == plan_key(tiles(256, 2)));
}

TEST_CASE("a demoted skill is proposed only when the others have no plan left",
          "[engine][backend]") {
  task t = relu_like_task();
  skill_library_ptr library = test_library();
  offline_backend backend(library);
  planning_request request = root_request(t, *library, 3);
  request.skills[0].demoted = true; // launch_params
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  REQUIRE(plans->size() == 3);
  for (const plan& p : *plans)
    CHECK(p.skill == "tiles");
  request.count = 64;
  plans = backend.propose(request);
  REQUIRE(plans.has_value());
  auto first_launch = std::find_if(plans->begin(), plans->end(),
                                   [](const plan& p) { return p.skill == "launch_params"; });
  REQUIRE(first_launch != plans->end());
  CHECK(std::all_of(first_launch, plans->end(),
                    [](const plan& p) { return p.skill == "launch_params"; }));
}

TEST_CASE("a skill's best instantiation of earlier campaigns is its first idea",
          "[engine][backend]") {
  task t = relu_like_task();
  skill_library_ptr library = test_library();
  offline_backend backend(library);
  planning_request request = root_request(t, *library, 1);
  request.skills.erase(request.skills.begin());
  request.skills[0].stats.tries = 5;
  request.skills[0].stats.acceptances = 2;
  request.skills[0].stats.best_template = "grid";
  request.skills[0].stats.best_params = {{"threads", "128"}, {"items", "4"}};
  request.skills[0].stats.best_speedup = 1.4;
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  REQUIRE(plans->size() == 1);
  CHECK(plan_key(plans->front()) == plan_key(tiles(128, 4)));
  // The fastest of tries that all lost to their reference is no place to start from.
  request.skills[0].stats.best_speedup = 0.8;
  plans = backend.propose(request);
  REQUIRE(plans.has_value());
  REQUIRE(plans->size() == 1);
  CHECK(plan_key(plans->front()) != plan_key(tiles(128, 4)));
}

TEST_CASE("a skill's first idea starts from its params' prefer for the task", "[engine][backend]") {
  task t = relu_like_task();
  t.params["width"] = int64_t{4096};
  // items prefers width / threads / 512: 4096 / 256 / 512 = 0.03 -> 1 (the fixed default is 2).
  std::string toml = tiles_toml;
  const std::string items = "{ name = \"items\", values = [1, 2, 4], default = 2 }";
  size_t at = toml.find(items);
  REQUIRE(at != std::string::npos);
  toml.replace(at, items.size(),
               "{ name = \"items\", values = [1, 2, 4], default = 2, prefer = "
               "\"task.width / threads / 512.0\" }");
  std::vector<skill> skills;
  skills.push_back(load("tiles", {{"skill.toml", toml}, {"grid.cu.mustache", tiles_template}}));
  auto made = make_library(std::move(skills));
  REQUIRE(made.has_value());
  auto library = std::make_shared<const skill_library>(std::move(*made));
  offline_backend backend(library);
  planning_request request = root_request(t, *library, 3);
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  REQUIRE(plans->size() == 3);
  CHECK(plan_key(plans->front()) == plan_key(tiles(256, 1)));
  // Then its one-step neighbours, as from any start: items 1 -> 2 (its list's next), and threads.
  CHECK(plan_key((*plans)[1]) == plan_key(tiles(256, 2)));
  // A width that prefers 4 items: 1048576 / 256 / 512 = 8, nearest 4 (256 * 4 <= 1024).
  t.params["width"] = int64_t{1048576};
  plans = backend.propose(request);
  REQUIRE(plans.has_value());
  REQUIRE_FALSE(plans->empty());
  CHECK(plan_key(plans->front()) == plan_key(tiles(256, 4)));
}

TEST_CASE("write_code renders the plan's template, the same text for the same plan",
          "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend(test_library());
  coding_request request;
  request.subject = &t;
  request.reference_source = reference_source;
  request.plan = launch(128, 4096);
  expected<std::string> code = backend.write_code(request);
  REQUIRE(code.has_value());
  CHECK(*code == "// launch_params/reference_defines(KS_BLOCK_THREADS=128,KS_MAX_BLOCKS=4096)\n"
                 "#define KS_BLOCK_THREADS 128\n#define KS_MAX_BLOCKS 4096\n" +
                     reference_source);
  request.plan.description = "another description";
  CHECK(backend.write_code(request).value() == *code);
  request.plan = tiles(128, 4);
  code = backend.write_code(request);
  REQUIRE(code.has_value());
  CHECK(*code == "// tiles/grid(items=4,threads=128) op relu\nconstexpr int t = 128, i = 4;\n");
  request.plan = reference_plan();
  CHECK(backend.write_code(request).value() == reference_source);
}

TEST_CASE("write_code refuses unknown skills, values outside the space and broken constraints",
          "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend(test_library());
  coding_request request;
  request.subject = &t;
  request.reference_source = reference_source;
  auto refuses = [&](const plan& p, const std::string& says) {
    request.plan = p;
    expected<std::string> code = backend.write_code(request);
    REQUIRE_FALSE(code.has_value());
    CHECK(code.error().code() == errc::invalid_input);
    CHECK_THAT(code.error().message(), Catch::Contains(says));
  };
  refuses(plan{"vectorize", "", {}, 0, {}}, "no skill 'vectorize'");
  refuses(tiles(512, 4), "does not hold");
  refuses(tiles(100, 1), "not one of its values");
  refuses(plan{"tiles", "", {{"threads", "wide"}, {"items", "1"}}, 3, "grid"}, "integer");
  refuses(plan{"tiles", "", {{"threads", "256"}, {"items", "1"}}, 3, "blocks"}, "no template");
}

TEST_CASE("repair gives up, naming the plan and the first error line", "[engine][backend]") {
  task t = relu_like_task();
  offline_backend backend(test_library());
  repair_request request;
  request.subject = &t;
  request.plan = tiles(256, 4);
  request.failure_kind = "compile_error";
  request.error_text = "nvcc warning : something harmless\n"
                       "candidate.cu(21): error: static assertion failed\n1 error detected\n";
  expected<repair_reply> reply = backend.repair(request);
  REQUIRE(reply.has_value());
  CHECK(reply->gave_up);
  CHECK_THAT(reply->diagnosis, Catch::Contains("tiles/grid(items=4,threads=256)"));
  CHECK_THAT(reply->diagnosis, Catch::Contains("static assertion failed"));
}

TEST_CASE("every shipped task gets plans from the built-in skills, and each renders",
          "[engine][backend]") {
  auto library = load_skill_library(ks::test::source_dir() / "skills");
  REQUIRE(library.has_value());
  auto shared = std::make_shared<const skill_library>(std::move(*library));
  offline_backend backend(shared);
  for (const char* suite : {"kernelbench-l1", "quickstart"}) {
    expected<std::vector<task>> tasks = load_task_suite(ks::test::source_dir() / "tasks" / suite);
    REQUIRE(tasks.has_value());
    for (const task& t : *tasks) {
      INFO(suite << "/" << t.name);
      std::string source = read_reference(t).value_or("");
      for (const auto& [name, values] : t.tunables) {
        std::optional<int64_t> fallback = macro_default(source, name);
        REQUIRE(fallback.has_value());
        CHECK(std::find(values.begin(), values.end(), *fallback) != values.end());
      }
      planning_request request;
      request.subject = &t;
      request.parent_lineage = {reference_plan()};
      request.reference_source = source;
      request.skills = retrieve(*shared, t, nullptr, source, {}, retrieval_rules{});
      // Every family of the suites has a skill of its own beside the launch parameters.
      CHECK(request.skills.size() >= 2);
      request.count = 4;
      expected<std::vector<plan>> plans = backend.propose(request);
      REQUIRE(plans.has_value());
      CHECK(plans->size() == 4);
      std::set<std::string> skills_used;
      for (const plan& p : *plans) {
        skills_used.insert(p.skill);
        coding_request coding;
        coding.subject = &t;
        coding.plan = p;
        coding.reference_source = source;
        CHECK(backend.write_code(coding).has_value());
      }
      CHECK(skills_used.size() >= 2);
    }
  }
}
