#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
#include "engine/task_manifest.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace ks::engine;

namespace {

const char* good_toml = R"(id = "tiles"
title = "Tiles"
version = 2
families = ["elementwise"]
addresses = ["memory"]
requires = ["task.numel_in % 4 == 0"]
guidance = "tile it"
anti_patterns = ["half precision"]
[[templates]]
name = "grid"
file = "grid.cu.mustache"
params = [ { name = "threads", values = [128, 256], default = 256 } ]
constraints = ["threads % 32 == 0"]
)";

skill_files files_of(std::string toml, std::string templ = "int t = {{threads}};\n") {
  return skill_files{"skills/tiles",
                     {{"skill.toml", std::move(toml)}, {"grid.cu.mustache", std::move(templ)}}};
}

/// Returns the message of loading `files`, which must fail.
std::string error_of(const skill_files& files) {
  auto s = load_skill(files);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().code() == errc::invalid_input);
  return s.error().message();
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("a valid skill loads with its fields, files and content hash", "[engine][skills]") {
  auto s = load_skill(files_of(good_toml));
  REQUIRE(s.has_value());
  CHECK(s->id == "tiles");
  CHECK(s->version == 2);
  CHECK(s->families == std::vector<std::string>{"elementwise"});
  CHECK(s->addresses == std::vector<bound_kind>{bound_kind::memory});
  REQUIRE(s->templates.size() == 1);
  CHECK(s->templates[0].params[0].default_value == 256);
  CHECK(s->files.size() == 2);
  CHECK(s->content_hash.size() == 16);
  // Any change of any file changes the hash; equal files hash equal.
  CHECK(load_skill(files_of(good_toml))->content_hash == s->content_hash);
  CHECK(load_skill(files_of(good_toml, "int t = {{threads}}; \n"))->content_hash !=
        s->content_hash);
}

TEST_CASE("a TOML syntax error in a skill file is reported at FILE:LINE:COL", "[engine][skills]") {
  std::string message = error_of(files_of(replaced(good_toml, "version = 2", "version = = 2")));
  CHECK(message.rfind("skills/tiles/skill.toml:3:", 0) == 0);
}

TEST_CASE("every problem of a skill file is reported at its FILE:LINE:COL, in source order",
          "[engine][skills]") {
  std::string toml = good_toml;
  toml = replaced(toml, "version = 2", "version = 0");
  toml = replaced(toml, "addresses = [\"memory\"]", "addresses = [\"memroy\"]");
  toml = replaced(toml, "guidance = ", "guidence = \"x\"\nguidance = ");
  toml = replaced(toml, "default = 256 }", "default = 512 }");
  std::string message = error_of(files_of(toml));
  INFO(message);
  CHECK_THAT(message,
             Catch::Contains("skills/tiles/skill.toml:3:11: 'version' must be an integer >= 1"));
  CHECK_THAT(message, Catch::Contains("skills/tiles/skill.toml:5:14: unknown bottleneck class "
                                      "'memroy' (did you mean 'memory'?)"));
  CHECK_THAT(message,
             Catch::Contains(
                 "skills/tiles/skill.toml:7:1: unknown key 'guidence' (did you mean 'guidance'?)"));
  CHECK_THAT(message,
             Catch::Contains("skills/tiles/skill.toml:13:63: templates[0].params[0].default 512 is "
                             "not one of its values"));
  CHECK(message.find(":3:11:") < message.find(":5:14:"));
}

TEST_CASE("an expression's syntax error points at the character in the skill file",
          "[engine][skills]") {
  std::string message =
      error_of(files_of(replaced(good_toml, "\"threads % 32 == 0\"", "\"threads % % 32\"")));
  // The string starts at column 16 of line 13; its tenth character is the second '%'.
  CHECK_THAT(message,
             Catch::Contains(
                 "skills/tiles/skill.toml:13:27: templates[0].constraints[0]: unexpected '%'"));
}

TEST_CASE("an expression may name only parameters, task facts and diagnosis facts",
          "[engine][skills]") {
  std::string message =
      error_of(files_of(replaced(good_toml, "\"threads % 32 == 0\"", "\"thread % 32 == 0\"")));
  CHECK_THAT(
      message,
      Catch::Contains("skills/tiles/skill.toml:13:16: templates[0].constraints[0] names 'thread'"));
  message = error_of(
      files_of(replaced(good_toml, "\"task.numel_in % 4 == 0\"", "\"diagnosis.speed > 1\"")));
  CHECK_THAT(message,
             Catch::Contains("skills/tiles/skill.toml:6:13: requires[0] names 'diagnosis.speed'"));
}

