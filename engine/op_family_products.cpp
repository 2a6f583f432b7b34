// The product families: matvec (y = A @ x) and matmul (C = A @ B, batched or not). Their
// sizes come from the shapes; the params m, n, k and batch are optional and, when given, must
// agree with them (a manifest that says what it means is checked, not trusted). A transposed
// operand is stored transposed: A [k, m] for transpose_a, B [n, k] for transpose_b; the
// leading dimensions are those of the storage. A batched matmul may share one operand across
// the batch (a rank-2 A or B next to a rank-3 other), as torch.matmul broadcasts it: its batch
// stride is 0; except that an A of rank >= 3 (not transposed) times a rank-2 B is one product
// with A's leading dims folded into m. A matmul may scale its product (alpha) and keep only one
// triangle of it, the other being 0 (torch.triu or torch.tril of the product).

#include "engine/op_family_reader.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace ks::engine::family_detail {

namespace {

/// Reports param `name` when the manifest gives it and it differs from `actual`.
void check_size(family_reader& r, std::string_view name, const std::optional<int64_t>& given,
                int64_t actual, const std::string& from) {
  if (given && *given != actual)
    r.at_param(name, "params." + std::string(name) + " is " + std::to_string(*given) + ", but " +
                         from + " gives " + std::to_string(actual));
}

/// Returns integer param `name` when the manifest gives it; nullopt when it does not (or it is
/// not an integer, which is reported).
std::optional<int64_t> optional_integer(family_reader& r, std::string_view name) {
  return r.has(name) ? r.integer(name, std::nullopt) : std::nullopt;
}

constexpr std::array<std::string_view, 2> triangles{"lower", "upper"};

} // namespace

void analyze_matvec(family_reader& r) {
  std::optional<int64_t> m_given = optional_integer(r, "m");
  std::optional<int64_t> k_given = optional_integer(r, "k");
  bool transpose_a = r.flag("transpose_a", false);
  if (!r.counts(2, 2, 1, "the matrix A and the vector x"))
    return;
  r.require_type(role::input, 0, dtype::f32);
  r.require_type(role::output, 0, dtype::f32);
  const tensor_spec& a = r.tensor(role::input, 0);
  const tensor_spec& x = r.tensor(role::input, 1);
  if (a.shape.size() != 2) {
    r.at_shape(role::input, 0,
               "inputs[0] ('" + a.name + "') has shape " + shape_text(a.shape) +
                   ", but a matvec's matrix is 2-d: [m, k], or [k, m] with transpose_a");
    return;
  }
  int64_t m = transpose_a ? a.shape[1] : a.shape[0];
  int64_t k = transpose_a ? a.shape[0] : a.shape[1];
  if (x.shape != std::vector<int64_t>{k} && x.shape != std::vector<int64_t>{k, 1}) {
    r.at_shape(role::input, 1,
               "inputs[1] ('" + x.name + "') has shape " + shape_text(x.shape) +
                   ", but the vector of A " + shape_text(a.shape) +
                   (transpose_a ? " (transposed)" : "") + " is [" + std::to_string(k) + "] or [" +
                   std::to_string(k) + ", 1]");
    return;
  }
  std::vector<int64_t> y_shape =
      x.shape.size() == 1 ? std::vector<int64_t>{m} : std::vector<int64_t>{m, 1};
  if (!r.require_shape(role::output, 0, y_shape,
                       "A " + shape_text(a.shape) + " @ x " + shape_text(x.shape)))
    return;
  std::string from = "A " + shape_text(a.shape) + (transpose_a ? " (transposed)" : "");
  check_size(r, "m", m_given, m, from);
  check_size(r, "k", k_given, k, from);
  r.set("m", m);
  r.set("k", k);
  r.set("transpose_a", transpose_a);
  r.set("lda", a.shape[1]);
  r.set("batch", int64_t{1});
  set_cost(r, 2.0 * static_cast<double>(m) * static_cast<double>(k));
  r.out().torch = "torch.matmul(" + a.name + (transpose_a ? ".mT" : "") + ", " + x.name + ")";
}

namespace {

/// A matmul's operands read: its sizes, its batch and how each operand is laid out.
struct product_shape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool a_batched = false, b_batched = false;
  bool folded = false; ///< A of rank >= 3 times a matrix: A's leading dims fold into m
  std::vector<int64_t> c_shape;
  std::string a_text, b_text; ///< "A [64, 32] (transposed)", for messages
  bool batched() const { return a_batched || b_batched; }
};

