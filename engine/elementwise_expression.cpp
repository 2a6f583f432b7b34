// A recursive-descent parser for the operation of an elementwise task, and its two writers.
// The grammar is Python's arithmetic, so that the torch expression means what the manifest
// says (-x ** 2 is -(x ** 2); comparisons do not chain here, they are an error):
//
//   expr    = sum [ ( "<" | ">" | "<=" | ">=" | "==" | "!=" ) sum ]
//   sum     = product { ( "+" | "-" ) product }
//   product = unary { ( "*" | "/" ) unary }
//   unary   = ( "-" | "+" ) unary | power
//   power   = primary [ "**" unary ]
//   primary = NUMBER | NAME | FUNCTION "(" expr { "," expr } ")" | "(" expr ")"
//
// A NAME is an input of the task; a comparison is 1.0 where it holds and 0.0 elsewhere, and
// where(c, x, y) picks x where c is not 0. Subexpressions that use no input are folded into
// one number (in double, then rounded once to float32) while parsing, so that torch never
// sees a function of a Python number (torch.exp(1.0) fails) and the flop count is what runs
// per element. The CUDA writer spells every function with float32 arithmetic and CUDA's
// precise functions (expf, erff, log1pf, expm1f, not __expf), propagating NaN as torch does;
// a function that reads its argument twice becomes an immediately called lambda, so the text
// stays one self-contained expression that any template can drop in.
//
// A manifest comes from outside (a user, `kernelskill import`), so the parser is bounded: a
// text longer than max_elementwise_bytes, or nested (parentheses, calls, unary operators,
// powers, or the tree a long chain of operators builds) deeper than max_elementwise_depth, is
// refused, so that neither parsing, writing nor freeing a tree can exhaust the stack.

#include "engine/elementwise_expression.hpp"

#include "config/spelling.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace ks::engine {

struct elementwise_expression::node {
  enum class kind { number, name, negate, binary, compare, call } k = kind::number;
  double value = 0; // number
  std::string text; // name, operator or function
  std::vector<std::shared_ptr<const node>> args;
  size_t at = 0;     // offset of the node in the source text
  int32_t depth = 1; // levels of the tree below and including this node
};

