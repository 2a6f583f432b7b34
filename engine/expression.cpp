// A recursive-descent parser and an evaluator for the expressions of skill files. The
// language is deliberately small, so that a skill author can read every condition at a glance
// and a loader can check it before any task is seen:
//
//   expr    = and { "||" and }
//   and     = cmp { "&&" cmp }
//   cmp     = sum [ ( "<" | "<=" | ">" | ">=" | "==" | "!=" ) sum ]
//   sum     = prod { ( "+" | "-" ) prod }
//   prod    = unary { ( "*" | "/" | "%" ) unary }
//   unary   = ( "-" | "!" ) unary | primary
//   primary = INTEGER | REAL | 'STRING' | NAME | "true" | "false" | "(" expr ")"
//   NAME    = [A-Za-z_][A-Za-z0-9_]* { "." [A-Za-z_][A-Za-z0-9_]* }
//
// Integers stay integers (/ truncates, % needs integers); an operation with a real gives a
// real. Strings compare with strings only. A name missing from the facts makes its value
// unknown, and unknown spreads through arithmetic and comparisons; && and || follow Kleene's
// three-valued logic (no && unknown is no, yes || unknown is yes), so a precondition on a
// diagnosis that has not been made yet neither holds nor fails: the caller decides.
//
// Skills come from outside (a model's distillation, `skills import`), so both halves are
// total: a text longer than max_expression_bytes, or nested (parentheses, unary operators, or
// the tree a long chain of binary operators builds) deeper than max_expression_depth, is a
// syntax error; integer arithmetic that does not fit int64 (INT64_MIN / -1, a sum or product
// that overflows, -INT64_MIN) and a division by zero are evaluation errors. Nothing here
// recurses deeper than the limit, so neither parsing, evaluating nor freeing a tree can
// exhaust the stack.

#include "engine/expression.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <system_error>

namespace ks::engine {

struct expression::node {
  enum class kind { literal, name, unary, binary } k = kind::literal;
  fact_value value; // literal
  std::string name; // name
  std::string op;   // unary, binary
  std::shared_ptr<const node> left, right;
  int32_t depth = 1; // levels of the tree below and including this node
};

namespace {

using node = expression::node;
using node_ptr = std::shared_ptr<const node>;

struct syntax_error {
  size_t at;
  std::string what;
};

std::string too_deep() {
  return "the expression is nested deeper than " + std::to_string(max_expression_depth) + " levels";
}

class parser {
public:
  explicit parser(std::string_view text) : text_(text) {}

  node_ptr parse() {
    if (text_.size() > max_expression_bytes)
      throw syntax_error{0, "the expression is longer than " +
                                std::to_string(max_expression_bytes) + " characters"};
    node_ptr root = parse_or();
    skip_blanks();
    if (pos_ != text_.size())
      throw syntax_error{pos_, "unexpected '" + std::string(1, text_[pos_]) + "'"};
    return root;
  }

private:
  void skip_blanks() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }

  bool accept(std::string_view token) {
    skip_blanks();
    if (text_.substr(pos_, token.size()) != token)
      return false;
    pos_ += token.size();
    return true;
  }

  node_ptr binary(std::string op, node_ptr l, node_ptr r) const {
    auto n = std::make_shared<node>();
    n->k = node::kind::binary;
    n->op = std::move(op);
    n->depth = 1 + std::max(l->depth, r->depth);
    n->left = std::move(l);
    n->right = std::move(r);
    if (n->depth > max_expression_depth)
      throw syntax_error{pos_, too_deep()};
    return n;
  }

  node_ptr unary(std::string op, node_ptr operand) const {
    auto n = std::make_shared<node>();
    n->k = node::kind::unary;
    n->op = std::move(op);
    n->depth = 1 + operand->depth;
    n->left = std::move(operand);
    if (n->depth > max_expression_depth)
      throw syntax_error{pos_, too_deep()};
    return n;
  }

  node_ptr parse_or() {
    node_ptr left = parse_and();
    while (accept("||"))
      left = binary("||", left, parse_and());
    return left;
  }

  node_ptr parse_and() {
    node_ptr left = parse_cmp();
    while (accept("&&"))
      left = binary("&&", left, parse_cmp());
    return left;
  }

  node_ptr parse_cmp() {
    node_ptr left = parse_sum();
    for (std::string_view op : {"<=", ">=", "==", "!=", "<", ">"})
      if (accept(op))
        return binary(std::string(op), left, parse_sum());
    return left;
  }

  node_ptr parse_sum() {
    node_ptr left = parse_prod();
    for (;;) {
      if (accept("+"))
        left = binary("+", left, parse_prod());
      else if (accept("-"))
        left = binary("-", left, parse_prod());
      else
        return left;
    }
  }

