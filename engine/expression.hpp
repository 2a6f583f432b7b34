#pragma once

// The small expression language of skill files: a skill's preconditions ("task.cols % 4 ==
// 0", "diagnosis.fraction_of_roofline < 0.9") and its templates' constraints between
// parameters ("threads * items <= 4096"). See expression.cpp for the grammar.

#include "engine/error.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ks::engine {

/// The longest expression text parse() accepts, in bytes.
inline constexpr size_t max_expression_bytes = 65536;

/// The deepest nesting parse() accepts: parentheses and unary operators, and the depth of the
/// tree a chain of binary operators builds ("1 + 1 + ... + 1" with 256 terms is too deep).
inline constexpr int32_t max_expression_depth = 256;

/// Holds one value of an expression: an integer, a real or a string. Booleans are the
/// integers 0 and 1.
using fact_value = std::variant<int64_t, double, std::string>;

/// Maps the names an expression may use ("threads", "task.cols") to their values.
using fact_map = std::map<std::string, fact_value>;

/// Says what evaluating an expression concluded.
enum class truth : int32_t {
  no = 0,
  yes = 1,
  unknown = 2, ///< it names a fact that is not known (a diagnosis not made yet)
};

/// A parsed expression; cheap to copy (the tree is shared and immutable).
class expression {
public:
  /// Parses `text`. On a syntax error, returns errc::invalid_input whose message starts with
  /// the 0-based offset of the offending character in `text`, then ": ", then what is wrong
  /// (so that a loader can turn it into FILE:LINE:COL). A text longer than
  /// max_expression_bytes or nested deeper than max_expression_depth is such an error.
  [[nodiscard]] static expected<expression> parse(std::string_view text);

  /// Returns the text it was parsed from.
  const std::string& text() const noexcept { return text_; }

  /// Returns every name it uses, sorted, without repeats.
  std::vector<std::string> names() const;

  /// Evaluates it as a condition over `facts`: yes or no; unknown when it needs a name that
  /// `facts` lacks. Returns errc::invalid_input for a type error (a string in arithmetic, a
  /// division by zero, integer arithmetic that overflows int64), naming the expression.
  [[nodiscard]] expected<truth> holds(const fact_map& facts) const;

  /// Evaluates it to a value over `facts`; nullopt when it needs a missing name.
  [[nodiscard]] expected<std::optional<fact_value>> evaluate(const fact_map& facts) const;

  struct node; // expression.cpp

private:
  std::string text_;
  std::shared_ptr<const node> root_;
};

/// Returns `v` as text: integers in decimal, reals in their shortest round-trip form, strings
/// as they are.
std::string to_text(const fact_value& v);

} // namespace ks::engine