namespace {

using node = elementwise_expression::node;
using node_ptr = std::shared_ptr<const node>;

/// A problem found while parsing: where and what; thrown inside the parser only.
struct parse_problem {
  size_t at;
  std::string what;
};

/// One function of the language. `cuda` uses {0}, {1}, {2} for the arguments; a lambda's body
/// names them t, a and b. `torch` uses the same placeholders.
struct function_spec {
  std::string_view name;
  int arity;
  bool lambda; // cuda is the body of a lambda (the argument is read twice)
  std::string_view cuda;
  std::string_view torch;
  unsigned number_args; // bit i: torch takes argument i as a number, so it must be constant
  double (*fold)(const double* v);
};

constexpr double sqrt_2_over_pi = 0.79788456080286535588;
constexpr double selu_alpha = 1.6732632423543772848170429916717;
constexpr double selu_scale = 1.0507009873554804934193349852946;

double softplus_of(double t) {
  return t > 20.0 ? t : std::log1p(std::exp(t));
}

double clamp_of(double t, double lo, double hi) {
  return std::isnan(t) ? t : std::min(std::max(t, lo), hi);
}

// Sorted by name: elementwise_functions() lists them in this order.
const std::array<function_spec, 30> functions{{
    {"abs", 1, false, "fabsf({0})", "torch.abs({0})", 0,
     [](const double* v) { return std::fabs(v[0]); }},
    {"clamp", 3, true, "t != t ? t : fminf(fmaxf(t, a), b)", "torch.clamp({0}, {1}, {2})", 0,
     [](const double* v) { return clamp_of(v[0], v[1], v[2]); }},
    {"cos", 1, false, "cosf({0})", "torch.cos({0})", 0,
     [](const double* v) { return std::cos(v[0]); }},
    {"elu", 2, true, "t > 0.0f ? t : a * expm1f(t)", "torch.nn.functional.elu({0}, alpha={1})",
     0b10, [](const double* v) { return v[0] > 0 ? v[0] : v[1] * std::expm1(v[0]); }},
    {"erf", 1, false, "erff({0})", "torch.erf({0})", 0,
     [](const double* v) { return std::erf(v[0]); }},
    {"exp", 1, false, "expf({0})", "torch.exp({0})", 0,
     [](const double* v) { return std::exp(v[0]); }},
    {"gelu", 1, true, "0.5f * t * (1.0f + erff(t * 0.70710678f))", "torch.nn.functional.gelu({0})",
     0, [](const double* v) { return 0.5 * v[0] * (1.0 + std::erf(v[0] / std::sqrt(2.0))); }},
    {"gelu_tanh", 1, true, "0.5f * t * (1.0f + tanhf(0.79788456f * (t + 0.044715f * t * t * t)))",
     "torch.nn.functional.gelu({0}, approximate='tanh')", 0,
     [](const double* v) {
       return 0.5 * v[0] *
              (1.0 + std::tanh(sqrt_2_over_pi * (v[0] + 0.044715 * v[0] * v[0] * v[0])));
     }},
    {"hardsigmoid", 1, true, "t <= -3.0f ? 0.0f : (t >= 3.0f ? 1.0f : t / 6.0f + 0.5f)",
     "torch.nn.functional.hardsigmoid({0})", 0,
     [](const double* v) { return v[0] <= -3 ? 0.0 : (v[0] >= 3 ? 1.0 : v[0] / 6 + 0.5); }},
    {"hardswish", 1, true, "t <= -3.0f ? 0.0f : (t >= 3.0f ? t : t * (t + 3.0f) / 6.0f)",
     "torch.nn.functional.hardswish({0})", 0,
     [](const double* v) { return v[0] <= -3 ? 0.0 : (v[0] >= 3 ? v[0] : v[0] * (v[0] + 3) / 6); }},
    {"hardtanh", 3, true, "t != t ? t : fminf(fmaxf(t, a), b)",
     "torch.nn.functional.hardtanh({0}, min_val={1}, max_val={2})", 0b110,
     [](const double* v) { return clamp_of(v[0], v[1], v[2]); }},
    {"leaky_relu", 2, true, "t > 0.0f ? t : t * a",
     "torch.nn.functional.leaky_relu({0}, negative_slope={1})", 0b10,
     [](const double* v) { return v[0] > 0 ? v[0] : v[0] * v[1]; }},
    {"log", 1, false, "logf({0})", "torch.log({0})", 0,
     [](const double* v) { return std::log(v[0]); }},
    {"log1p", 1, false, "log1pf({0})", "torch.log1p({0})", 0,
     [](const double* v) { return std::log1p(v[0]); }},
    {"max", 2, true, "(t != t || a != a) ? t + a : fmaxf(t, a)", "torch.maximum({0}, {1})", 0,
     [](const double* v) {
       return std::isnan(v[0]) || std::isnan(v[1]) ? v[0] + v[1] : std::max(v[0], v[1]);
     }},
    {"min", 2, true, "(t != t || a != a) ? t + a : fminf(t, a)", "torch.minimum({0}, {1})", 0,
     [](const double* v) {
       return std::isnan(v[0]) || std::isnan(v[1]) ? v[0] + v[1] : std::min(v[0], v[1]);
     }},
    {"mish", 1, true, "t * tanhf(t > 20.0f ? t : log1pf(expf(t)))", "torch.nn.functional.mish({0})",
     0, [](const double* v) { return v[0] * std::tanh(softplus_of(v[0])); }},
    {"neg", 1, false, "(-{0})", "(-{0})", 0, [](const double* v) { return -v[0]; }},
    {"pow", 2, false, "powf({0}, {1})", "torch.pow({0}, {1})", 0,
     [](const double* v) { return std::pow(v[0], v[1]); }},
    {"relu", 1, true, "t < 0.0f ? 0.0f : t", "torch.relu({0})", 0,
     [](const double* v) { return v[0] < 0 ? 0.0 : v[0]; }},
    {"rsqrt", 1, false, "(1.0f / sqrtf({0}))", "torch.rsqrt({0})", 0,
     [](const double* v) { return 1.0 / std::sqrt(v[0]); }},
    {"selu", 1, true, "1.05070099f * (t > 0.0f ? t : 1.67326324f * expm1f(t))", "torch.selu({0})",
     0,
     [](const double* v) {
       return selu_scale * (v[0] > 0 ? v[0] : selu_alpha * std::expm1(v[0]));
     }},
    {"sigmoid", 1, false, "(1.0f / (1.0f + expf(-{0})))", "torch.sigmoid({0})", 0,
     [](const double* v) { return 1.0 / (1.0 + std::exp(-v[0])); }},
    {"sign", 1, true, "t > 0.0f ? 1.0f : (t < 0.0f ? -1.0f : t)", "torch.sign({0})", 0,
     [](const double* v) { return v[0] > 0 ? 1.0 : (v[0] < 0 ? -1.0 : v[0]); }},
    {"silu", 1, true, "t / (1.0f + expf(-t))", "torch.nn.functional.silu({0})", 0,
     [](const double* v) { return v[0] / (1.0 + std::exp(-v[0])); }},
    {"sin", 1, false, "sinf({0})", "torch.sin({0})", 0,
     [](const double* v) { return std::sin(v[0]); }},
    {"softplus", 1, true, "t > 20.0f ? t : log1pf(expf(t))", "torch.nn.functional.softplus({0})", 0,
     [](const double* v) { return softplus_of(v[0]); }},
    {"sqrt", 1, false, "sqrtf({0})", "torch.sqrt({0})", 0,
     [](const double* v) { return std::sqrt(v[0]); }},
    {"tanh", 1, false, "tanhf({0})", "torch.tanh({0})", 0,
     [](const double* v) { return std::tanh(v[0]); }},
    {"where", 3, false, "({0} != 0.0f ? {1} : {2})", "torch.where({0} != 0, {1}, {2})", 0,
     [](const double* v) { return v[0] != 0 ? v[1] : v[2]; }},
}};

const function_spec* find_function(std::string_view name) {
  for (const function_spec& f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

bool is_number(const node_ptr& n) {
  return n->k == node::kind::number;
}

/// Returns `pattern` with {0}, {1}, {2} replaced by `args`.
std::string substitute(std::string_view pattern, const std::vector<std::string>& args) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '{' && i + 2 < pattern.size() && pattern[i + 2] == '}' &&
        pattern[i + 1] >= '0' && pattern[i + 1] <= '2') {
      out += args.at(static_cast<size_t>(pattern[i + 1] - '0'));
      i += 2;
      continue;
    }
    out += pattern[i];
  }
  return out;
}

