#include "engine/skill_check.hpp"
#include "engine/skill_library.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

using namespace ks::engine;

namespace {

skill one_template(const std::string& constraint, std::vector<int64_t> values) {
  skill s;
  s.id = "probe";
  skill_template t;
  t.name = "t";
  t.params = {param_space{"n", values, values.front()}};
  auto e = expression::parse(constraint);
  REQUIRE(e.has_value());
  t.constraints = {*e};
  s.templates = {t};
  return s;
}

} // namespace

TEST_CASE("every built-in skill evaluates: the check refuses none of ours", "[engine][skills]") {
  auto library = load_skill_library(ks::test::source_dir() / "skills");
  REQUIRE(library.has_value());
  REQUIRE_FALSE(library->skills.empty());
  for (const skill& s : library->skills) {
    auto ok = check_skill_evaluates(s);
    INFO(s.id << ": " << (ok ? "" : ok.error().message()));
    CHECK(ok.has_value());
  }
}

TEST_CASE("a constraint that fails to evaluate at one instantiation is found and named",
          "[engine][skills]") {
  auto ok = check_skill_evaluates(one_template("100 / (n - 3) > 0", {1, 2, 3, 4}));
  REQUIRE_FALSE(ok.has_value());
  CHECK_THAT(ok.error().message(), Catch::Contains("template t: constraint '100 / (n - 3) > 0'"));
  CHECK_THAT(ok.error().message(), Catch::Contains("(n = 3)"));
  CHECK(check_skill_evaluates(one_template("100 / (n - 3) > 0", {1, 2, 4})).has_value());
  // Past max_checked_instantiations the walk stops: bounded, whatever the space.
  std::vector<int64_t> many;
  for (int64_t i = 1; i <= 10000; ++i)
    many.push_back(i);
  CHECK(check_skill_evaluates(one_template("100 / (n - 9000) > -1000", many)).has_value());
}