  node_ptr parse_prod() {
    node_ptr left = parse_unary();
    for (;;) {
      skip_blanks();
      // "&&" and "||" are not products; a lone "&" or "|" is an error below.
      if (accept("*"))
        left = binary("*", left, parse_unary());
      else if (accept("/"))
        left = binary("/", left, parse_unary());
      else if (accept("%"))
        left = binary("%", left, parse_unary());
      else
        return left;
    }
  }

  // Every cycle of the recursion (a parenthesis, a unary operator) passes through here, so
  // this one counter bounds the parser's stack.
  node_ptr parse_unary() {
    if (++nesting_ > max_expression_depth)
      throw syntax_error{pos_, too_deep()};
    skip_blanks();
    node_ptr n;
    if (text_.substr(pos_, 2) != "!=" && accept("!"))
      n = unary("!", parse_unary());
    else if (accept("-"))
      n = unary("-", parse_unary());
    else
      n = parse_primary();
    --nesting_;
    return n;
  }

  node_ptr parse_primary() {
    skip_blanks();
    if (pos_ >= text_.size())
      throw syntax_error{pos_, "the expression ends where a value belongs"};
    char c = text_[pos_];
    if (c == '(') {
      size_t open = pos_++;
      node_ptr inner = parse_or();
      if (!accept(")"))
        throw syntax_error{open, "'(' is never closed"};
      return inner;
    }
    auto n = std::make_shared<node>();
    if (c == '\'') {
      size_t end = text_.find('\'', pos_ + 1);
      if (end == std::string_view::npos)
        throw syntax_error{pos_, "the string is never closed (')"};
      n->value = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
              ((text_[pos_] == '-' || text_[pos_] == '+') &&
               (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))))
        ++pos_;
      std::string_view digits = text_.substr(start, pos_ - start);
      int64_t integer = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), integer);
      if (ec == std::errc{} && end == digits.data() + digits.size()) {
        n->value = integer;
        return n;
      }
      double real = 0;
      auto [rend, rec] = std::from_chars(digits.data(), digits.data() + digits.size(), real);
      if (rec != std::errc{} || rend != digits.data() + digits.size())
        throw syntax_error{start, "'" + std::string(digits) + "' is not a number"};
      n->value = real;
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      for (;;) {
        if (pos_ >= text_.size() ||
            !(std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
          throw syntax_error{pos_, "a name part must start with a letter or '_'"};
        while (pos_ < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
          ++pos_;
        if (pos_ < text_.size() && text_[pos_] == '.') {
          ++pos_;
          continue;
        }
        break;
      }
      std::string name(text_.substr(start, pos_ - start));
      if (name == "true" || name == "false") {
        n->value = int64_t{name == "true" ? 1 : 0};
        return n;
      }
      n->k = node::kind::name;
      n->name = std::move(name);
      return n;
    }
    throw syntax_error{pos_, "unexpected '" + std::string(1, c) + "'"};
  }

  std::string_view text_;
  size_t pos_ = 0;
  int32_t nesting_ = 0;
};

void collect_names(const node& n, std::set<std::string>& out) {
  if (n.k == node::kind::name)
    out.insert(n.name);
  if (n.left)
    collect_names(*n.left, out);
  if (n.right)
    collect_names(*n.right, out);
}

struct type_error {
  std::string what;
};

bool is_number(const fact_value& v) {
  return !std::holds_alternative<std::string>(v);
}

double as_real(const fact_value& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return static_cast<double>(*i);
  return std::get<double>(v);
}

bool truthy(const fact_value& v) {
  if (const auto* s = std::get_if<std::string>(&v))
    return !s->empty();
  return as_real(v) != 0;
}

using maybe = std::optional<fact_value>;

maybe eval(const node& n, const fact_map& facts);

maybe logic(const node& n, const fact_map& facts) {
  maybe l = eval(*n.left, facts);
  bool is_and = n.op == "&&";
  // Kleene: a decided left side may settle the result whatever the right side is.
  if (l && truthy(*l) != is_and)
    return fact_value{int64_t{is_and ? 0 : 1}};
  maybe r = eval(*n.right, facts);
  if (r && truthy(*r) != is_and)
    return fact_value{int64_t{is_and ? 0 : 1}};
  if (!l || !r)
    return std::nullopt;
  return fact_value{int64_t{is_and ? 1 : 0}};
}