/// Returns the shortest text that reads back as `value`, with a '.' or an exponent.
template <class Real>
std::string shortest(Real value) {
  std::array<char, 64> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string text(buffer.data(), ec == std::errc{} ? end : buffer.data());
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

std::string cuda_number(double value) {
  auto single = static_cast<float>(value);
  std::string text = std::isinf(single) ? "INFINITY" : shortest(std::fabs(single)) + "f";
  return std::signbit(single) ? "(-" + text + ")" : text;
}

std::string python_number(double value) {
  std::string text = std::isinf(value) ? "float('inf')" : shortest(std::fabs(value));
  return std::signbit(value) ? "(-" + text + ")" : text;
}

std::string too_deep() {
  return "the operation is nested deeper than " + std::to_string(max_elementwise_depth) + " levels";
}

class parser {
public:
  parser(std::string_view text, const std::vector<std::string>& inputs)
    : text_(text), inputs_(inputs) {}

  node_ptr parse() {
    if (text_.size() > max_elementwise_bytes)
      throw parse_problem{0, "the operation is longer than " +
                                 std::to_string(max_elementwise_bytes) + " characters"};
    node_ptr root = comparison();
    skip_blanks();
    if (pos_ != text_.size())
      throw parse_problem{pos_, "unexpected '" + std::string(1, text_[pos_]) + "'"};
    return root;
  }

private:
  void skip_blanks() {
    // Spaces and tabs only: the expression is one line wherever it is written out.
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t'))
      ++pos_;
  }

  bool accept(std::string_view token) {
    skip_blanks();
    if (text_.substr(pos_, token.size()) != token)
      return false;
    pos_ += token.size();
    return true;
  }

  /// Accepts `op` only when `unless` does not start here ("*" but not "**", "<" but not "<=").
  bool accept_single(char op, char unless) {
    skip_blanks();
    if (pos_ >= text_.size() || text_[pos_] != op)
      return false;
    if (pos_ + 1 < text_.size() && text_[pos_ + 1] == unless)
      return false;
    ++pos_;
    return true;
  }

  static node_ptr number(double value, size_t at) {
    auto n = std::make_shared<node>();
    n->k = node::kind::number;
    n->value = value;
    n->at = at;
    return n;
  }

  /// Returns `n`, or the number it evaluates to when every argument is a number.
  static node_ptr folded(std::shared_ptr<node> n, const function_spec* f) {
    if (!std::all_of(n->args.begin(), n->args.end(), is_number))
      return n;
    std::array<double, 3> v{};
    for (size_t i = 0; i < n->args.size(); ++i)
      v[i] = n->args[i]->value;
    double value = 0;
    switch (n->k) {
    case node::kind::negate:
      value = -v[0];
      break;
    case node::kind::binary:
      value = n->text == "+"   ? v[0] + v[1]
              : n->text == "-" ? v[0] - v[1]
              : n->text == "*" ? v[0] * v[1]
              : n->text == "/" ? v[0] / v[1]
                               : std::pow(v[0], v[1]);
      break;
    case node::kind::compare:
      value = (n->text == "<"    ? v[0] < v[1]
               : n->text == ">"  ? v[0] > v[1]
               : n->text == "<=" ? v[0] <= v[1]
               : n->text == ">=" ? v[0] >= v[1]
               : n->text == "==" ? v[0] == v[1]
                                 : v[0] != v[1])
                  ? 1.0
                  : 0.0;
      break;
    case node::kind::call:
      value = f->fold(v.data());
      break;
    default:
      return n;
    }
    // An infinity is a number torch computes with too (a mask's -inf); NaN is a mistake.
    if (std::isnan(value))
      throw parse_problem{n->at, "'" + std::string(text_of(n)) + "' uses no input and is NaN"};
    return number(value, n->at);
  }

  static std::string_view text_of(const std::shared_ptr<node>& n) {
    return n->k == node::kind::negate ? std::string_view("-") : std::string_view(n->text);
  }

  static node_ptr operation(node::kind k, std::string op, std::vector<node_ptr> args, size_t at,
                            const function_spec* f = nullptr) {
    auto n = std::make_shared<node>();
    n->k = k;
    n->text = std::move(op);
    n->args = std::move(args);
    n->at = at;
    for (const node_ptr& a : n->args)
      n->depth = std::max(n->depth, a->depth + 1);
    if (n->depth > max_elementwise_depth)
      throw parse_problem{at, too_deep()};
    return folded(std::move(n), f);
  }

  node_ptr comparison() {
    node_ptr left = sum();
    for (std::string_view op : {"<=", ">=", "==", "!=", "<", ">"}) {
      skip_blanks();
      size_t at = pos_;
      if (!accept(op))
        continue;
      node_ptr right = sum();
      skip_blanks();
      for (std::string_view again : {"<", ">", "==", "!="})
        if (text_.substr(pos_, again.size()) == again)
          throw parse_problem{pos_, "comparisons do not chain: write (a < b) * (b < c)"};
      return operation(node::kind::compare, std::string(op), {left, right}, at);
    }
    skip_blanks();
    if (pos_ < text_.size() && text_[pos_] == '=')
      throw parse_problem{pos_, "'=' is not an operator: compare with '=='"};
    return left;
  }

  node_ptr sum() {
    node_ptr left = product();
    for (;;) {
      skip_blanks();
      size_t at = pos_;
      if (accept("+"))
        left = operation(node::kind::binary, "+", {left, product()}, at);
      else if (accept("-"))
        left = operation(node::kind::binary, "-", {left, product()}, at);
      else
        return left;
    }
  }

  node_ptr product() {
    node_ptr left = unary();
    for (;;) {
      skip_blanks();
      size_t at = pos_;
      if (accept_single('*', '*'))
        left = operation(node::kind::binary, "*", {left, unary()}, at);
      else if (accept("/"))
        left = operation(node::kind::binary, "/", {left, unary()}, at);
      else
        return left;
    }
  }

  // Every cycle of the recursion (a parenthesis, a call, a unary operator, a power) passes
  // through here, so this one counter bounds the parser's stack.
  node_ptr unary() {
    skip_blanks();
    size_t at = pos_;
    if (++nesting_ > max_elementwise_depth)
      throw parse_problem{at, too_deep()};
    node_ptr n;
    if (accept("-"))
      n = operation(node::kind::negate, "-", {unary()}, at);
    else if (accept("+"))
      n = unary();
    else
      n = power();
    --nesting_;
    return n;
  }

  node_ptr power() {
    node_ptr base = primary();
    skip_blanks();
    size_t at = pos_;
    if (accept("**"))
      return operation(node::kind::binary, "**", {base, unary()}, at);
    return base;
  }

  node_ptr primary() {
    skip_blanks();
    size_t at = pos_;
    if (pos_ >= text_.size())
      throw parse_problem{pos_, "the expression ends where a number, an input or '(' should be"};
    char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.')
      return number_literal();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_')
      return name_or_call();
    if (accept("(")) {
      node_ptr inner = comparison();
      if (!accept(")"))
        throw parse_problem{pos_, "missing ')' for the '(' at offset " + std::to_string(at)};
      return inner;
    }
    throw parse_problem{pos_, "unexpected '" + std::string(1, c) +
                                  "' where a number, an input or '(' should be"};
  }

  node_ptr number_literal() {
    size_t at = pos_;
    size_t end = pos_;
    while (end < text_.size() &&
           (std::isdigit(static_cast<unsigned char>(text_[end])) || text_[end] == '.'))
      ++end;
    if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
      size_t exponent = end + 1;
      if (exponent < text_.size() && (text_[exponent] == '+' || text_[exponent] == '-'))
        ++exponent;
      if (exponent < text_.size() && std::isdigit(static_cast<unsigned char>(text_[exponent]))) {
        end = exponent;
        while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end])))
          ++end;
      }
    }
    double value = 0;
    std::string_view token = text_.substr(at, end - at);
    auto [stop, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc{} || stop != token.data() + token.size())
      throw parse_problem{at, "'" + std::string(token) + "' is not a number"};
    if (!std::isfinite(static_cast<float>(value)))
      throw parse_problem{at, "'" + std::string(token) + "' does not fit a float32"};
    pos_ = end;
    return number(value, at);
  }

  node_ptr name_or_call() {
    size_t at = pos_;
    size_t end = pos_;
    while (end < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
      ++end;
    std::string name(text_.substr(at, end - at));
    pos_ = end;
    skip_blanks();
    bool called = pos_ < text_.size() && text_[pos_] == '(';
    if (called)
      return call(name, at);
    bool input = std::find(inputs_.begin(), inputs_.end(), name) != inputs_.end();
    if (!input && name == "inf")
      return number(std::numeric_limits<double>::infinity(), at);
    if (!input) {
      std::string what = "unknown name '" + name + "'";
      if (find_function(name) != nullptr)
        what = "'" + name + "' is a function: write " + name + "(...)";
      else if (auto guess = config::closest(
                   name, std::vector<std::string_view>(inputs_.begin(), inputs_.end())))
        what += " (did you mean '" + std::string(*guess) + "'?)";
      throw parse_problem{at, what + "; the inputs are " + input_list()};
    }
    auto n = std::make_shared<node>();
    n->k = node::kind::name;
    n->text = name;
    n->at = at;
    return n;
  }

  node_ptr call(const std::string& name, size_t at) {
    const function_spec* f = find_function(name);
    if (f == nullptr) {
      std::vector<std::string_view> known = elementwise_functions();
      std::string what = "unknown function '" + name + "'";
      if (auto guess = config::closest(name, known))
        what += " (did you mean '" + std::string(*guess) + "'?)";
      throw parse_problem{at, what + "; functions: " + config::joined(known)};
    }
    accept("(");
    std::vector<node_ptr> args;
    std::vector<size_t> arg_at;
    if (!accept(")")) {
      do {
        skip_blanks();
        arg_at.push_back(pos_);
        args.push_back(comparison());
      } while (accept(","));
      if (!accept(")"))
        throw parse_problem{pos_, "missing ')' to close " + name + "("};
    }
    if (static_cast<int>(args.size()) != f->arity)
      throw parse_problem{at, name + " takes " + std::to_string(f->arity) + " argument" +
                                  (f->arity == 1 ? "" : "s") + ", got " +
                                  std::to_string(args.size())};
    for (size_t i = 0; i < args.size(); ++i)
      if ((f->number_args >> i & 1U) != 0 && !is_number(args[i]))
        throw parse_problem{arg_at[i], "argument " + std::to_string(i + 1) + " of " + name +
                                           " must be a number (torch takes it as one)"};
    // where() with a constant condition is one of its branches, inputs or not.
    if (name == "where" && is_number(args[0]))
      return args[0]->value != 0 ? args[1] : args[2];
    return operation(node::kind::call, name, std::move(args), at, f);
  }

  std::string input_list() const {
    std::string list;
    for (const std::string& name : inputs_)
      list += (list.empty() ? "" : ", ") + name;
    return list.empty() ? "(none)" : list;
  }

  std::string_view text_;
  const std::vector<std::string>& inputs_;
  size_t pos_ = 0;
  int32_t nesting_ = 0;
};

