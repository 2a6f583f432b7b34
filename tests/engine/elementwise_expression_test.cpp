#include "engine/elementwise_expression.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace ks::engine;
using ks::test::repeated;

namespace {

const std::vector<std::string> xyz{"x", "y", "z"};

elementwise_expression parsed(const std::string& text) {
  expected<elementwise_expression> e = elementwise_expression::parse(text, xyz);
  INFO(text << ": " << (e ? "" : e.error().message()));
  REQUIRE(e.has_value());
  return *e;
}

std::string error_of(const std::string& text) {
  expected<elementwise_expression> e = elementwise_expression::parse(text, xyz);
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().code() == errc::invalid_input);
  return e.error().message();
}

} // namespace

TEST_CASE("an elementwise expression is written in CUDA over v_ inputs with float literals",
          "[engine][elementwise]") {
  elementwise_expression e = parsed("x * 2 + y / 3.5");
  CHECK(e.cuda() == "((v_x * 2.0f) + (v_y / 3.5f))");
  CHECK(e.torch() == "((x * 2.0) + (y / 3.5))");
  CHECK(e.inputs_used() == std::vector<std::string>{"x", "y"});
  CHECK(e.operations() == 3);
}

TEST_CASE("powers bind tighter than unary minus and to the right, as in Python",
          "[engine][elementwise]") {
  elementwise_expression e = parsed("-x ** y ** z");
  CHECK(e.cuda() == "(-powf(v_x, powf(v_y, v_z)))");
  CHECK(e.torch() == "(-(x ** (y ** z)))");
  // Squares and cubes are products, as torch's pow kernel computes them; other powers powf.
  CHECK(parsed("(x - y) ** 2").cuda() == "[](float t) { return t * t; }((v_x - v_y))");
  CHECK(parsed("x ** 3.0").cuda() == "[](float t) { return t * t * t; }(v_x)");
  CHECK(parsed("x ** 2.5").cuda() == "powf(v_x, 2.5f)");
}

TEST_CASE("subexpressions without inputs fold into one constant, so torch never sees "
          "a function of a number",
          "[engine][elementwise]") {
  elementwise_expression e = parsed("x * (1.0 / 4.0) + exp(0.0) - -2");
  CHECK(e.cuda() == "(((v_x * 0.25f) + 1.0f) - (-2.0f))");
  CHECK(e.torch() == "(((x * 0.25) + 1.0) - (-2.0))");
  CHECK(e.operations() == 3);
  CHECK(parsed("where(1 > 2, x, y)").cuda() == "v_y");
}

TEST_CASE("a function that reads its argument twice is an immediately called lambda; one that "
          "reads it once is inlined",
          "[engine][elementwise]") {
  CHECK(parsed("gelu(x)").cuda() ==
        "([](float t) { return 0.5f * t * (1.0f + erff(t * 0.70710678f)); }(v_x))");
  CHECK(parsed("gelu(x)").torch() == "torch.nn.functional.gelu(x)");
  CHECK(parsed("sigmoid(x + y)").cuda() == "(1.0f / (1.0f + expf(-(v_x + v_y))))");
  CHECK(parsed("leaky_relu(x, 0.01)").cuda() ==
        "([](float t, float a) { return t > 0.0f ? t : t * a; }(v_x, 0.01f))");
  CHECK(parsed("leaky_relu(x, 0.01)").torch() ==
        "torch.nn.functional.leaky_relu(x, negative_slope=0.01)");
  CHECK(parsed("gelu_tanh(x)").torch() == "torch.nn.functional.gelu(x, approximate='tanh')");
}

TEST_CASE("comparisons give 1.0 or 0.0, and where() picks where its condition is not 0",
          "[engine][elementwise]") {
  elementwise_expression e = parsed("where(x > y, x, y)");
  CHECK(e.cuda() == "((v_x > v_y ? 1.0f : 0.0f) != 0.0f ? v_x : v_y)");
  CHECK(e.torch() == "torch.where((x > y).float() != 0, x, y)");
  CHECK(parsed("(x <= 0.5) * y").torch() == "((x <= 0.5).float() * y)");
}

TEST_CASE("torch gets a number where its function takes one, and a tensor where it takes "
          "only tensors",
          "[engine][elementwise]") {
  CHECK(parsed("max(x, 0.5)").torch() == "torch.clamp(x, min=0.5)");
  CHECK(parsed("min(0.5, x)").torch() == "torch.clamp(x, max=0.5)");
  CHECK(parsed("min(x, y)").torch() == "torch.minimum(x, y)");
  CHECK(parsed("clamp(x, -1, 1)").torch() == "torch.clamp(x, (-1.0), 1.0)");
  CHECK(parsed("clamp(x, y, 1)").torch() ==
        "torch.clamp(x, y, torch.tensor(1.0, dtype=torch.float32, device=x.device))");
  CHECK(parsed("pow(2, x)").torch() == "torch.pow(2.0, x)");
  CHECK(parsed("pow(2, x)").cuda() == "powf(2.0f, v_x)");
}

