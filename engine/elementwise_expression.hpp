#pragma once

// The operation of an elementwise task, written as an expression over its inputs
// ("x * sigmoid(x)", "where(a > b, a, b)", "gelu(x)"): parsed once when the manifest loads,
// then written out as CUDA (float32 arithmetic, precise functions) for templates and as a
// torch expression for the baselines. The grammar and the functions are in
// elementwise_expression.cpp and docs/tasks.md.

#include "engine/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// The longest operation text parse() accepts, in bytes.
inline constexpr size_t max_elementwise_bytes = 65536;

/// The deepest nesting parse() accepts: parentheses, calls, unary operators and powers, and the
/// depth of the tree a chain of operators builds.
inline constexpr int32_t max_elementwise_depth = 256;

/// A parsed elementwise operation; cheap to copy (the tree is shared and immutable).
class elementwise_expression {
public:
  /// Parses `text` over the tensors named `inputs`. Fails with errc::invalid_input whose message
  /// starts with the 0-based offset of the problem in `text`, then ": ", then what is wrong
  /// (a syntax error, an unknown name or function, a wrong number of arguments, an argument
  /// that torch needs as a number, an expression that uses no input, a text longer than
  /// max_elementwise_bytes or nested deeper than max_elementwise_depth).
  [[nodiscard]] static expected<elementwise_expression>
  parse(std::string_view text, const std::vector<std::string>& inputs);

  /// Returns the expression in CUDA: float32 arithmetic with precise functions (expf, erff,
  /// log1pf, ...), each input `n` read as the float `v_n`; self-contained (a function whose
  /// argument appears twice is an immediately called lambda).
  const std::string& cuda() const noexcept { return cuda_; }

  /// Returns the expression in torch over the input names (torch.nn.functional spelled out).
  const std::string& torch() const noexcept { return torch_; }

  /// Returns the inputs it uses, in order of first use.
  const std::vector<std::string>& inputs_used() const noexcept { return used_; }

  /// Returns its operators and function calls after folding constants: its flops per element.
  int64_t operations() const noexcept { return operations_; }

  struct node; // elementwise_expression.cpp

private:
  std::shared_ptr<const node> root_;
  std::string cuda_;
  std::string torch_;
  std::vector<std::string> used_;
  int64_t operations_ = 0;
};

/// Lists the functions an elementwise operation may call, sorted.
std::vector<std::string_view> elementwise_functions();

} // namespace ks::engine