/// Writes a tree out in CUDA and torch, counting operations and the inputs used.
class writer {
public:
  std::string cuda(const node_ptr& n) {
    switch (n->k) {
    case node::kind::number:
      return cuda_number(n->value);
    case node::kind::name:
      note_use(n->text);
      return "v_" + n->text;
    case node::kind::negate:
      ++operations_;
      return "(-" + cuda(n->args[0]) + ")";
    case node::kind::binary: {
      ++operations_;
      std::string left = cuda(n->args[0]);
      std::string right = cuda(n->args[1]);
      // torch computes a square and a cube as products (its pow kernel special-cases them):
      // the same rounding, and no powf in a memory-bound loop.
      if (n->text == "**" && n->args[1]->k == node::kind::number &&
          (n->args[1]->value == 2.0 || n->args[1]->value == 3.0))
        return "[](float t) { return t * t" + std::string(n->args[1]->value == 3.0 ? " * t" : "") +
               "; }(" + left + ")";
      if (n->text == "**")
        return "powf(" + left + ", " + right + ")";
      return "(" + left + " " + n->text + " " + right + ")";
    }
    case node::kind::compare: {
      ++operations_;
      std::string left = cuda(n->args[0]);
      std::string right = cuda(n->args[1]);
      return "(" + left + " " + n->text + " " + right + " ? 1.0f : 0.0f)";
    }
    case node::kind::call: {
      ++operations_;
      const function_spec* f = find_function(n->text);
      std::vector<std::string> args;
      for (const node_ptr& a : n->args)
        args.push_back(cuda(a));
      if (!f->lambda)
        return substitute(f->cuda, args);
      static constexpr std::array<std::string_view, 3> parameters{"float t", "float t, float a",
                                                                  "float t, float a, float b"};
      std::string joined;
      for (const std::string& a : args)
        joined += (joined.empty() ? "" : ", ") + a;
      return "([](" + std::string(parameters.at(static_cast<size_t>(f->arity - 1))) +
             ") { return " + std::string(f->cuda) + "; }(" + joined + "))";
    }
    }
    return {};
  }

