// The pool family: max or average pooling over the last one or two dims of an input
// [batch, channels, (height,) width], with torch's parameters and torch's output size
// (pooling_output_shape: floor or ceil, a last window that starts in the padding dropped).
// A 1-d pool is a 2-d one of height 1, so templates see one set of names either way.

#include "engine/op_family_reader.hpp"

#include <algorithm>
#include <array>

namespace ks::engine::family_detail {

namespace {

constexpr std::array<std::string_view, 2> pool_ops{"avg", "max"};

/// Returns floor(a / b) for b > 0.
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/// Returns torch's pooled size of `in`.
int64_t pooled(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
               bool ceil) {
  int64_t out =
      floor_div(in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil ? stride - 1 : 0), stride) + 1;
  if (ceil && (out - 1) * stride >= in + pad)
    --out; // the last window must start inside the input or its left padding
  return out;
}

/// One pooling parameter per pooled dim: (h, w), h being 1 (or 0 for padding) in 1-d.
struct pair {
  int64_t h = 1;
  int64_t w = 1;
};

/// Returns param `name` as a pair for a pool of `dims` dims: an integer means both dims.
std::optional<pair> pair_of(family_reader& r, std::string_view name,
                            const std::optional<std::vector<int64_t>>& given, int64_t dims,
                            int64_t fallback, int64_t at_least, int64_t one_d_h) {
  if (!given)
    return dims == 1 ? pair{one_d_h, fallback} : pair{fallback, fallback};
  const std::vector<int64_t>& v = *given;
  if (dims == 1 && v.size() != 1) {
    r.at_param(name, "params." + std::string(name) + " of a 1-d pool is one integer, got " +
                         shape_text(v));
    return std::nullopt;
  }
  for (int64_t x : v)
    if (x < at_least) {
      r.at_param(name, "params." + std::string(name) + " must be >= " + std::to_string(at_least) +
                           ", got " + (v.size() == 1 ? std::to_string(x) : shape_text(v)));
      return std::nullopt;
    }
  if (dims == 1)
    return pair{one_d_h, v[0]};
  return v.size() == 1 ? pair{v[0], v[0]} : pair{v[0], v[1]};
}

/// Returns a pair as torch's argument: "4" when both agree (or in 1-d), else "(4, 3)".
std::string torch_pair(const pair& p, int64_t dims) {
  if (dims == 1 || p.h == p.w)
    return std::to_string(p.w);
  return "(" + std::to_string(p.h) + ", " + std::to_string(p.w) + ")";
}

} // namespace