/// Returns extent `from_end` places from the end of `s` (1: the last).
int64_t from_end(const std::vector<int64_t>& s, size_t places) {
  return s[s.size() - places];
}

/// Checks the operands' ranks, their k and their batches, and sizes C; nullopt after
/// reporting what does not fit.
std::optional<product_shape> read_product(family_reader& r, bool transpose_a, bool transpose_b) {
  const tensor_spec& a = r.tensor(role::input, 0);
  const tensor_spec& b = r.tensor(role::input, 1);
  product_shape p;
  // An A of rank >= 3 times a matrix B is one product of A's rows, all leading dims folded
  // into m (torch.matmul's result is the same): it needs A's rows to be rows, not transposed.
  p.folded = a.shape.size() >= 3 && b.shape.size() == 2 && !transpose_a;
  bool ranks_ok = true;
  for (size_t i = 0; i < 2; ++i) {
    const tensor_spec& t = r.tensor(role::input, i);
    if ((t.shape.size() != 2 && t.shape.size() != 3) && !(p.folded && i == 0)) {
      r.at_shape(role::input, i,
                 "inputs[" + std::to_string(i) + "] ('" + t.name + "') has shape " +
                     shape_text(t.shape) + ", but a matmul operand is [rows, cols] " +
                     "or [batch, rows, cols] (an A of higher rank times a matrix B, not " +
                     "transposed, folds its leading dims into its rows)");
      ranks_ok = false;
    }
  }
  if (!ranks_ok)
    return std::nullopt;
  p.m = p.folded ? product(std::span<const int64_t>(a.shape).first(a.shape.size() - 1))
                 : from_end(a.shape, transpose_a ? 1 : 2);
  p.k = from_end(a.shape, transpose_a ? 2 : 1);
  int64_t k_of_b = from_end(b.shape, transpose_b ? 1 : 2);
  p.n = from_end(b.shape, transpose_b ? 2 : 1);
  p.a_text = "A " + shape_text(a.shape) + (transpose_a ? " (transposed)" : "");
  p.b_text = "B " + shape_text(b.shape) + (transpose_b ? " (transposed)" : "");
  if (k_of_b != p.k) {
    r.at_shape(role::input, 1,
               "inputs[1] ('" + b.name + "'): " + p.b_text + " has k = " + std::to_string(k_of_b) +
                   ", but " + p.a_text + " has k = " + std::to_string(p.k));
    return std::nullopt;
  }
  p.a_batched = a.shape.size() == 3 && !p.folded;
  p.b_batched = b.shape.size() == 3;
  if (p.a_batched && p.b_batched && a.shape[0] != b.shape[0]) {
    r.at_shape(role::input, 1,
               "inputs[1] ('" + b.name + "') has a batch of " + std::to_string(b.shape[0]) +
                   ", but A has " + std::to_string(a.shape[0]));
    return std::nullopt;
  }
  p.batch = p.a_batched ? a.shape[0] : p.b_batched ? b.shape[0] : 1;
  p.c_shape =
      p.batched() ? std::vector<int64_t>{p.batch, p.m, p.n} : std::vector<int64_t>{p.m, p.n};
  if (p.folded) {
    p.c_shape.assign(a.shape.begin(), a.shape.end() - 1);
    p.c_shape.push_back(p.n);
  }
  return p;
}

/// Checks params.m, n, k and batch (each optional) against the operands.
void check_given_sizes(family_reader& r, const product_shape& p,
                       const std::optional<int64_t>& m_given, const std::optional<int64_t>& n_given,
                       const std::optional<int64_t>& k_given,
                       const std::optional<int64_t>& batch_given) {
  check_size(r, "m", m_given, p.m, p.a_text + (p.folded ? " (its leading dims folded)" : ""));
  check_size(r, "k", k_given, p.k, p.a_text);
  check_size(r, "n", n_given, p.n, p.b_text);
  if (batch_given && !p.batched())
    r.at_param("batch", std::string("params.batch is given, but ") +
                            (p.folded ? "A's leading dims fold into m: one product"
                                      : "neither A nor B has a batch dim (rank 3)"));
  else
    check_size(r, "batch", batch_given, p.batch, "the operands");
}