  std::string torch(const node_ptr& n) {
    switch (n->k) {
    case node::kind::number:
      return python_number(n->value);
    case node::kind::name:
      return n->text;
    case node::kind::negate:
      return "(-" + torch(n->args[0]) + ")";
    case node::kind::binary:
      return "(" + torch(n->args[0]) + " " + n->text + " " + torch(n->args[1]) + ")";
    case node::kind::compare:
      return "(" + torch(n->args[0]) + " " + n->text + " " + torch(n->args[1]) + ").float()";
    case node::kind::call:
      return torch_call(n);
    }
    return {};
  }

  int64_t operations() const noexcept { return operations_; }
  const std::vector<std::string>& used() const noexcept { return used_; }

private:
  void note_use(const std::string& name) {
    if (std::find(used_.begin(), used_.end(), name) == used_.end())
      used_.push_back(name);
  }

  /// Returns a constant as a 0-d float32 tensor on the inputs' device, for a torch function
  /// that takes only tensors there.
  std::string as_tensor(const node_ptr& n) {
    if (!is_number(n))
      return torch(n);
    return "torch.tensor(" + python_number(n->value) +
           ", dtype=torch.float32, device=" + used_.front() + ".device)";
  }

  std::string torch_call(const node_ptr& n) {
    const function_spec* f = find_function(n->text);
    const std::vector<node_ptr>& a = n->args;
    // torch.minimum and torch.maximum take tensors only; with a number, clamp says the same.
    if ((n->text == "min" || n->text == "max") && (is_number(a[0]) || is_number(a[1]))) {
      const node_ptr& tensor = is_number(a[0]) ? a[1] : a[0];
      const node_ptr& bound = is_number(a[0]) ? a[0] : a[1];
      return "torch.clamp(" + torch(tensor) + (n->text == "min" ? ", max=" : ", min=") +
             python_number(bound->value) + ")";
    }
    std::vector<std::string> args;
    bool mixed_clamp = n->text == "clamp" && !(is_number(a[1]) && is_number(a[2]));
    for (size_t i = 0; i < a.size(); ++i) {
      bool number_allowed = (f->number_args >> i & 1U) != 0 || n->text == "pow" ||
                            (n->text == "clamp" && i > 0 && !mixed_clamp);
      args.push_back(number_allowed ? torch(a[i]) : as_tensor(a[i]));
    }
    return substitute(f->torch, args);
  }

  int64_t operations_ = 0;
  std::vector<std::string> used_;
};

} // namespace

expected<elementwise_expression>
elementwise_expression::parse(std::string_view text, const std::vector<std::string>& inputs) {
  node_ptr root;
  try {
    root = parser(text, inputs).parse();
  } catch (const parse_problem& p) {
    return fail(errc::invalid_input, std::to_string(p.at) + ": " + p.what);
  }
  if (is_number(root))
    return fail(errc::invalid_input,
                "0: the operation uses no input; it is the number " + python_number(root->value));
  elementwise_expression result;
  writer w;
  result.cuda_ = w.cuda(root);
  result.operations_ = w.operations();
  result.used_ = w.used();
  result.torch_ = w.torch(root);
  result.root_ = std::move(root);
  return result;
}

std::vector<std::string_view> elementwise_functions() {
  std::vector<std::string_view> names;
  for (const function_spec& f : functions)
    names.push_back(f.name);
  return names;
}

} // namespace ks::engine
