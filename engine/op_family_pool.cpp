// The pool family: max or average pooling over the last one, two or three dims of an input
// [batch, channels, (depth, height,) width], with torch's parameters and torch's output size
// (pooling_output_shape: floor or ceil, a last window that starts in the padding dropped).
// A 1-d pool is a 3-d one of depth and height 1, a 2-d pool one of depth 1 (padding 0 where
// a dim is not pooled), so templates see one set of names whatever the dims.

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

/// One pooling parameter per pooled dim: (d, h, w), the dims a pool lacks being 1 (or 0 for
/// padding).
struct window {
  int64_t d = 1;
  int64_t h = 1;
  int64_t w = 1;
};

/// Returns param `name` as a window for a pool of `dims` dims: an integer means every dim;
/// `absent` fills the dims the pool lacks.
std::optional<window> window_of(family_reader& r, std::string_view name,
                                const std::optional<std::vector<int64_t>>& given, int64_t dims,
                                int64_t fallback, int64_t at_least, int64_t absent) {
  window out{absent, absent, fallback};
  if (dims >= 2)
    out.h = fallback;
  if (dims == 3)
    out.d = fallback;
  if (!given)
    return out;
  const std::vector<int64_t>& v = *given;
  if (v.size() != 1 && static_cast<int64_t>(v.size()) != dims) {
    r.at_param(name, "params." + std::string(name) + " of a " + std::to_string(dims) +
                         "-d pool is one integer" +
                         (dims == 1 ? "" : " or " + std::to_string(dims) + " of them") + ", got " +
                         shape_text(v));
    return std::nullopt;
  }
  for (int64_t x : v)
    if (x < at_least) {
      r.at_param(name, "params." + std::string(name) + " must be >= " + std::to_string(at_least) +
                           ", got " + (v.size() == 1 ? std::to_string(x) : shape_text(v)));
      return std::nullopt;
    }
  // The last `dims` of (d, h, w) are pooled: v names them in order.
  int64_t* pooled_dims[3] = {&out.d, &out.h, &out.w};
  for (int64_t i = 0; i < dims; ++i)
    *pooled_dims[3 - dims + i] = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
  return out;
}

/// Returns a window as torch's argument: "4" when its pooled dims agree, else "(4, 3)".
std::string torch_window(const window& p, int64_t dims) {
  std::vector<int64_t> pooled{p.d, p.h, p.w};
  pooled.erase(pooled.begin(), pooled.begin() + (3 - dims));
  if (std::all_of(pooled.begin(), pooled.end(), [&](int64_t x) { return x == pooled.front(); }))
    return std::to_string(pooled.front());
  std::string text = "(";
  for (size_t i = 0; i < pooled.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(pooled[i]);
  return text + ")";
}

} // namespace