/// Sets the facts templates read (docs/tasks.md's matmul table).
void set_product_facts(family_reader& r, const product_shape& p, bool transpose_a, bool transpose_b,
                       double alpha, const std::optional<std::string>& triangle) {
  r.set("m", p.m);
  r.set("n", p.n);
  r.set("k", p.k);
  r.set("batch", p.batch);
  r.set("batched", p.batched());
  r.set("folded", p.folded);
  r.set("transpose_a", transpose_a);
  r.set("transpose_b", transpose_b);
  r.set("lda", p.folded ? p.k : from_end(r.tensor(role::input, 0).shape, 1));
  r.set("ldb", from_end(r.tensor(role::input, 1).shape, 1));
  r.set("ldc", p.n);
  r.set("batch_stride_a", p.a_batched ? p.m * p.k : int64_t{0});
  r.set("batch_stride_b", p.b_batched ? p.k * p.n : int64_t{0});
  r.set("batch_stride_c", p.m * p.n);
  r.set("alpha", alpha);
  r.set("triangle_upper", triangle == "upper");
  r.set("triangle_lower", triangle == "lower");
  r.set("triangular", triangle.has_value());
}

/// Returns the outputs of one m x n product that are kept: all, or those on the triangle's
/// side of the diagonal (row i keeps columns >= i, upper, or <= i, lower, within [0, n)).
double kept_outputs(int64_t m, int64_t n, const std::optional<std::string>& triangle) {
  if (!triangle)
    return static_cast<double>(m) * static_cast<double>(n);
  double kept = 0;
  for (int64_t i = 0; i < m; ++i)
    kept += static_cast<double>(triangle == "upper" ? std::max<int64_t>(n - i, 0)
                                                    : std::min<int64_t>(i + 1, n));
  return kept;
}

} // namespace

void analyze_matmul(family_reader& r) {
  std::optional<int64_t> m_given = optional_integer(r, "m");
  std::optional<int64_t> n_given = optional_integer(r, "n");
  std::optional<int64_t> k_given = optional_integer(r, "k");
  std::optional<int64_t> batch_given = optional_integer(r, "batch");
  bool transpose_a = r.flag("transpose_a", false);
  bool transpose_b = r.flag("transpose_b", false);
  std::optional<std::string> triangle =
      r.has("triangle") ? r.choice("triangle", triangles, std::nullopt) : std::nullopt;
  std::optional<double> alpha = r.real("alpha", 1.0);
  if (!r.counts(2, std::numeric_limits<size_t>::max(), 1, "A and B, then the epilogue's inputs"))
    return;
  r.require_type(role::input, 0, dtype::f32, 2);
  r.require_type(role::output, 0, dtype::f32);
  const std::optional<product_shape> p = read_product(r, transpose_a, transpose_b);
  if (!p || !r.require_shape(role::output, 0, p->c_shape, p->a_text + " @ " + p->b_text))
    return;
  check_given_sizes(r, *p, m_given, n_given, k_given, batch_given);
  if (!alpha || (r.has("triangle") && !triangle))
    return;
  // torch.triu of a [b, m0, n] result keeps a triangle of each [m0, n] matrix; the folded rows
  // would put it on the [b * m0, n] product instead.
  const tensor_spec& a = r.tensor(role::input, 0);
  if (triangle && p->folded &&
      product(std::span<const int64_t>(a.shape).first(a.shape.size() - 2)) > 1) {
    r.at_param("triangle", "params.triangle keeps a triangle of each matrix, but A " +
                               shape_text(a.shape) +
                               " folds its leading dims into the rows of one product: give A "
                               "and B a batch dim ([batch, rows, cols] each) instead");
    return;
  }
  std::string torch = "torch.matmul(" + a.name + (transpose_a ? ".mT" : "") + ", " +
                      r.tensor(role::input, 1).name + (transpose_b ? ".mT" : "") + ")";
  if (*alpha != 1.0)
    torch = torch + " * " + python_float(*alpha);
  if (triangle)
    torch = std::string(triangle == "upper" ? "torch.triu(" : "torch.tril(") + torch + ")";
  std::optional<epilogue_analysis> epilogue =
      analyze_epilogue(r, p->c_shape, 2, "A and B", triangle.has_value(), torch);
  if (!epilogue)
    return;
  set_product_facts(r, *p, transpose_a, transpose_b, *alpha, triangle);
  // 2 per multiply-add of every output kept, and one multiply per output for an alpha that is
  // not 1.
  set_cost(r, static_cast<double>(p->batch) * kept_outputs(p->m, p->n, triangle) *
                      (2.0 * static_cast<double>(p->k) + (*alpha != 1.0 ? 1.0 : 0.0)) +
                  epilogue->operations);
  r.out().torch = epilogue->torch;
}

} // namespace ks::engine::family_detail