void analyze_pool(family_reader& r) {
  std::optional<std::string> op = r.choice("op", pool_ops, std::nullopt);
  bool dims_given = r.has("dims");
  std::optional<int64_t> dims_param = dims_given ? r.integer("dims", std::nullopt) : std::nullopt;
  size_t problems_before = r.problems();
  bool kernel_given = r.has("kernel_size");
  std::optional<std::vector<int64_t>> kernel = r.integers("kernel_size", 2);
  std::optional<std::vector<int64_t>> stride = r.integers("stride", 2);
  std::optional<std::vector<int64_t>> padding = r.integers("padding", 2);
  bool dilation_given = r.has("dilation");
  std::optional<std::vector<int64_t>> dilation = r.integers("dilation", 2);
  bool ceil_mode = r.flag("ceil_mode", false);
  bool include_given = r.has("count_include_pad");
  bool count_include_pad = r.flag("count_include_pad", true);
  if (!kernel_given)
    r.at_params("family pool needs param 'kernel_size' (an integer, or [h, w] for a 2-d pool)");
  if (op == "max" && include_given)
    r.at_param("count_include_pad", "params.count_include_pad is for avg pooling only");
  if (op == "avg" && dilation_given && dilation &&
      std::any_of(dilation->begin(), dilation->end(), [](int64_t d) { return d != 1; }))
    r.at_param("dilation", "avg pooling has no dilation (torch's avg_pool has none)");
  if (dims_param && *dims_param != 1 && *dims_param != 2)
    r.at_param("dims", "params.dims must be 1 or 2, got " + std::to_string(*dims_param));
  // A param that breaks a rule makes any output size a guess: the tensors are checked, not sized.
  bool params_ok = r.problems() == problems_before;
  if (!r.counts(1, 1, 1, "x"))
    return;
  r.require_type(role::input, 0, dtype::f32);
  r.require_type(role::output, 0, dtype::f32);
  const tensor_spec& x = r.tensor(role::input, 0);
  auto rank = static_cast<int64_t>(x.shape.size());
  int64_t dims = dims_param.value_or(rank - 2);
  if ((dims != 1 && dims != 2) || rank != dims + 2) {
    r.at_shape(role::input, 0,
               "inputs[0] ('" + x.name + "') has shape " + shape_text(x.shape) + ", but a " +
                   (dims == 1 || dims == 2 ? std::to_string(dims) + "-d " : "") +
                   "pool takes [batch, channels, " + (dims == 1 ? "" : "height, ") + "width]");
    return;
  }
  if (!op || !kernel_given || !kernel || (dims_given && !dims_param) || !params_ok)
    return;
  std::optional<pair> k = pair_of(r, "kernel_size", kernel, dims, 1, 1, 1);
  if (!k)
    return;
  std::optional<pair> s = pair_of(r, "stride", stride ? stride : kernel, dims, 1, 1, 1);
  std::optional<pair> p = pair_of(r, "padding", padding, dims, 0, 0, 0);
  std::optional<pair> d = pair_of(r, "dilation", dilation, dims, 1, 1, 1);
  if (!s || !p || !d)
    return;
  if (p->h > k->h / 2 || p->w > k->w / 2) {
    r.at_param("padding", "params.padding " + torch_pair(*p, dims) +
                              " must be at most half the kernel " + torch_pair(*k, dims) +
                              " (torch's rule)");
    return;
  }
  int64_t in_h = dims == 1 ? 1 : x.shape[2];
  int64_t in_w = x.shape.back();
  int64_t out_h = dims == 1 ? 1 : pooled(in_h, k->h, p->h, s->h, d->h, ceil_mode);
  int64_t out_w = pooled(in_w, k->w, p->w, s->w, d->w, ceil_mode);
  if (out_h < 1 || out_w < 1) {
    r.at_param("kernel_size", "the window (kernel " + torch_pair(*k, dims) + ", dilation " +
                                  torch_pair(*d, dims) + ", padding " + torch_pair(*p, dims) +
                                  ") does not fit input '" + x.name + "' " + shape_text(x.shape));
    return;
  }
  std::vector<int64_t> shape{x.shape[0], x.shape[1]};
  if (dims == 2)
    shape.push_back(out_h);
  shape.push_back(out_w);
  if (!r.require_shape(role::output, 0, shape, "this " + *op + " pool of " + shape_text(x.shape)))
    return;

  r.set("op", *op);
  r.set_op_flags(pool_ops, *op);
  r.set("dims", dims);
  r.set("batch", x.shape[0]);
  r.set("channels", x.shape[1]);
  r.set("in_h", in_h);
  r.set("in_w", in_w);
  r.set("out_h", out_h);
  r.set("out_w", out_w);
  r.set("k_h", k->h);
  r.set("k_w", k->w);
  r.set("s_h", s->h);
  r.set("s_w", s->w);
  r.set("p_h", p->h);
  r.set("p_w", p->w);
  r.set("d_h", d->h);
  r.set("d_w", d->w);
  r.set("ceil_mode", ceil_mode);
  r.set("count_include_pad", *op == "avg" && count_include_pad);
  // A comparison (max) or an add (avg) per window element, the window's padding included;
  // avg divides once per output.
  auto outputs = static_cast<double>(r.tensor(role::output, 0).numel());
  set_cost(r, outputs * static_cast<double>(k->h * k->w + (*op == "avg" ? 1 : 0)));

  std::string torch = "torch.nn.functional." + *op + "_pool" + std::to_string(dims) + "d(" +
                      x.name + ", kernel_size=" + torch_pair(*k, dims) +
                      ", stride=" + torch_pair(*s, dims) + ", padding=" + torch_pair(*p, dims);
  if (*op == "max")
    torch += ", dilation=" + torch_pair(*d, dims);
  if (ceil_mode)
    torch += ", ceil_mode=True";
  if (*op == "avg" && !count_include_pad)
    torch += ", count_include_pad=False";
  r.out().torch = torch + ")";
}

} // namespace ks::engine::family_detail
