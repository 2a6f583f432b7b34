#include "engine/expression.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

using namespace ks::engine;
using ks::test::repeated;

namespace {

truth holds(const std::string& text, const fact_map& facts = {}) {
  auto e = expression::parse(text);
  REQUIRE(e.has_value());
  auto t = e->holds(facts);
  REQUIRE(t.has_value());
  return *t;
}

} // namespace

TEST_CASE("an expression computes with integers, reals and strings", "[engine][expression]") {
  fact_map facts{{"threads", int64_t{256}},
                 {"items", int64_t{4}},
                 {"task.op", std::string("relu")},
                 {"task.eps", 1e-5}};
  CHECK(holds("threads * items <= 1024", facts) == truth::yes);
  CHECK(holds("threads * items < 1024", facts) == truth::no);
  CHECK(holds("threads % 32 == 0 && items != 3", facts) == truth::yes);
  CHECK(holds("(threads + 1) / 2 == 128", facts) == truth::yes); // integer division truncates
  CHECK(holds("task.op == 'relu' || task.op == 'gelu'", facts) == truth::yes);
  CHECK(holds("task.eps < 0.001", facts) == truth::yes);
  CHECK(holds("!(threads > 128)", facts) == truth::no);
  CHECK(holds("-items < 0 && true", facts) == truth::yes);
}

TEST_CASE("a missing fact makes an expression unknown, except where logic decides it",
          "[engine][expression]") {
  fact_map facts{{"threads", int64_t{256}}};
  CHECK(holds("diagnosis.fraction_of_roofline < 0.9", facts) == truth::unknown);
  CHECK(holds("threads > 1024 && diagnosis.spills == 0", facts) == truth::no);
  CHECK(holds("threads < 1024 || diagnosis.spills == 0", facts) == truth::yes);
  CHECK(holds("threads < 1024 && diagnosis.spills == 0", facts) == truth::unknown);
}

TEST_CASE("a syntax error says at which character", "[engine][expression]") {
  auto e = expression::parse("threads * * 2");
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().message().rfind("10: ", 0) == 0);
  e = expression::parse("(threads + 2");
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().message().rfind("0: ", 0) == 0);
  CHECK_THAT(e.error().message(), Catch::Contains("never closed"));
  e = expression::parse("threads = 2");
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().message().rfind("8: ", 0) == 0);
  CHECK_FALSE(expression::parse("task.op == 'relu").has_value());
}

TEST_CASE("a type error or a division by zero fails the evaluation", "[engine][expression]") {
  fact_map facts{{"n", int64_t{0}}, {"task.op", std::string("relu")}};
  auto e = expression::parse("4 / n == 1");
  REQUIRE(e.has_value());
  CHECK_FALSE(e->holds(facts).has_value());
  e = expression::parse("task.op + 1 > 0");
  REQUIRE(e.has_value());
  auto t = e->holds(facts);
  REQUIRE_FALSE(t.has_value());
  CHECK_THAT(t.error().message(), Catch::Contains("needs numbers"));
}

TEST_CASE("names lists every fact an expression uses, once", "[engine][expression]") {
  auto e = expression::parse("task.cols % vec == 0 || vec == 1");
  REQUIRE(e.has_value());
  CHECK(e->names() == std::vector<std::string>{"task.cols", "vec"});
}

namespace {

std::string evaluation_error(const std::string& text, const fact_map& facts = {}) {
  auto e = expression::parse(text);
  INFO(text.substr(0, 80));
  REQUIRE(e.has_value());
  auto t = e->holds(facts);
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().code() == errc::invalid_input);
  return t.error().message();
}

std::string parse_error(const std::string& text) {
  auto e = expression::parse(text);
  INFO(text.substr(0, 80));
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().code() == errc::invalid_input);
  return e.error().message();
}

} // namespace

TEST_CASE("integer overflow and INT64_MIN / -1 are errors, never a signal",
          "[engine][expression]") {
  fact_map facts{{"threads", int64_t{256}}};
  // Issue 27's distilled constraint: SIGFPE before.
  CHECK_THAT(evaluation_error("(-9223372036854775807 - 1) / (threads - threads - 1) != 0", facts),
             Catch::Contains("overflows"));
  CHECK_THAT(evaluation_error("(-9223372036854775807 - 1) % -1 == 0"),
             Catch::Contains("overflows"));
  CHECK_THAT(evaluation_error("9223372036854775807 + 1 > 0"), Catch::Contains("overflows"));
  CHECK_THAT(evaluation_error("-9223372036854775807 - 2 < 0"), Catch::Contains("overflows"));
  CHECK_THAT(evaluation_error("4611686018427387904 * 2 > 0"), Catch::Contains("overflows"));
  CHECK_THAT(evaluation_error("-(-9223372036854775807 - 1) > 0"), Catch::Contains("overflows"));
  CHECK_THAT(evaluation_error("threads % 0 == 0", facts), Catch::Contains("division by zero"));
  CHECK_THAT(evaluation_error("threads / (threads - 256) == 0", facts),
             Catch::Contains("division by zero"));
  // What does fit still computes.
  CHECK(holds("-9223372036854775807 - 1 < 0") == truth::yes);
  CHECK(holds("(-9223372036854775807 - 1) / 1 < 0") == truth::yes);
  CHECK(holds("3037000499 * 3037000499 > 0") == truth::yes);
  CHECK(holds("1e308 * 10 > 0") == truth::yes); // a real overflows to inf, no fault
}

TEST_CASE("nesting and size are bounded: a deep expression is a parse error, not a crash",
          "[engine][expression]") {
  // Issue 27: 20,000 parentheses were a SIGSEGV (recursion without a limit).
  CHECK_THAT(parse_error(repeated("(", 20000) + "1" + repeated(")", 20000)),
             Catch::Contains("nested deeper than"));
  CHECK_THAT(parse_error(repeated("-", 10000) + "1"), Catch::Contains("nested deeper than"));
  CHECK_THAT(parse_error(repeated("!", 10000) + "1"), Catch::Contains("nested deeper than"));
  // A long flat chain builds a deep tree without recursing in the parser: bounded too.
  CHECK_THAT(parse_error("1" + repeated(" + 1", 5000) + " > 0"),
             Catch::Contains("nested deeper than"));
  // Past the size limit, nothing is parsed at all.
  CHECK_THAT(parse_error(repeated("x", 70000)), Catch::Contains("longer than 65536"));
  CHECK_THAT(parse_error(repeated("(", 100000) + "1" + repeated(")", 100000)),
             Catch::Contains("longer than 65536"));
  // Realistic depths still parse and evaluate.
  CHECK(holds(repeated("(", 50) + "1" + repeated(")", 50) + " == 1") == truth::yes);
  CHECK(holds("1" + repeated(" + 1", 100) + " == 101") == truth::yes);
}
