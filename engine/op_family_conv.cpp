// The conv family: a 1-d, 2-d or 3-d convolution of an input x [batch, in_channels, (depth,)
// (height,) width], standard or transposed, with torch's params (stride, padding, dilation,
// output_padding for a transposed one, groups), its weight in torch's layout ([out_channels,
// in_channels / groups, kernel...], transposed [in_channels, out_channels / groups,
// kernel...]) and an optional bias [out_channels], so that an imported nn.Conv*d or
// nn.ConvTranspose*d maps onto it with no reshuffling. The output size is torch's. As for the
// pool family, a 1-d conv is a 3-d one of depth and height 1, a 2-d one of depth 1 (padding 0,
// stride and dilation 1 where a dim is not convolved), so templates see one set of names.

#include "engine/op_family_reader.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace ks::engine::family_detail {

namespace {

/// One value per convolved dim, in (d, h, w) order; the dims a conv lacks hold the neutral
/// value (1 for a size, a stride or a dilation, 0 for padding).
using per_dim = std::array<int64_t, 3>;

/// Returns floor(a / b) for b > 0.
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/// Returns param `name` as read: a list of 1 to 3 integers, each at least `at_least` (checked
/// here, before the tensors give the dims); nullopt when absent or wrong (reported).
std::optional<std::vector<int64_t>> read_list(family_reader& r, std::string_view name,
                                              int64_t at_least) {
  std::optional<std::vector<int64_t>> v = r.integers(name, 3);
  if (!v)
    return std::nullopt;
  for (int64_t x : *v)
    if (x < at_least) {
      r.at_param(name, "params." + std::string(name) + " must be >= " + std::to_string(at_least) +
                           ", got " + (v->size() == 1 ? std::to_string(x) : shape_text(*v)));
      return std::nullopt;
    }
  return v;
}

/// Returns `given` (one integer for every dim, or one per dim) spread over the last `dims` of
/// (d, h, w), `absent` elsewhere; `fallback` for every convolved dim when not given. nullopt
/// after reporting a list of the wrong length.
std::optional<per_dim> spread(family_reader& r, std::string_view name,
                              const std::optional<std::vector<int64_t>>& given, int64_t dims,
                              int64_t fallback, int64_t absent) {
  per_dim out{absent, absent, absent};
  for (int64_t i = 3 - dims; i < 3; ++i)
    out[static_cast<size_t>(i)] = fallback;
  if (!given)
    return out;
  const std::vector<int64_t>& v = *given;
  if (v.size() != 1 && static_cast<int64_t>(v.size()) != dims) {
    r.at_param(name, "params." + std::string(name) + " of a " + std::to_string(dims) +
                         "-d conv is one integer" +
                         (dims == 1 ? "" : " or " + std::to_string(dims) + " of them") + ", got " +
                         shape_text(v));
    return std::nullopt;
  }
  for (int64_t i = 0; i < dims; ++i)
    out[static_cast<size_t>(3 - dims + i)] = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
  return out;
}

/// Returns the convolved dims of `p` as torch's argument: "2" when they agree, else "(2, 1)".
std::string torch_value(const per_dim& p, int64_t dims) {
  std::vector<int64_t> v(p.begin() + (3 - dims), p.end());
  if (std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v.front(); }))
    return std::to_string(v.front());
  std::string text = "(";
  for (size_t i = 0; i < v.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(v[i]);
  return text + ")";
}

/// Returns "[C_out, 2, k_h, k_w]"-like text: a weight's layout with the known extents.
std::string weight_layout(const std::string& first, const std::string& second, int64_t dims) {
  static constexpr std::array<std::string_view, 3> kernel{"k_d", "k_h", "k_w"};
  std::string text = "[" + first + ", " + second;
  for (int64_t i = 3 - dims; i < 3; ++i)
    text += ", " + std::string(kernel[static_cast<size_t>(i)]);
  return text + "]";
}

} // namespace

