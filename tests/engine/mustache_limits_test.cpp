#include "engine/mustache_limits.hpp"
#include "engine/skill_template.hpp"
#include "engine/template_context.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

using namespace ks::engine;
using ks::test::repeated;
namespace mustache = template_detail::mustache;

namespace {

std::string nested_sections(std::string_view name, size_t depth, std::string_view body) {
  return repeated("{{#" + std::string(name) + "}}", depth) + std::string(body) +
         repeated("{{/" + std::string(name) + "}}", depth);
}

template_detail::render_outcome render(const std::string& text, const mustache::data& root) {
  return template_detail::render_strict(text, root, {});
}

} // namespace

TEST_CASE("a template nested too deep or too large is refused before Mustache parses it",
          "[engine][mustache]") {
  // Issue 27: 100,000 nested sections (3 MB) took 23 GB. Refused by its size first; 10,000
  // (60 KB) by its depth.
  auto huge = template_limit_error(nested_sections("a", 100000, "x"));
  REQUIRE(huge.has_value());
  CHECK_THAT(huge->second, Catch::Contains("larger than 262144 bytes"));
  auto deep = template_limit_error(nested_sections("a", 10000, "x"));
  REQUIRE(deep.has_value());
  CHECK(deep->first == size_t{32} * 6); // the 33rd "{{#a}}"
  CHECK_THAT(deep->second, Catch::Contains("nested deeper than 32"));
  auto large = template_limit_error(std::string(size_t{300} * 1024, 'x'));
  REQUIRE(large.has_value());
  CHECK_THAT(large->second, Catch::Contains("larger than"));
  // Inverted sections count, and so do sections behind changed delimiters.
  CHECK(template_limit_error(repeated("{{^a}}", 40)).has_value());
  CHECK(template_limit_error("{{=<% %>=}}" + nested_sections("a", 40, "x")) == std::nullopt);
  CHECK(template_limit_error("{{=<% %>=}}" + repeated("<%#a%>", 40)).has_value());
  CHECK(template_syntax_error(nested_sections("a", 100000, "x")).has_value());
  // What our templates do passes: triple braces, comments, partials, a few levels.
  CHECK(template_limit_error("{{{x}}} {{! #a }} {{> p}} " + nested_sections("a", 32, "{{x}}")) ==
        std::nullopt);
}

TEST_CASE("rendering is bounded: sections over lists nested deep stop at the budget",
          "[engine][mustache]") {
  mustache::data root(mustache::data::type::object);
  mustache::data list(mustache::data::type::list);
  for (int i = 0; i < 8; ++i)
    list.push_back(mustache::data(mustache::data::type::object));
  root.set("l", list);
  root.set("big", mustache::data(std::string(100000, 'y')));
  // 8^20 repetitions of the body: without a budget this never ends.
  auto outcome = render(nested_sections("l", 20, "some text\n"), root);
  CHECK_THAT(outcome.syntax_error, Catch::Contains("would exceed"));
  // A large value repeated: charged by its size.
  outcome = render(nested_sections("l", 6, "{{big}}"), root);
  CHECK_THAT(outcome.syntax_error, Catch::Contains("would exceed"));
  // Deep nesting is refused before parsing, not after.
  outcome = render(nested_sections("l", 10000, "x"), root);
  CHECK_THAT(outcome.syntax_error, Catch::Contains("nested deeper than"));
  // A modest render is untouched.
  outcome = render(nested_sections("l", 2, "a"), root);
  CHECK(outcome.syntax_error.empty());
  CHECK(outcome.text == std::string(64, 'a'));
}

TEST_CASE("a partial that includes itself stops at the expansion limit", "[engine][mustache]") {
  mustache::data root(mustache::data::type::object);
  root.set("self", mustache::data(mustache::partial([] { return std::string("x{{> self}}"); })));
  root.set("deep", mustache::data(mustache::partial([] { return nested_sections("a", 50, ""); })));
  auto outcome = render("{{> self}}", root);
  CHECK_THAT(outcome.syntax_error, Catch::Contains("partials expanded"));
  outcome = render("{{> deep}}", root);
  CHECK_THAT(outcome.syntax_error, Catch::Contains("the partial deep: sections are nested"));
}
