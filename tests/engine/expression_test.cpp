#include "engine/expression.hpp"

#include <catch2/catch.hpp>

using namespace ks::engine;

namespace {

truth holds(const char* text, const fact_map& facts = {}) {
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
