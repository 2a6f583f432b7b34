// The families that act along one dimension (or a run of adjacent ones): softmax, norm,
// reduce and scan. Each views its input as [outer, axis, inner] (docs/tasks.md), so a
// template never sees the rank: element (o, a, i) is at (o * axis + a) * inner + i. A dim is
// normalized as torch does (negative counts from the end) and must exist in the input.
//
// Every family reads all of its params before it looks at a tensor, so that a param it knows
// is never reported unknown because a tensor check returned early.

#include "engine/op_family_reader.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace ks::engine::family_detail {

namespace {

/// Returns the dims as torch writes them: "1", or "(1, 2)" for several.
std::string torch_dims(const axis_view& v) {
  if (v.first == v.last)
    return std::to_string(v.first);
  std::string text = "(";
  for (int64_t d = v.first; d <= v.last; ++d)
    text += (d == v.first ? "" : ", ") + std::to_string(d);
  return text + ")";
}

/// Returns the acted-on extents as a Python tuple: "(64,)", "(32, 64)".
std::string torch_extents(const axis_view& v, const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (int64_t d = v.first; d <= v.last; ++d)
    text += (d == v.first ? "" : ", ") + std::to_string(shape[static_cast<size_t>(d)]);
  return text + (v.first == v.last ? ",)" : ")");
}

/// Returns the shape an affine weight is reshaped to so that it broadcasts over x: the
/// acted-on extents in place, 1 elsewhere ("(1, 64, 1, 1)").
std::string torch_broadcast_view(const axis_view& v, const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (int64_t d = 0; d < v.rank; ++d)
    text += (d == 0 ? "" : ", ") +
            (d >= v.first && d <= v.last ? std::to_string(shape[static_cast<size_t>(d)]) : "1");
  return text + (v.rank == 1 ? ",)" : ")");
}

/// Param `dim` (one dim) or `dims` (adjacent dims) as a list, and which of the two was given.
struct dims_param {
  std::string_view name;
  std::optional<std::vector<int64_t>> dims;
};

/// Reads `dim` or `dims`, reporting both given or neither.
dims_param read_dims(family_reader& r) {
  bool has_dim = r.has("dim");
  bool has_dims = r.has("dims");
  dims_param out{has_dim ? "dim" : "dims", has_dim ? r.integers("dim", 1) : r.integers("dims", 8)};
  if (has_dim && has_dims)
    r.at_param("dims", "give params.dim or params.dims, not both");
  if (!has_dim && !has_dims)
    r.at_params("family " + r.subject().family +
                " needs param 'dim' (an integer) or 'dims' (adjacent dims, as [1, 2])");
  return out;
}

/// Sets task.dims: the acted-on dims, normalized and ascending.
void set_dims(family_reader& r, const axis_view& v) {
  std::vector<int64_t> normal;
  for (int64_t d = v.first; d <= v.last; ++d)
    normal.push_back(d);
  r.set("dims", normal);
}

/// Returns `shape` as a Python tuple: "(3, 1, 5)", "(4,)", "()".
std::string python_tuple(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// Checks the one input and one output of a family whose output has the input's shape.
bool same_shape_io(family_reader& r, const std::string& why) {
  if (!r.counts(1, 1, 1, "x"))
    return false;
  r.require_type(role::input, 0, dtype::f32);
  r.require_type(role::output, 0, dtype::f32);
  return r.require_shape(role::output, 0, r.tensor(role::input, 0).shape, why);
}

constexpr std::array<std::string_view, 2> softmax_ops{"log_softmax", "softmax"};
constexpr std::array<std::string_view, 4> norm_ops{"l1", "l2", "layer", "rms"};
constexpr std::array<std::string_view, 8> reduce_ops{"argmax", "argmin", "logsumexp", "max",
                                                     "mean",   "min",    "prod",      "sum"};
constexpr std::array<std::string_view, 2> scan_ops{"cumprod", "cumsum"};

} // namespace

std::optional<axis_view> view_of(family_reader& r, std::string_view name,
                                 const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& shape) {
  auto rank = static_cast<int64_t>(shape.size());
  if (rank == 0) {
    r.at_shape(role::input, 0,
               "family " + r.subject().family + " acts along a dimension: its input " +
                   "must have rank >= 1, not be a scalar");
    return std::nullopt;
  }
  std::vector<int64_t> normal;
  for (int64_t d : dims) {
    if (d < -rank || d >= rank) {
      r.at_param(name, "params." + std::string(name) + ": dim " + std::to_string(d) +
                           " is out of range for input '" + r.subject().inputs.front().name +
                           "' of rank " + std::to_string(rank) + " (" + std::to_string(-rank) +
                           " to " + std::to_string(rank - 1) + ")");
      return std::nullopt;
    }
    normal.push_back(d < 0 ? d + rank : d);
  }
  std::sort(normal.begin(), normal.end());
  for (size_t i = 1; i < normal.size(); ++i)
    if (normal[i] != normal[i - 1] + 1) {
      r.at_param(name, "params." + std::string(name) + " " + shape_text(dims) +
                           " must name adjacent dims (as [1, 2, 3]), once each");
      return std::nullopt;
    }
  axis_view v;
  v.rank = rank;
  v.first = normal.front();
  v.last = normal.back();
  std::span<const int64_t> all(shape);
  v.outer = product(all.subspan(0, static_cast<size_t>(v.first)));
  v.axis =
      product(all.subspan(static_cast<size_t>(v.first), static_cast<size_t>(v.last - v.first + 1)));
  v.inner = product(all.subspan(static_cast<size_t>(v.last + 1)));
  return v;
}

void set_view(family_reader& r, const axis_view& v) {
  r.set("outer", v.outer);
  r.set("axis", v.axis);
  r.set("inner", v.inner);
  r.set("axis_is_last", v.inner == 1);
  r.set("dim", v.first);
}

void analyze_softmax(family_reader& r) {
  std::optional<std::string> op = r.choice("op", softmax_ops, std::nullopt);
  std::optional<int64_t> dim = r.integer("dim", std::nullopt);
  bool shapes_ok = same_shape_io(r, "a softmax keeps its input's shape");
  if (!dim || r.subject().inputs.size() != 1)
    return;
  const tensor_spec& x = r.tensor(role::input, 0);
  std::optional<axis_view> v = view_of(r, "dim", {*dim}, x.shape);
  if (!op || !v || !shapes_ok)
    return;
  set_view(r, *v);
  r.set("op", *op);
  r.set_op_flags(softmax_ops, *op);
  // max, subtract, exp, add, divide (log_softmax: max, subtract, exp, add, subtract the log).
  set_cost(r, 5.0 * static_cast<double>(x.numel()));
  r.out().torch = "torch." + *op + "(" + x.name + ", dim=" + torch_dims(*v) + ")";
}

namespace {

/// The params of a norm as read.
struct norm_params {
  std::optional<std::string> op;
  dims_param dims;
  std::optional<double> eps;
  bool vector_norm = false; ///< l1 or l2: torch.nn.functional.normalize's
  bool affine = false, mean = false;
};

norm_params read_norm_params(family_reader& r) {
  norm_params p;
  p.op = r.choice("op", norm_ops, std::nullopt);
  p.dims = read_dims(r);
  p.vector_norm = p.op == "l1" || p.op == "l2";
  p.eps = r.real("eps", p.vector_norm ? 1e-12 : 1e-5);
  if (p.eps && *p.eps < 0)
    r.at_param("eps", "params.eps must be >= 0, got " + python_float(*p.eps));
  p.affine = r.flag("affine", false);
  if (p.affine && p.vector_norm) {
    r.at_param("affine",
               "an " + *p.op +
                   " norm has no affine weights (torch.nn.functional.normalize has none)");
    p.affine = false;
  }
  p.mean = r.flag("mean", false);
  if (r.has("mean") && p.op && *p.op != "l1") {
    r.at_param("mean", "params.mean is for op \"l1\" only (divide by the mean of |x|)");
    p.mean = false;
  }
  return p;
}

/// Returns the norm's torch expression over x and its `weights` affine inputs.
std::string norm_torch(family_reader& r, const norm_params& p, const axis_view& v, size_t weights) {
  const tensor_spec& x = r.tensor(role::input, 0);
  const std::string& X = x.name;
  const std::string& op = *p.op;
  std::string D = torch_dims(v);
  std::string E = python_float(*p.eps);
  std::string S = torch_extents(v, x.shape);
  std::string W = weights >= 1 ? r.tensor(role::input, 1).name : "";
  std::string B = weights >= 2 ? r.tensor(role::input, 2).name : "";
  if (p.vector_norm) {
    std::string norm_p = op == "l2" ? "2.0" : "1.0";
    if (v.first == v.last && !p.mean)
      return "torch.nn.functional.normalize(" + X + ", p=" + norm_p + ", dim=" + D + ", eps=" + E +
             ")";
    std::string norm = op == "l2"
                           ? "torch.linalg.vector_norm(" + X + ", dim=" + D + ", keepdim=True)"
                           : std::string(p.mean ? "torch.mean" : "torch.sum") + "(torch.abs(" + X +
                                 "), dim=" + D + ", keepdim=True)";
    // max(norm, 0) is the norm: no clamp to time when eps is 0 (a Frobenius norm).
    return X + " / " + (*p.eps > 0 ? "torch.clamp(" + norm + ", min=" + E + ")" : norm);
  }
  if (v.last == v.rank - 1) {
    // torch's fused kernels normalize trailing dims: the fair baseline.
    std::string weight = weights >= 1 ? ", weight=" + W + ".reshape(" + S + ")" : "";
    std::string bias = weights >= 2 ? ", bias=" + B + ".reshape(" + S + ")" : "";
    return op == "rms"
               ? "torch.nn.functional.rms_norm(" + X + ", " + S + weight + ", eps=" + E + ")"
               : "torch.nn.functional.layer_norm(" + X + ", " + S + weight + bias + ", eps=" + E +
                     ")";
  }
  std::string torch =
      op == "rms"
          ? X + " / torch.sqrt(torch.mean(" + X + " ** 2, dim=" + D + ", keepdim=True) + " + E + ")"
          : "(" + X + " - torch.mean(" + X + ", dim=" + D +
                ", keepdim=True)) / torch.sqrt(torch.var(" + X + ", dim=" + D +
                ", keepdim=True, unbiased=False) + " + E + ")";
  std::string view = torch_broadcast_view(v, x.shape);
  if (weights >= 1)
    torch = "(" + torch + ") * " + W + ".reshape" + view;
  if (weights >= 2)
    torch += " + " + B + ".reshape" + view;
  return torch;
}

} // namespace

void analyze_norm(family_reader& r) {
  const norm_params p = read_norm_params(r);
  if (!p.op)
    return;
  const std::string& op = *p.op;
  size_t weights = !p.affine ? 0 : op == "layer" ? 2 : 1;
  if (!r.counts(1 + weights, 1 + weights, 1,
                weights == 0   ? "x"
                : weights == 1 ? "x and its weight"
                               : "x, its weight and bias"))
    return;
  r.require_type(role::input, 0, dtype::f32);
  r.require_type(role::output, 0, dtype::f32);
  const tensor_spec& x = r.tensor(role::input, 0);
  bool shapes_ok = r.require_shape(role::output, 0, x.shape, "a norm keeps its input's shape");
  if (!p.dims.dims || !p.eps)
    return;
  std::optional<axis_view> v = view_of(r, p.dims.name, *p.dims.dims, x.shape);
  if (!v)
    return;
  std::vector<int64_t> acted(x.shape.begin() + v->first, x.shape.begin() + v->last + 1);
  for (size_t i = 1; i <= weights; ++i) {
    const tensor_spec& w = r.tensor(role::input, i);
    if (w.shape != std::vector<int64_t>{v->axis} && w.shape != acted) {
      r.at_shape(role::input, i,
                 "inputs[" + std::to_string(i) + "] ('" + w.name + "') has shape " +
                     shape_text(w.shape) + ", but an affine " + (i == 1 ? "weight" : "bias") +
                     " has shape [" + std::to_string(v->axis) + "]" +
                     (acted.size() > 1 ? " or " + shape_text(acted) : "") +
                     " (the normalized extents)");
      shapes_ok = false;
    }
  }
  if (!shapes_ok)
    return;
  set_view(r, *v);
  set_dims(r, *v);
  r.set("op", op);
  r.set_op_flags(norm_ops, op);
  r.set("eps", *p.eps);
  r.set("affine", p.affine);
  r.set("mean", p.mean);

  // Per element: rms squares and adds (2) and scales (1); layer adds for the mean (1),
  // subtracts, squares and adds for the variance (3), subtracts and scales (2); l2 squares and
  // adds (2) and divides (1); l1 takes |x| and adds (2) and divides (1); an affine weight
  // multiplies (1), a bias adds (1). Per normalized line: mean, + eps, sqrt (l2: sqrt, max;
  // l1: max, and with mean a divide).
  auto numel = static_cast<double>(x.numel());
  auto lines = static_cast<double>(v->outer * v->inner);
  double per_element = op == "layer" ? 6 : 3;
  double per_line = op == "l2" ? 2 : op == "l1" ? (p.mean ? 2 : 1) : 3;
  set_cost(r, (per_element + static_cast<double>(weights)) * numel + per_line * lines);
  r.out().torch = norm_torch(r, p, *v, weights);
}

void analyze_reduce(family_reader& r) {
  std::optional<std::string> op = r.choice("op", reduce_ops, std::nullopt);
  dims_param dims = read_dims(r);
  bool keepdim = r.flag("keepdim", false);
  std::optional<std::string> map = r.has("map") ? r.text("map") : std::nullopt;
  // Several maps ("a; b"): one pass, one output each (a triplet loss's two row sums of the
  // anchor's distances read it once).
  const size_t maps = map ? split_maps(*map).size() : 1;
  if (!r.counts(1, map ? std::numeric_limits<size_t>::max() : 1, maps,
                map ? "the operands of params.map" : "x"))
    return;
  if (maps > 1 && op && *op != "sum" && *op != "mean") {
    r.at_param("map", "params.map holds " + std::to_string(maps) +
                          " expressions (separated by ';'): that is for a sum or a mean, one "
                          "output each, not a " +
                          *op);
    return;
  }
  std::optional<acted_on> x = analyze_source(r, map);
  if (!dims.dims || !x)
    return;
  std::optional<axis_view> v = view_of(r, dims.name, *dims.dims, x->shape);
  if (!op || !v)
    return;
  bool index = *op == "argmax" || *op == "argmin";
  if (index && v->first != v->last) {
    r.at_param(dims.name, "an " + *op + " reduces one dim (torch." + *op + " takes one), not " +
                              shape_text(*dims.dims));
    return;
  }
  r.require_type(role::output, 0, index ? dtype::i64 : dtype::f32);
  std::vector<int64_t> shape(x->shape.begin(), x->shape.begin() + v->first);
  if (keepdim)
    shape.insert(shape.end(), static_cast<size_t>(v->last - v->first + 1), 1);
  shape.insert(shape.end(), x->shape.begin() + v->last + 1, x->shape.end());
  std::string over =
      v->first == v->last ? "dim " + std::to_string(v->first) : "dims " + torch_dims(*v);
  bool shapes_ok = true;
  for (size_t k = 0; k < maps; ++k)
    shapes_ok = r.require_shape(role::output, k, shape,
                                "a " + *op + " over " + over + " of " + shape_text(x->shape) +
                                    (keepdim ? " with keepdim" : " without keepdim")) &&
                shapes_ok;
  if (!shapes_ok)
    return;
  set_view(r, *v);
  set_dims(r, *v);
  r.set("op", *op);
  r.set_op_flags(reduce_ops, *op);
  r.set("keepdim", keepdim);
  // One add, multiply or comparison per input element; a mean divides once per output;
  // logsumexp compares, subtracts, exponentiates and adds per element (4), then takes the log
  // and adds the maximum back per output (2). A map's operations count per element.
  auto numel = static_cast<double>(product(x->shape));
  auto outputs = static_cast<double>(r.tensor(role::output, 0).numel());
  auto n_maps = static_cast<double>(maps);
  set_cost(r, x->operations * numel + (*op == "logsumexp"
                                           ? 4.0 * numel + 2.0 * outputs
                                           : n_maps * (numel + (*op == "mean" ? outputs : 0.0))));
  std::string function = *op == "max" ? "amax" : *op == "min" ? "amin" : *op;
  std::string K = keepdim ? ", keepdim=True" : "";
  if (*op == "prod" && v->first != v->last) {
    // torch.prod takes one dim: flatten the run of dims into one first.
    std::string F = std::to_string(v->first);
    r.out().torch = "torch.prod(" + x->torch + ".flatten(" + F + ", " + std::to_string(v->last) +
                    "), dim=" + F + K + ")" + (keepdim ? ".reshape" + python_tuple(shape) : "");
  } else if (maps > 1) {
    std::string tuple;
    for (const std::string& each : x->torch_each)
      tuple += (tuple.empty() ? "" : ", ") + std::string("torch.") + function + "(" + each +
               ", dim=" + torch_dims(*v) + K + ")";
    r.out().torch = "(" + tuple + ")";
  } else {
    r.out().torch = "torch." + function + "(" + x->torch + ", dim=" + torch_dims(*v) + K + ")";
  }
}

void analyze_scan(family_reader& r) {
  std::optional<std::string> op = r.choice("op", scan_ops, std::nullopt);
  std::optional<int64_t> dim = r.integer("dim", std::nullopt);
  bool reverse = r.flag("reverse", false);
  bool exclusive = r.flag("exclusive", false);
  std::optional<std::string> map = r.has("map") ? r.text("map") : std::nullopt;
  if (!r.counts(1, map ? std::numeric_limits<size_t>::max() : 1, 1,
                map ? "the operands of params.map" : "x"))
    return;
  if (map && split_maps(*map).size() > 1) {
    r.at_param("map", "a scan takes one expression in params.map (';' separates a reduce's)");
    return;
  }
  std::optional<acted_on> x = analyze_source(r, map);
  if (!x)
    return;
  r.require_type(role::output, 0, dtype::f32);
  bool shapes_ok = r.require_shape(role::output, 0, x->shape, "a scan keeps its input's shape");
  if (!dim || !shapes_ok)
    return;
  std::optional<axis_view> v = view_of(r, "dim", {*dim}, x->shape);
  if (!op || !v)
    return;
  set_view(r, *v);
  r.set("op", *op);
  r.set_op_flags(scan_ops, *op);
  r.set("reverse", reverse);
  r.set("exclusive", exclusive);
  // One add (or multiply) per element, and the map's operations.
  set_cost(r, (1.0 + x->operations) * static_cast<double>(product(x->shape)));

  std::string D = std::to_string(v->first);
  std::string source = reverse ? "torch.flip(" + x->torch + ", [" + D + "])" : x->torch;
  std::string torch = "torch." + *op + "(" + source + ", dim=" + D + ")";
  if (exclusive) {
    // Shift by one along dim: drop the last prefix, pad the identity in front. F.pad lists
    // pairs from the last dim backwards.
    std::string pad = "(";
    for (int64_t d = v->rank - 1; d > v->first; --d)
      pad += "0, 0, ";
    pad += "1, 0)";
    torch = "torch.nn.functional.pad(" + torch + ".narrow(" + D + ", 0, " +
            std::to_string(v->axis - 1) + "), " + pad +
            ", value=" + (*op == "cumsum" ? "0.0" : "1.0") + ")";
  }
  if (reverse)
    torch = "torch.flip(" + torch + ", [" + D + "])";
  r.out().torch = torch;
}

} // namespace ks::engine::family_detail