maybe compare(const std::string& op, const fact_value& a, const fact_value& b) {
  int order = 0;
  if (is_number(a) && is_number(b)) {
    double x = as_real(a);
    double y = as_real(b);
    if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) {
      int64_t i = std::get<int64_t>(a);
      int64_t j = std::get<int64_t>(b);
      order = i < j ? -1 : i > j ? 1 : 0;
    } else {
      order = x < y ? -1 : x > y ? 1 : 0;
    }
  } else if (!is_number(a) && !is_number(b)) {
    int c = std::get<std::string>(a).compare(std::get<std::string>(b));
    order = c < 0 ? -1 : c > 0 ? 1 : 0;
  } else {
    throw type_error{"'" + op + "' compares a string with a number"};
  }
  bool result = op == "<"    ? order < 0
                : op == "<=" ? order <= 0
                : op == ">"  ? order > 0
                : op == ">=" ? order >= 0
                : op == "==" ? order == 0
                             : order != 0;
  return fact_value{int64_t{result ? 1 : 0}};
}

maybe arithmetic(const std::string& op, const fact_value& a, const fact_value& b) {
  if (!is_number(a) || !is_number(b))
    throw type_error{"'" + op + "' needs numbers, not strings"};
  if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) {
    int64_t i = std::get<int64_t>(a);
    int64_t j = std::get<int64_t>(b);
    if ((op == "/" || op == "%") && j == 0)
      throw type_error{"division by zero"};
    int64_t out = 0;
    bool overflow = false;
    if (op == "+")
      overflow = __builtin_add_overflow(i, j, &out);
    else if (op == "-")
      overflow = __builtin_sub_overflow(i, j, &out);
    else if (op == "*")
      overflow = __builtin_mul_overflow(i, j, &out);
    else if (i == std::numeric_limits<int64_t>::min() && j == -1)
      overflow = true; // the one quotient (and remainder, on x86) that traps
    else
      out = op == "/" ? i / j : i % j;
    if (overflow)
      throw type_error{std::to_string(i) + " " + op + " " + std::to_string(j) +
                       " overflows a 64-bit integer"};
    return fact_value{out};
  }
  if (op == "%")
    throw type_error{"'%' needs integers"};
  double x = as_real(a);
  double y = as_real(b);
  if (op == "/" && y == 0)
    throw type_error{"division by zero"};
  double out = op == "+" ? x + y : op == "-" ? x - y : op == "*" ? x * y : x / y;
  return fact_value{out};
}

maybe eval(const node& n, const fact_map& facts) {
  switch (n.k) {
  case node::kind::literal:
    return n.value;
  case node::kind::name: {
    auto it = facts.find(n.name);
    if (it == facts.end())
      return std::nullopt;
    return it->second;
  }
  case node::kind::unary: {
    maybe v = eval(*n.left, facts);
    if (!v)
      return std::nullopt;
    if (n.op == "!")
      return fact_value{int64_t{truthy(*v) ? 0 : 1}};
    if (!is_number(*v))
      throw type_error{"'-' needs a number, not a string"};
    if (const auto* i = std::get_if<int64_t>(&*v)) {
      if (*i == std::numeric_limits<int64_t>::min())
        throw type_error{"-(" + std::to_string(*i) + ") overflows a 64-bit integer"};
      return fact_value{-*i};
    }
    return fact_value{-std::get<double>(*v)};
  }
  case node::kind::binary:
    break;
  }
  if (n.op == "&&" || n.op == "||")
    return logic(n, facts);
  maybe l = eval(*n.left, facts);
  maybe r = eval(*n.right, facts);
  if (!l || !r)
    return std::nullopt;
  if (n.op == "<" || n.op == "<=" || n.op == ">" || n.op == ">=" || n.op == "==" || n.op == "!=")
    return compare(n.op, *l, *r);
  return arithmetic(n.op, *l, *r);
}

} // namespace

expected<expression> expression::parse(std::string_view text) {
  try {
    expression e;
    e.text_ = std::string(text);
    e.root_ = parser(e.text_).parse();
    return e;
  } catch (const syntax_error& s) {
    return fail(errc::invalid_input, std::to_string(s.at) + ": " + s.what);
  }
}

std::vector<std::string> expression::names() const {
  std::set<std::string> out;
  if (root_)
    collect_names(*root_, out);
  return {out.begin(), out.end()};
}

expected<std::optional<fact_value>> expression::evaluate(const fact_map& facts) const {
  if (!root_)
    return fail(errc::internal, "an empty expression");
  try {
    return eval(*root_, facts);
  } catch (const type_error& t) {
    return fail(errc::invalid_input, "'" + text_ + "': " + t.what);
  }
}

expected<truth> expression::holds(const fact_map& facts) const {
  auto v = evaluate(facts);
  if (!v)
    return tl::unexpected(v.error());
  if (!*v)
    return truth::unknown;
  return truthy(**v) ? truth::yes : truth::no;
}

std::string to_text(const fact_value& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&v))
    return *s;
  char buffer[64];
  auto r = std::to_chars(buffer, buffer + sizeof buffer, std::get<double>(v));
  return std::string(buffer, r.ptr);
}

} // namespace ks::engine