namespace {

/// The params of a pool as read, before the tensor gives its dims.
struct pool_params {
  std::optional<std::string> op;
  bool dims_given = false;
  std::optional<int64_t> dims_read; ///< nullopt when not an integer (reported)
  bool kernel_given = false;
  std::optional<std::vector<int64_t>> kernel, stride, padding, dilation;
  bool ceil_mode = false, count_include_pad = true;
  bool ok = false; ///< no param broke a rule: the output can be sized
};

pool_params read_params(family_reader& r) {
  pool_params c;
  c.op = r.choice("op", pool_ops, std::nullopt);
  c.dims_given = r.has("dims");
  c.dims_read = r.integer("dims", 0);
  size_t problems_before = r.problems();
  c.kernel_given = r.has("kernel_size");
  c.kernel = r.integers("kernel_size", 3);
  c.stride = r.integers("stride", 3);
  c.padding = r.integers("padding", 3);
  bool dilation_given = r.has("dilation");
  c.dilation = r.integers("dilation", 3);
  c.ceil_mode = r.flag("ceil_mode", false);
  bool include_given = r.has("count_include_pad");
  c.count_include_pad = r.flag("count_include_pad", true);
  if (!c.kernel_given)
    r.at_params("family pool needs param 'kernel_size' (an integer, or one per pooled dim: [h, "
                "w] for a 2-d pool, [d, h, w] for a 3-d one)");
  if (c.op == "max" && include_given)
    r.at_param("count_include_pad", "params.count_include_pad is for avg pooling only");
  if (c.op == "avg" && dilation_given && c.dilation &&
      std::any_of(c.dilation->begin(), c.dilation->end(), [](int64_t d) { return d != 1; }))
    r.at_param("dilation", "avg pooling has no dilation (torch's avg_pool has none)");
  int64_t dims = c.dims_read.value_or(0);
  if (c.dims_given && c.dims_read && (dims < 1 || dims > 3))
    r.at_param("dims", "params.dims must be 1, 2 or 3, got " + std::to_string(dims));
  // A param that breaks a rule makes any output size a guess: the tensors are checked, not sized.
  c.ok = r.problems() == problems_before;
  return c;
}

/// Returns the pooled dims x's rank says (or params.dims), nullopt after reporting a rank that
/// does not fit.
std::optional<int64_t> pooled_dims(family_reader& r, const pool_params& c) {
  const tensor_spec& x = r.tensor(role::input, 0);
  auto rank = static_cast<int64_t>(x.shape.size());
  int64_t dims = c.dims_given && c.dims_read ? *c.dims_read : rank - 2;
  if (dims >= 1 && dims <= 3 && rank == dims + 2)
    return dims;
  static constexpr std::array<std::string_view, 3> layouts{"width", "height, width",
                                                           "depth, height, width"};
  r.at_shape(role::input, 0,
             "inputs[0] ('" + x.name + "') has shape " + shape_text(x.shape) + ", but a " +
                 (dims >= 1 && dims <= 3
                      ? std::to_string(dims) + "-d pool takes [batch, channels, " +
                            std::string(layouts[static_cast<size_t>(dims - 1)]) + "]"
                      : std::string("pool takes [batch, channels, (depth, height,) width]")));
  return std::nullopt;
}

/// A pool's windows and extents per dim.
struct pool_geometry {
  window kernel, stride, padding, dilation;
  window in{1, 1, 1}, out{1, 1, 1};
};

/// Spreads the params over the dims and sizes the output as torch does; nullopt after
/// reporting a param or a window that does not fit.
std::optional<pool_geometry> size_output(family_reader& r, const pool_params& c, int64_t dims) {
  std::optional<window> k = window_of(r, "kernel_size", c.kernel, dims, 1, 1, 1);
  if (!k)
    return std::nullopt;
  std::optional<window> s = window_of(r, "stride", c.stride ? c.stride : c.kernel, dims, 1, 1, 1);
  std::optional<window> p = window_of(r, "padding", c.padding, dims, 0, 0, 0);
  std::optional<window> d = window_of(r, "dilation", c.dilation, dims, 1, 1, 1);
  if (!s || !p || !d)
    return std::nullopt;
  if (p->d > k->d / 2 || p->h > k->h / 2 || p->w > k->w / 2) {
    r.at_param("padding", "params.padding " + torch_window(*p, dims) +
                              " must be at most half the kernel " + torch_window(*k, dims) +
                              " (torch's rule)");
    return std::nullopt;
  }
  const tensor_spec& x = r.tensor(role::input, 0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  pool_geometry g{*k, *s, *p, *d};
  g.in.d = dims == 3 ? x.shape[2] : 1;
  g.in.h = dims >= 2 ? x.shape[static_cast<size_t>(rank - 2)] : 1;
  g.in.w = x.shape.back();
  g.out.d = dims == 3 ? pooled(g.in.d, k->d, p->d, s->d, d->d, c.ceil_mode) : 1;
  g.out.h = dims >= 2 ? pooled(g.in.h, k->h, p->h, s->h, d->h, c.ceil_mode) : 1;
  g.out.w = pooled(g.in.w, k->w, p->w, s->w, d->w, c.ceil_mode);
  if (g.out.d >= 1 && g.out.h >= 1 && g.out.w >= 1)
    return g;
  r.at_param("kernel_size", "the window (kernel " + torch_window(*k, dims) + ", dilation " +
                                torch_window(*d, dims) + ", padding " + torch_window(*p, dims) +
                                ") does not fit input '" + x.name + "' " + shape_text(x.shape));
  return std::nullopt;
}

/// Sets the facts templates read (docs/tasks.md's pool table).
void set_facts(family_reader& r, const pool_params& c, int64_t dims, const pool_geometry& g) {
  const tensor_spec& x = r.tensor(role::input, 0);
  r.set("op", *c.op);
  r.set_op_flags(pool_ops, *c.op);
  r.set("dims", dims);
  r.set("batch", x.shape[0]);
  r.set("channels", x.shape[1]);
  const std::array<std::pair<std::string, const window*>, 6> named{{{"in", &g.in},
                                                                    {"out", &g.out},
                                                                    {"k", &g.kernel},
                                                                    {"s", &g.stride},
                                                                    {"p", &g.padding},
                                                                    {"d", &g.dilation}}};
  for (const auto& [prefix, w] : named) {
    r.set(prefix + "_d", w->d);
    r.set(prefix + "_h", w->h);
    r.set(prefix + "_w", w->w);
  }
  r.set("ceil_mode", c.ceil_mode);
  r.set("count_include_pad", *c.op == "avg" && c.count_include_pad);
}

/// Returns torch's call of the pool.
std::string torch_call(family_reader& r, const pool_params& c, int64_t dims,
                       const pool_geometry& g) {
  std::string torch =
      "torch.nn.functional." + *c.op + "_pool" + std::to_string(dims) + "d(" +
      r.tensor(role::input, 0).name + ", kernel_size=" + torch_window(g.kernel, dims) +
      ", stride=" + torch_window(g.stride, dims) + ", padding=" + torch_window(g.padding, dims);
  if (*c.op == "max")
    torch += ", dilation=" + torch_window(g.dilation, dims);
  if (c.ceil_mode)
    torch += ", ceil_mode=True";
  if (*c.op == "avg" && !c.count_include_pad)
    torch += ", count_include_pad=False";
  return torch + ")";
}

} // namespace

void analyze_pool(family_reader& r) {
  const pool_params c = read_params(r);
  if (!r.counts(1, 1, 1, "x"))
    return;
  r.require_type(role::input, 0, dtype::f32);
  r.require_type(role::output, 0, dtype::f32);
  const std::optional<int64_t> dims = pooled_dims(r, c);
  if (!dims || !c.op || !c.kernel_given || !c.kernel || (c.dims_given && !c.dims_read) || !c.ok)
    return;
  const std::optional<pool_geometry> g = size_output(r, c, *dims);
  if (!g)
    return;
  const tensor_spec& x = r.tensor(role::input, 0);
  std::vector<int64_t> shape{x.shape[0], x.shape[1]};
  if (*dims == 3)
    shape.push_back(g->out.d);
  if (*dims >= 2)
    shape.push_back(g->out.h);
  shape.push_back(g->out.w);
  if (!r.require_shape(role::output, 0, shape, "this " + *c.op + " pool of " + shape_text(x.shape)))
    return;
  set_facts(r, c, *dims, *g);
  // A comparison (max) or an add (avg) per window element, the window's padding included;
  // avg divides once per output.
  auto outputs = static_cast<double>(r.tensor(role::output, 0).numel());
  set_cost(r, outputs * static_cast<double>(g->kernel.d * g->kernel.h * g->kernel.w +
                                            (*c.op == "avg" ? 1 : 0)));
  r.out().torch = torch_call(r, c, *dims, *g);
}

} // namespace ks::engine::family_detail
