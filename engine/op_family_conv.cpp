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

void analyze_conv(family_reader& r) {
  bool transposed = r.flag("transposed", false);
  size_t problems_before = r.problems();
  std::optional<std::vector<int64_t>> stride = read_list(r, "stride", 1);
  std::optional<std::vector<int64_t>> padding = read_list(r, "padding", 0);
  std::optional<std::vector<int64_t>> dilation = read_list(r, "dilation", 1);
  bool output_padding_given = r.has("output_padding");
  std::optional<std::vector<int64_t>> output_padding = read_list(r, "output_padding", 0);
  // 0 when not an integer or below 1 (reported).
  std::optional<int64_t> groups_read = r.integer("groups", 1);
  int64_t groups = groups_read.value_or(0);
  if (groups_read && groups < 1) {
    r.at_param("groups", "params.groups must be >= 1, got " + std::to_string(groups));
    groups = 0;
  }
  if (output_padding_given && !transposed)
    r.at_param("output_padding",
               "params.output_padding is for transposed convolutions only (transposed = true)");
  // A param that breaks a rule makes any output size a guess: the tensors are checked, not sized.
  bool params_ok = r.problems() == problems_before;
  // With an epilogue, params.bias says whether inputs[2] is the conv's bias (the inputs after
  // it are the epilogue's); without one, a third input is the bias.
  const bool epilogue_given = r.has("epilogue");
  const bool bias_param = r.flag("bias", false);
  if (!r.counts(2, epilogue_given ? std::numeric_limits<size_t>::max() : 3, 1,
                "x, the weight and an optional bias, then the epilogue's inputs"))
    return;
  const bool has_bias = epilogue_given ? bias_param : r.subject().inputs.size() == 3;
  if (has_bias && r.subject().inputs.size() < 3) {
    r.at_param("bias", "params.bias is true, but the conv has no third input for its bias");
    return;
  }
  if (!epilogue_given && r.has("bias") && bias_param != has_bias)
    r.at_param("bias", std::string("params.bias is ") + (bias_param ? "true" : "false") +
                           ", but the conv has " +
                           (has_bias ? "a third input, its bias" : "no bias input"));
  for (size_t i = 0; i < std::min<size_t>(r.subject().inputs.size(), has_bias ? 3 : 2); ++i)
    if (r.tensor(role::input, i).type != dtype::f32)
      r.at_type(role::input, i,
                "inputs[" + std::to_string(i) + "] ('" + r.tensor(role::input, i).name +
                    "') must be f32 for family conv, got " +
                    to_string(r.tensor(role::input, i).type));
  r.require_type(role::output, 0, dtype::f32);
  const tensor_spec& x = r.tensor(role::input, 0);
  const tensor_spec& w = r.tensor(role::input, 1);
  auto rank = static_cast<int64_t>(x.shape.size());
  int64_t dims = rank - 2;
  if (dims < 1 || dims > 3) {
    r.at_shape(role::input, 0,
               "inputs[0] ('" + x.name + "') has shape " + shape_text(x.shape) +
                   ", but a conv takes [batch, channels, width] (1-d), [batch, channels, "
                   "height, width] (2-d) or [batch, channels, depth, height, width] (3-d)");
    return;
  }
  std::string kind = std::to_string(dims) + "-d " + (transposed ? "transposed conv" : "conv");
  std::string layout = transposed ? "[in_channels, out_channels / groups, kernel...]"
                                  : "[out_channels, in_channels / groups, kernel...]";
  if (static_cast<int64_t>(w.shape.size()) != rank ||
      std::any_of(w.shape.begin() + 2, w.shape.end(), [](int64_t k) { return k < 1; })) {
    r.at_shape(role::input, 1,
               "inputs[1] ('" + w.name + "') has shape " + shape_text(w.shape) + ", but a " + kind +
                   " of input '" + x.name + "' " + shape_text(x.shape) +
                   " takes a weight of rank " + std::to_string(rank) +
                   " (torch's layout: " + layout + ")");
    return;
  }
  if (!params_ok || groups < 1)
    return;
  const int64_t batch = x.shape[0];
  const int64_t in_channels = x.shape[1];
  if (in_channels % groups != 0) {
    r.at_param("groups", "params.groups " + std::to_string(groups) + " does not divide the " +
                             std::to_string(in_channels) + " channels of input '" + x.name + "'");
    return;
  }
  const int64_t in_per_group = in_channels / groups;
  int64_t out_channels = 0;
  if (!transposed) {
    if (w.shape[1] != in_per_group) {
      r.at_shape(role::input, 1,
                 "inputs[1] ('" + w.name + "') has shape " + shape_text(w.shape) + ", but a " +
                     kind + " of input '" + x.name + "' " + shape_text(x.shape) + " in " +
                     std::to_string(groups) + " group" + (groups == 1 ? "" : "s") +
                     " takes a weight " +
                     weight_layout("out_channels", std::to_string(in_per_group), dims) +
                     " (torch's layout: " + layout + ")");
      return;
    }
    out_channels = w.shape[0];
    if (out_channels % groups != 0) {
      r.at_param("groups", "params.groups " + std::to_string(groups) + " does not divide the " +
                               std::to_string(out_channels) + " output channels of weight '" +
                               w.name + "' " + shape_text(w.shape));
      return;
    }
  } else {
    if (w.shape[0] != in_channels) {
      r.at_shape(role::input, 1,
                 "inputs[1] ('" + w.name + "') has shape " + shape_text(w.shape) + ", but a " +
                     kind + " of input '" + x.name + "' " + shape_text(x.shape) +
                     " takes a weight " +
                     weight_layout(std::to_string(in_channels), "out_channels / groups", dims) +
                     " (torch's layout: " + layout + ")");
      return;
    }
    out_channels = w.shape[1] * groups;
  }
  if (has_bias &&
      !r.require_shape(role::input, 2, {out_channels}, "a bias per output channel of this " + kind))
    return;

  std::optional<per_dim> s = spread(r, "stride", stride, dims, 1, 1);
  std::optional<per_dim> p = spread(r, "padding", padding, dims, 0, 0);
  std::optional<per_dim> d = spread(r, "dilation", dilation, dims, 1, 1);
  std::optional<per_dim> q = spread(r, "output_padding", output_padding, dims, 0, 0);
  if (!s || !p || !d || !q)
    return;
  for (size_t i = 0; i < 3; ++i)
    if ((*q)[i] >= (*s)[i] && (*q)[i] >= (*d)[i]) {
      r.at_param("output_padding", "params.output_padding " + torch_value(*q, dims) +
                                       " must be smaller than the stride " + torch_value(*s, dims) +
                                       " or the dilation " + torch_value(*d, dims) +
                                       " in every dim (torch's rule)");
      return;
    }
  per_dim in{1, 1, 1};
  per_dim k{1, 1, 1};
  per_dim out{1, 1, 1};
  for (int64_t i = 0; i < dims; ++i) {
    auto at = static_cast<size_t>(3 - dims + i);
    in[at] = x.shape[static_cast<size_t>(2 + i)];
    k[at] = w.shape[static_cast<size_t>(2 + i)];
  }
  for (size_t i = 0; i < 3; ++i)
    out[i] = transposed ? (in[i] - 1) * (*s)[i] - 2 * (*p)[i] + (*d)[i] * (k[i] - 1) + (*q)[i] + 1
                        : floor_div(in[i] + 2 * (*p)[i] - (*d)[i] * (k[i] - 1) - 1, (*s)[i]) + 1;
  if (std::any_of(out.begin(), out.end(), [](int64_t o) { return o < 1; })) {
    std::string window = "(kernel " + torch_value(k, dims) + ", stride " + torch_value(*s, dims) +
                         ", padding " + torch_value(*p, dims) + ", dilation " +
                         torch_value(*d, dims) + ")";
    if (transposed)
      r.at_param("padding", "params.padding " + torch_value(*p, dims) + " leaves no output: " +
                                kind + " " + window + " of input '" + x.name + "' " +
                                shape_text(x.shape) + " gives (in - 1) * stride - 2 * padding + " +
                                "dilation * (kernel - 1) + output_padding + 1 < 1");
    else
      r.at_shape(role::input, 1,
                 "inputs[1] ('" + w.name + "') has shape " + shape_text(w.shape) + ": the window " +
                     window + " does not fit input '" + x.name + "' " + shape_text(x.shape));
    return;
  }
  std::vector<int64_t> shape{batch, out_channels};
  for (int64_t i = 0; i < dims; ++i)
    shape.push_back(out[static_cast<size_t>(3 - dims + i)]);
  if (!r.require_shape(role::output, 0, shape,
                       "this " + kind + " of " + shape_text(x.shape) + " by weight " +
                           shape_text(w.shape)))
    return;

  const int64_t out_per_group = out_channels / groups;
  const int64_t kernel_volume = k[0] * k[1] * k[2];
  const int64_t in_spatial = in[0] * in[1] * in[2];
  const int64_t out_spatial = out[0] * out[1] * out[2];
  r.set("dims", dims);
  r.set("transposed", transposed);
  r.set("has_bias", has_bias);
  r.set("batch", batch);
  r.set("in_channels", in_channels);
  r.set("out_channels", out_channels);
  r.set("groups", groups);
  r.set("in_per_group", in_per_group);
  r.set("out_per_group", out_per_group);
  r.set("depthwise", groups == in_channels);
  bool unit = std::all_of(k.begin(), k.end(), [](int64_t e) { return e == 1; }) &&
              std::all_of(s->begin(), s->end(), [](int64_t e) { return e == 1; }) &&
              std::all_of(p->begin(), p->end(), [](int64_t e) { return e == 0; });
  r.set("pointwise", unit && !transposed);
  static constexpr std::array<std::string_view, 3> axis{"d", "h", "w"};
  for (size_t i = 0; i < 3; ++i) {
    std::string a(axis[i]);
    r.set("in_" + a, in[i]);
    r.set("out_" + a, out[i]);
    r.set("k_" + a, k[i]);
    r.set("s_" + a, (*s)[i]);
    r.set("p_" + a, (*p)[i]);
    r.set("d_" + a, (*d)[i]);
    r.set("outpad_" + a, (*q)[i]);
  }
  r.set("in_spatial", in_spatial);
  r.set("out_spatial", out_spatial);
  r.set("kernel_volume", kernel_volume);

  // An FMA per product of an input element and a weight, padding included: for a standard
  // conv per output element in_per_group x kernel_volume of them; a transposed conv is the
  // gradient of a standard one, whose products are counted per INPUT element (out_per_group
  // x kernel_volume each), the useful work whatever the stride (per output it would count
  // stride^dims times too many). A bias adds one per output element.
  auto n = static_cast<double>(batch);
  double products = transposed ? n * static_cast<double>(in_channels * in_spatial) *
                                     static_cast<double>(out_per_group * kernel_volume)
                               : n * static_cast<double>(out_channels * out_spatial) *
                                     static_cast<double>(in_per_group * kernel_volume);
  double outputs = n * static_cast<double>(out_channels * out_spatial);
  std::string torch = "torch.nn.functional.conv" + std::string(transposed ? "_transpose" : "") +
                      std::to_string(dims) + "d(" + x.name + ", " + w.name;
  if (has_bias)
    torch += ", bias=" + r.tensor(role::input, 2).name;
  torch += ", stride=" + torch_value(*s, dims) + ", padding=" + torch_value(*p, dims);
  if (transposed)
    torch += ", output_padding=" + torch_value(*q, dims) + ", groups=" + std::to_string(groups) +
             ", dilation=" + torch_value(*d, dims);
  else
    torch += ", dilation=" + torch_value(*d, dims) + ", groups=" + std::to_string(groups);
  std::optional<epilogue_analysis> epilogue = analyze_epilogue(
      r, r.tensor(role::output, 0).shape, has_bias ? 3 : 2,
      has_bias ? "x, the weight and the bias" : "x and the weight", false, torch + ")");
  if (!epilogue)
    return;
  set_cost(r, 2.0 * products + (has_bias ? outputs : 0.0) + epilogue->operations);
  r.out().torch = epilogue->torch;
}

} // namespace ks::engine::family_detail