namespace {

/// The params of a conv as read, before the tensors give its dims.
struct conv_params {
  bool transposed = false;
  std::optional<std::vector<int64_t>> stride, padding, dilation, output_padding;
  int64_t groups = 0; ///< 0 when not an integer or below 1 (reported)
  bool ok = false;    ///< no param broke a rule: the output can be sized
};

/// Reads and checks the params that do not depend on the tensors.
conv_params read_params(family_reader& r) {
  conv_params c;
  c.transposed = r.flag("transposed", false);
  size_t problems_before = r.problems();
  c.stride = read_list(r, "stride", 1);
  c.padding = read_list(r, "padding", 0);
  c.dilation = read_list(r, "dilation", 1);
  bool output_padding_given = r.has("output_padding");
  c.output_padding = read_list(r, "output_padding", 0);
  std::optional<int64_t> groups_read = r.integer("groups", 1);
  c.groups = groups_read.value_or(0);
  if (groups_read && c.groups < 1) {
    r.at_param("groups", "params.groups must be >= 1, got " + std::to_string(c.groups));
    c.groups = 0;
  }
  if (output_padding_given && !c.transposed)
    r.at_param("output_padding",
               "params.output_padding is for transposed convolutions only (transposed = true)");
  // A param that breaks a rule makes any output size a guess: the tensors are checked, not sized.
  c.ok = r.problems() == problems_before;
  return c;
}

/// Checks the tensor counts and the conv's own inputs' types; returns whether inputs[2] is
/// the conv's bias, nullopt when the task cannot be analyzed further. With an epilogue,
/// params.bias says whether it is (the inputs after it are the epilogue's); without one, a
/// third input is the bias.
std::optional<bool> read_bias(family_reader& r) {
  const bool epilogue_given = r.has("epilogue");
  const bool bias_param = r.flag("bias", false);
  if (!r.counts(2, epilogue_given ? std::numeric_limits<size_t>::max() : 3, 1,
                "x, the weight and an optional bias, then the epilogue's inputs"))
    return std::nullopt;
  const bool has_bias = epilogue_given ? bias_param : r.subject().inputs.size() == 3;
  if (has_bias && r.subject().inputs.size() < 3) {
    r.at_param("bias", "params.bias is true, but the conv has no third input for its bias");
    return std::nullopt;
  }
  if (!epilogue_given && r.has("bias") && bias_param != has_bias)
    r.at_param("bias", std::string("params.bias is ") + (bias_param ? "true" : "false") +
                           ", but the conv has " +
                           (has_bias ? "a third input, its bias" : "no bias input"));
  r.require_type(role::input, 0, dtype::f32, has_bias ? 3 : 2);
  r.require_type(role::output, 0, dtype::f32);
  return has_bias;
}

/// What x and the weight say: the conv's dims and channels.
struct conv_tensors {
  int64_t dims = 0;
  std::string kind; ///< "2-d conv", "3-d transposed conv"
  int64_t batch = 0, in_channels = 0, in_per_group = 0, out_channels = 0;
};

/// Checks x's and the weight's ranks, the groups against the channels and the weight's layout
/// (torch's); nullopt after reporting what does not fit.
std::optional<conv_tensors> read_tensors(family_reader& r, const conv_params& c) {
  const tensor_spec& x = r.tensor(role::input, 0);
  const tensor_spec& w = r.tensor(role::input, 1);
  auto rank = static_cast<int64_t>(x.shape.size());
  conv_tensors t;
  t.dims = rank - 2;
  if (t.dims < 1 || t.dims > 3) {
    r.at_shape(role::input, 0,
               "inputs[0] ('" + x.name + "') has shape " + shape_text(x.shape) +
                   ", but a conv takes [batch, channels, width] (1-d), [batch, channels, "
                   "height, width] (2-d) or [batch, channels, depth, height, width] (3-d)");
    return std::nullopt;
  }
  t.kind = std::to_string(t.dims) + "-d " + (c.transposed ? "transposed conv" : "conv");
  std::string layout = c.transposed ? "[in_channels, out_channels / groups, kernel...]"
                                    : "[out_channels, in_channels / groups, kernel...]";
  auto wrong_weight = [&](const std::string& what) {
    r.at_shape(role::input, 1,
               "inputs[1] ('" + w.name + "') has shape " + shape_text(w.shape) + ", but a " +
                   t.kind + " of input '" + x.name + "' " + shape_text(x.shape) + what +
                   " (torch's layout: " + layout + ")");
    return std::nullopt;
  };
  if (static_cast<int64_t>(w.shape.size()) != rank ||
      std::any_of(w.shape.begin() + 2, w.shape.end(), [](int64_t k) { return k < 1; }))
    return wrong_weight(" takes a weight of rank " + std::to_string(rank));
  if (!c.ok || c.groups < 1)
    return std::nullopt;
  t.batch = x.shape[0];
  t.in_channels = x.shape[1];
  if (t.in_channels % c.groups != 0) {
    r.at_param("groups", "params.groups " + std::to_string(c.groups) + " does not divide the " +
                             std::to_string(t.in_channels) + " channels of input '" + x.name + "'");
    return std::nullopt;
  }
  t.in_per_group = t.in_channels / c.groups;
  if (c.transposed) {
    if (w.shape[0] != t.in_channels)
      return wrong_weight(" takes a weight " + weight_layout(std::to_string(t.in_channels),
                                                             "out_channels / groups", t.dims));
    t.out_channels = w.shape[1] * c.groups;
    return t;
  }
  if (w.shape[1] != t.in_per_group)
    return wrong_weight(" in " + std::to_string(c.groups) + " group" + (c.groups == 1 ? "" : "s") +
                        " takes a weight " +
                        weight_layout("out_channels", std::to_string(t.in_per_group), t.dims));
  t.out_channels = w.shape[0];
  if (t.out_channels % c.groups != 0) {
    r.at_param("groups", "params.groups " + std::to_string(c.groups) + " does not divide the " +
                             std::to_string(t.out_channels) + " output channels of weight '" +
                             w.name + "' " + shape_text(w.shape));
    return std::nullopt;
  }
  return t;
}

/// The conv's geometry per dim (d, h, w): the params spread over the convolved dims, the
/// input, kernel and output extents.
struct conv_geometry {
  per_dim stride, padding, dilation, output_padding;
  per_dim in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1};
};

