#include "agents/reply_parser.hpp"

#include <catch2/catch.hpp>

using namespace ks;

namespace {

const std::string kernel = "#include \"kernelskill/abi.h\"\nextern \"C\" int ks_forward(const "
                           "ks_tensor*, int32_t, ks_tensor*, int32_t, void*) { return 0; }\n";

} // namespace

TEST_CASE("the code of a reply is its fenced block that defines ks_forward, the last of several",
          "[agents][parser]") {
  std::string reply = "Plan:\n```cuda\n// draft\n" + kernel + "```\nBetter:\n```cpp\n// final\n" +
                      kernel + "```\n```text\nnotes\n```\n";
  auto code = agents::parse_code(reply);
  REQUIRE(code.has_value());
  CHECK(code->rfind("// final\n", 0) == 0);
}

TEST_CASE("a reply without a code block, or whose blocks do not define ks_forward, is a "
          "bad_reply that says what to do",
          "[agents][parser]") {
  auto none = agents::parse_code("It is already optimal.");
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().code() == engine::errc::bad_reply);
  CHECK_THAT(none.error().message(), Catch::Contains("no fenced code block"));
  auto other = agents::parse_code("```cuda\n__global__ void k() {}\n```");
  REQUIRE_FALSE(other.has_value());
  CHECK_THAT(other.error().message(), Catch::Contains("defines ks_forward"));
  auto cpp_linkage = agents::parse_code("```cuda\nint ks_forward() { return 0; }\n```");
  REQUIRE_FALSE(cpp_linkage.has_value());
  CHECK_THAT(cpp_linkage.error().message(), Catch::Contains("extern \"C\""));
}

TEST_CASE("a code block cut short by the token limit still counts to its end", "[agents][parser]") {
  auto blocks = agents::fenced_blocks("```cuda\nint a;\nint b;");
  REQUIRE(blocks.size() == 1);
  CHECK(blocks[0].info == "cuda");
  CHECK(blocks[0].text == "int a;\nint b;\n");
}

TEST_CASE("plans are read from a JSON object, checked against the skills offered, and custom "
          "ideas become distinct plans",
          "[agents][parser]") {
  agents::plan_rules rules;
  rules.skills = {"launch_params", "elementwise_vectorized"};
  rules.count = 3;
  std::string reply = R"(Here:
```json
{"plans": [
  {"skill": "launch_params", "params": {"KS_BLOCK_THREADS": 128}, "description": "fewer threads"},
  {"skill": "custom", "description": "Use  shared memory"},
  {"skill": "custom", "description": "use warp shuffles"}
]}
```)";
  auto plans = agents::parse_plans(reply, rules);
  REQUIRE(plans.has_value());
  REQUIRE(plans->size() == 3);
  CHECK((*plans)[0].skill == "launch_params");
  CHECK((*plans)[0].params.at("KS_BLOCK_THREADS") == "128");
  CHECK((*plans)[1].params.at("idea") == "use shared memory");
  CHECK_FALSE(engine::same_plan((*plans)[1], (*plans)[2]));
}

TEST_CASE("plans that name an unknown skill or lack a description are a bad_reply naming each "
          "problem",
          "[agents][parser]") {
  agents::plan_rules rules;
  rules.skills = {"launch_params"};
  auto plans = agents::parse_plans(
      R"({"plans": [{"skill": "magic", "description": "x"}, {"skill": "launch_params"}]})", rules);
  REQUIRE_FALSE(plans.has_value());
  CHECK(plans.error().code() == engine::errc::bad_reply);
  CHECK_THAT(
      plans.error().message(),
      Catch::Contains("plan 1: unknown skill 'magic' (choose one of: launch_params, custom)"));
  CHECK_THAT(plans.error().message(), Catch::Contains("plan 2: no \"description\""));
}

TEST_CASE("an empty plan list is an answer, extra plans are cut, a bare array is accepted",
          "[agents][parser]") {
  agents::plan_rules rules;
  rules.count = 1;
  auto none = agents::parse_plans(R"({"plans": []})", rules);
  REQUIRE(none.has_value());
  CHECK(none->empty());
  auto bare = agents::parse_plans(
      "```json\n[{\"skill\": \"custom\", \"description\": \"a\"}, {\"skill\": \"custom\", "
      "\"description\": \"b\"}]\n```",
      rules);
  REQUIRE(bare.has_value());
  CHECK(bare->size() == 1);
  auto garbage = agents::parse_plans("no json at all", rules);
  REQUIRE_FALSE(garbage.has_value());
  CHECK(garbage.error().code() == engine::errc::bad_reply);
}

TEST_CASE("a repair reply gives the diagnosis, the fix and the fixed source; giving up needs "
          "no code",
          "[agents][parser]") {
  auto fix = agents::parse_repair("```json\n{\"diagnosis\": \"off by one\", \"fix_summary\": "
                                  "\"< instead of <=\"}\n```\n```cuda\n" +
                                  kernel + "```\n");
  REQUIRE(fix.has_value());
  CHECK_FALSE(fix->gave_up);
  CHECK(fix->diagnosis == "off by one");
  CHECK(fix->fix_summary == "< instead of <=");
  CHECK(fix->source == kernel);
  auto gave_up = agents::parse_repair(R"({"diagnosis": "hopeless", "give_up": true})");
  REQUIRE(gave_up.has_value());
  CHECK(gave_up->gave_up);
  auto no_summary = agents::parse_repair("```cuda\n" + kernel + "```\n");
  REQUIRE_FALSE(no_summary.has_value());
  CHECK(no_summary.error().code() == engine::errc::bad_reply);
}

TEST_CASE("a distilled skill is its toml block and its template block", "[agents][parser]") {
  auto files = agents::parse_skill_files("```toml\nid = \"x\"\n```\n```cuda\n// t\n```\n",
                                         "kernel.cu.mustache");
  REQUIRE(files.has_value());
  CHECK(files->at("skill.toml") == "id = \"x\"\n");
  CHECK(files->at("kernel.cu.mustache") == "// t\n");
  CHECK_FALSE(agents::parse_skill_files("```cuda\n// t\n```", "k").has_value());
}