TEST_CASE("every function of docs/tasks.md parses, and precise CUDA functions are used",
          "[engine][elementwise]") {
  for (std::string_view name : elementwise_functions()) {
    std::string call = std::string(name) + "(x)";
    if (name == "elu" || name == "leaky_relu")
      call = std::string(name) + "(x, 0.5)";
    else if (name == "pow" || name == "min" || name == "max")
      call = std::string(name) + "(x, y)";
    else if (name == "hardtanh" || name == "clamp")
      call = std::string(name) + "(x, -1, 1)";
    else if (name == "where")
      call = "where(x, y, z)";
    elementwise_expression e = parsed(call);
    CHECK(e.cuda().find("__") == std::string::npos); // no intrinsic (__expf, __fdividef)
    CHECK_FALSE(e.torch().empty());
  }
  CHECK(elementwise_functions().size() == 30);
}

TEST_CASE("a wrong expression is refused with the offset of the problem", "[engine][elementwise]") {
  CHECK(error_of("gleu(x)").starts_with("0: unknown function 'gleu' (did you mean 'gelu'?)"));
  CHECK(error_of("x + weight") == "4: unknown name 'weight'; the inputs are x, y, z");
  CHECK(error_of("x + yy") == "4: unknown name 'yy' (did you mean 'y'?); the inputs are x, y, z");
  CHECK(error_of("relu") == "0: 'relu' is a function: write relu(...); the inputs are x, y, z");
  CHECK(error_of("relu(x, y)") == "0: relu takes 1 argument, got 2");
  CHECK(error_of("elu(x, y)") == "7: argument 2 of elu must be a number (torch takes it as one)");
  CHECK(error_of("x +") == "3: the expression ends where a number, an input or '(' should be");
  CHECK(error_of("(x + y") == "6: missing ')' for the '(' at offset 0");
  CHECK(error_of("x < y < z") == "6: comparisons do not chain: write (a < b) * (b < c)");
  CHECK(error_of("x = y") == "2: '=' is not an operator: compare with '=='");
  CHECK(error_of("1 + 2") == "0: the operation uses no input; it is the number 3.0");
  CHECK(error_of("x * 1e39") == "4: '1e39' does not fit a float32");
  CHECK(error_of("x + 0 * inf") == "6: '*' uses no input and is NaN");
}

TEST_CASE("inf is a number, as in a mask's fill, unless an input has that name",
          "[engine][elementwise]") {
  elementwise_expression e = parsed("where(x > 0.5, y, -inf) + log(0)");
  CHECK(e.cuda() == "(((v_x > 0.5f ? 1.0f : 0.0f) != 0.0f ? v_y : (-INFINITY)) + (-INFINITY))");
  CHECK(e.torch() == "(torch.where((x > 0.5).float() != 0, y, torch.tensor((-float('inf')), "
                     "dtype=torch.float32, device=x.device)) + (-float('inf')))");
  expected<elementwise_expression> named = elementwise_expression::parse("inf * 2", {"inf"});
  REQUIRE(named.has_value());
  CHECK(named->cuda() == "(v_inf * 2.0f)");
}

TEST_CASE("nesting and size are bounded: a deep operation is refused, not a crash",
          "[engine][elementwise]") {
  // Issue 27: an op nested 10,000 deep crashed the manifest loader.
  CHECK_THAT(error_of(repeated("(", 10000) + "x" + repeated(")", 10000)),
             Catch::Contains("nested deeper than"));
  CHECK_THAT(error_of(repeated("relu(", 10000) + "x" + repeated(")", 10000)),
             Catch::Contains("nested deeper than"));
  CHECK_THAT(error_of(repeated("-", 10000) + "x"), Catch::Contains("nested deeper than"));
  CHECK_THAT(error_of("x" + repeated(" ** x", 10000)), Catch::Contains("nested deeper than"));
  CHECK_THAT(error_of("x" + repeated(" + x", 5000)), Catch::Contains("nested deeper than"));
  // Past the size limit, nothing is parsed at all.
  CHECK_THAT(error_of(repeated("x", 70000)), Catch::Contains("longer than 65536"));
  CHECK_THAT(error_of(repeated("-", 100000) + "x"), Catch::Contains("longer than 65536"));
  CHECK(parsed(repeated("(", 50) + "x" + repeated(")", 50)).cuda() == "v_x");
  CHECK(parsed("x" + repeated(" + x", 100)).operations() == 100);
}