/// Spreads the params over the dims and sizes the output as torch does; nullopt after
/// reporting a param or a window that leaves no output.
std::optional<conv_geometry> size_output(family_reader& r, const conv_params& c,
                                         const conv_tensors& t) {
  const tensor_spec& x = r.tensor(role::input, 0);
  const tensor_spec& w = r.tensor(role::input, 1);
  std::optional<per_dim> s = spread(r, "stride", c.stride, t.dims, 1, 1);
  std::optional<per_dim> p = spread(r, "padding", c.padding, t.dims, 0, 0);
  std::optional<per_dim> d = spread(r, "dilation", c.dilation, t.dims, 1, 1);
  std::optional<per_dim> q = spread(r, "output_padding", c.output_padding, t.dims, 0, 0);
  if (!s || !p || !d || !q)
    return std::nullopt;
  conv_geometry g{*s, *p, *d, *q};
  for (size_t i = 0; i < 3; ++i)
    if (g.output_padding[i] >= g.stride[i] && g.output_padding[i] >= g.dilation[i]) {
      r.at_param("output_padding",
                 "params.output_padding " + torch_value(g.output_padding, t.dims) +
                     " must be smaller than the stride " + torch_value(g.stride, t.dims) +
                     " or the dilation " + torch_value(g.dilation, t.dims) +
                     " in every dim (torch's rule)");
      return std::nullopt;
    }
  for (int64_t i = 0; i < t.dims; ++i) {
    auto at = static_cast<size_t>(3 - t.dims + i);
    g.in[at] = x.shape[static_cast<size_t>(2 + i)];
    g.kernel[at] = w.shape[static_cast<size_t>(2 + i)];
  }
  for (size_t i = 0; i < 3; ++i)
    g.out[i] = c.transposed
                   ? (g.in[i] - 1) * g.stride[i] - 2 * g.padding[i] +
                         g.dilation[i] * (g.kernel[i] - 1) + g.output_padding[i] + 1
                   : floor_div(g.in[i] + 2 * g.padding[i] - g.dilation[i] * (g.kernel[i] - 1) - 1,
                               g.stride[i]) +
                         1;
  if (std::all_of(g.out.begin(), g.out.end(), [](int64_t o) { return o >= 1; }))
    return g;
  std::string window = "(kernel " + torch_value(g.kernel, t.dims) + ", stride " +
                       torch_value(g.stride, t.dims) + ", padding " +
                       torch_value(g.padding, t.dims) + ", dilation " +
                       torch_value(g.dilation, t.dims) + ")";
  if (c.transposed)
    r.at_param("padding", "params.padding " + torch_value(g.padding, t.dims) +
                              " leaves no output: " + t.kind + " " + window + " of input '" +
                              x.name + "' " + shape_text(x.shape) +
                              " gives (in - 1) * stride - 2 * padding + " +
                              "dilation * (kernel - 1) + output_padding + 1 < 1");
  else
    r.at_shape(role::input, 1,
               "inputs[1] ('" + w.name + "') has shape " + shape_text(w.shape) + ": the window " +
                   window + " does not fit input '" + x.name + "' " + shape_text(x.shape));
  return std::nullopt;
}

/// Sets the facts templates read (docs/tasks.md's conv table).
void set_facts(family_reader& r, const conv_params& c, const conv_tensors& t, bool has_bias,
               const conv_geometry& g) {
  r.set("dims", t.dims);
  r.set("transposed", c.transposed);
  r.set("has_bias", has_bias);
  r.set("batch", t.batch);
  r.set("in_channels", t.in_channels);
  r.set("out_channels", t.out_channels);
  r.set("groups", c.groups);
  r.set("in_per_group", t.in_per_group);
  r.set("out_per_group", t.out_channels / c.groups);
  r.set("depthwise", c.groups == t.in_channels);
  auto all = [](const per_dim& v, int64_t e) {
    return std::all_of(v.begin(), v.end(), [e](int64_t x) { return x == e; });
  };
  r.set("pointwise", all(g.kernel, 1) && all(g.stride, 1) && all(g.padding, 0) && !c.transposed);
  static constexpr std::array<std::string_view, 3> axis{"d", "h", "w"};
  for (size_t i = 0; i < 3; ++i) {
    std::string a(axis[i]);
    r.set("in_" + a, g.in[i]);
    r.set("out_" + a, g.out[i]);
    r.set("k_" + a, g.kernel[i]);
    r.set("s_" + a, g.stride[i]);
    r.set("p_" + a, g.padding[i]);
    r.set("d_" + a, g.dilation[i]);
    r.set("outpad_" + a, g.output_padding[i]);
  }
  r.set("in_spatial", g.in[0] * g.in[1] * g.in[2]);
  r.set("out_spatial", g.out[0] * g.out[1] * g.out[2]);
  r.set("kernel_volume", g.kernel[0] * g.kernel[1] * g.kernel[2]);
}