TEST_CASE("a template's Mustache error is reported at its line and column", "[engine][skills]") {
  std::string message = error_of(files_of(good_toml, "// a kernel\nint t = {{threads;\n"));
  CHECK_THAT(message,
             Catch::Contains("skills/tiles/grid.cu.mustache:2:9: template error: Unclosed tag"));
  message = error_of(files_of(good_toml, "{{#flag.x}}\nint t;\n"));
  CHECK_THAT(message, Catch::Contains(
                          "skills/tiles/grid.cu.mustache:1:1: template error: Unclosed section"));
}

TEST_CASE("a missing template file and missing required keys are reported", "[engine][skills]") {
  std::string message = error_of(skill_files{"skills/tiles", {{"skill.toml", good_toml}}});
  CHECK_THAT(
      message,
      Catch::Contains("skills/tiles/skill.toml:11:8: template file 'grid.cu.mustache' not found"));
  message = error_of(files_of(replaced(good_toml, "title = \"Tiles\"\n", "")));
  CHECK_THAT(message, Catch::Contains("skills/tiles/skill.toml:1:1: missing required key 'title'"));
}

TEST_CASE("rendering fails on a name that nothing provides", "[engine][skills]") {
  auto s = load_skill(files_of(good_toml, "int t = {{threads}}, c = {{task.colums}};\n"));
  REQUIRE(s.has_value());
  task t;
  t.name = "relu";
  t.family = "elementwise";
  t.params = {{"cols", int64_t{64}}};
  auto text = render(*s, s->templates[0], t, {{"threads", 128}}, "");
  REQUIRE_FALSE(text.has_value());
  CHECK_THAT(text.error().message(), Catch::Contains("{{task.colums}}"));
  auto ok = load_skill(files_of(good_toml, "int t = {{threads}}, c = {{task.cols}};\n"));
  REQUIRE(ok.has_value());
  CHECK(render(*ok, ok->templates[0], t, {{"threads", 128}}, "").value() ==
        "int t = 128, c = 64;\n");
}

TEST_CASE("preconditions decide applicability; an undiagnosed parent passes diagnosis ones",
          "[engine][skills]") {
  auto s = load_skill(files_of(replaced(good_toml, "requires = [\"task.numel_in % 4 == 0\"]",
                                        "requires = [\"task.cols % 4 == 0\", "
                                        "\"diagnosis.fraction_of_roofline < 0.9\"]")));
  REQUIRE(s.has_value());
  task t;
  t.name = "relu";
  t.family = "elementwise";
  t.params = {{"cols", int64_t{64}}};
  CHECK(check_applies(*s, t, nullptr, "").applies);
  diagnosis d;
  d.diagnosed = true;
  d.bound = bound_kind::memory;
  d.fraction_of_roofline = 0.95;
  CHECK_FALSE(check_applies(*s, t, &d, "").applies);
  d.fraction_of_roofline = 0.5;
  CHECK(check_applies(*s, t, &d, "").applies);
  d.bound = bound_kind::compute; // the skill addresses memory-bound kernels only
  CHECK_THAT(check_applies(*s, t, &d, "").why_not, Catch::Contains("compute-bound"));
  CHECK_FALSE(addresses_bottleneck(*s, &d));
  CHECK(check_applies(*s, t, &d, "", /*by_bottleneck=*/false).applies);
  t.params = {{"cols", int64_t{63}}};
  CHECK_FALSE(check_applies(*s, t, nullptr, "").applies);
  t.params.clear(); // a task without the param: not applicable, never "unknown passes"
  CHECK_THAT(check_applies(*s, t, nullptr, "").why_not, Catch::Contains("has no cols"));
  t.family = "softmax";
  CHECK_FALSE(check_applies(*s, t, nullptr, "").applies);
}

TEST_CASE("the built-in skills load, each with guidance and a template", "[engine][skills]") {
  auto library = load_skill_library(ks::test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  CHECK(library->skills.size() >= 9);
  REQUIRE(library->find("launch_params") != nullptr);
  CHECK(library->find("launch_params")->templates.front().params_from_tunables);
  for (const skill& s : library->skills) {
    INFO(s.id);
    CHECK_FALSE(s.guidance.empty());
    CHECK_FALSE(s.templates.empty());
  }
}

TEST_CASE("a library refuses two skills with one id", "[engine][skills]") {
  auto a = load_skill(files_of(good_toml));
  REQUIRE(a.has_value());
  auto library = make_library({*a, *a});
  REQUIRE_FALSE(library.has_value());
  CHECK_THAT(library.error().message(), Catch::Contains("'tiles'"));
}