/// Returns torch's call of the conv, without its closing parenthesis.
std::string torch_call(family_reader& r, const conv_params& c, const conv_tensors& t, bool has_bias,
                       const conv_geometry& g) {
  std::string torch = "torch.nn.functional.conv" + std::string(c.transposed ? "_transpose" : "") +
                      std::to_string(t.dims) + "d(" + r.tensor(role::input, 0).name + ", " +
                      r.tensor(role::input, 1).name;
  if (has_bias)
    torch += ", bias=" + r.tensor(role::input, 2).name;
  torch +=
      ", stride=" + torch_value(g.stride, t.dims) + ", padding=" + torch_value(g.padding, t.dims);
  if (c.transposed)
    return torch + ", output_padding=" + torch_value(g.output_padding, t.dims) +
           ", groups=" + std::to_string(c.groups) + ", dilation=" + torch_value(g.dilation, t.dims);
  return torch + ", dilation=" + torch_value(g.dilation, t.dims) +
         ", groups=" + std::to_string(c.groups);
}

/// Returns the conv's useful arithmetic: an FMA per product of an input element and a weight,
/// padding included: for a standard conv per output element in_per_group x kernel_volume of
/// them; a transposed conv is the gradient of a standard one, whose products are counted per
/// INPUT element (out_per_group x kernel_volume each), the useful work whatever the stride (per
/// output it would count stride^dims times too many). A bias adds one per output element.
double conv_operations(const conv_params& c, const conv_tensors& t, bool has_bias,
                       const conv_geometry& g) {
  const double n = static_cast<double>(t.batch);
  const double kernel_volume = static_cast<double>(g.kernel[0] * g.kernel[1] * g.kernel[2]);
  const double in_spatial = static_cast<double>(g.in[0] * g.in[1] * g.in[2]);
  const double out_spatial = static_cast<double>(g.out[0] * g.out[1] * g.out[2]);
  const int64_t per_group = t.out_channels / c.groups; // groups divide the channels
  const auto out_per_group = static_cast<double>(per_group);
  double products = c.transposed ? n * static_cast<double>(t.in_channels) * in_spatial *
                                       out_per_group * kernel_volume
                                 : n * static_cast<double>(t.out_channels) * out_spatial *
                                       static_cast<double>(t.in_per_group) * kernel_volume;
  double outputs = n * static_cast<double>(t.out_channels) * out_spatial;
  return 2.0 * products + (has_bias ? outputs : 0.0);
}

} // namespace

void analyze_conv(family_reader& r) {
  const conv_params c = read_params(r);
  const std::optional<bool> has_bias = read_bias(r);
  if (!has_bias)
    return;
  const std::optional<conv_tensors> t = read_tensors(r, c);
  if (!t)
    return;
  if (*has_bias && !r.require_shape(role::input, 2, {t->out_channels},
                                    "a bias per output channel of this " + t->kind))
    return;
  const std::optional<conv_geometry> g = size_output(r, c, *t);
  if (!g)
    return;
  std::vector<int64_t> shape{t->batch, t->out_channels};
  for (int64_t i = 0; i < t->dims; ++i)
    shape.push_back(g->out[static_cast<size_t>(3 - t->dims + i)]);
  const tensor_spec& x = r.tensor(role::input, 0);
  if (!r.require_shape(role::output, 0, shape,
                       "this " + t->kind + " of " + shape_text(x.shape) + " by weight " +
                           shape_text(r.tensor(role::input, 1).shape)))
    return;
  set_facts(r, c, *t, *has_bias, *g);
  std::optional<epilogue_analysis> epilogue =
      analyze_epilogue(r, r.tensor(role::output, 0).shape, *has_bias ? 3 : 2,
                       *has_bias ? "x, the weight and the bias" : "x and the weight", false,
                       torch_call(r, c, *t, *has_bias, *g) + ")");
  if (!epilogue)
    return;
  set_cost(r, conv_operations(c, *t, *has_bias, *g) + epilogue->operations);
  r.out().torch = epilogue->torch;
}

} // namespace ks::engine::family_detail
