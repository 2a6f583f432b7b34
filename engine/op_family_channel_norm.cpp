// The channel_norm family: batch, instance and group normalization of an input [batch,
// channels, *spatial] (rank >= 2), as torch computes them in training: each value minus the
// mean of its statistics group, over the square root of the group's biased variance plus eps,
// then with `affine` times weight[c] plus bias[c]. The groups: batch, per channel over (batch,
// spatial); instance, per (sample, channel) over spatial; group, per (sample, group of
// channels / groups channels) over (its channels, spatial). torch refuses a batch norm with
// one value per channel and an instance norm with one spatial element; so does this family,
// so that the torch baseline runs.

#include "engine/op_family_reader.hpp"

#include <array>

namespace ks::engine::family_detail {

namespace {

constexpr std::array<std::string_view, 3> channel_norm_ops{"batch", "group", "instance"};

} // namespace

namespace {

/// The params of a channel norm as read.
struct channel_norm_params {
  std::optional<std::string> op;
  int64_t groups = 0; ///< 0 when absent or not valid (reported)
  std::optional<double> eps;
  bool affine = false;
};

channel_norm_params read_params(family_reader& r) {
  channel_norm_params p;
  p.op = r.choice("op", channel_norm_ops, std::nullopt);
  bool has_groups = r.has("groups");
  std::optional<int64_t> groups_read = r.integer("groups", 0);
  p.groups = groups_read.value_or(0);
  if (p.op == "group" && !has_groups)
    r.at_params("a group norm needs param 'groups' (an integer that divides the channels)");
  if (p.op && p.op != "group" && has_groups)
    r.at_param("groups", "params.groups is for op \"group\" only");
  if (has_groups && groups_read && p.groups < 1) {
    r.at_param("groups", "params.groups must be >= 1, got " + std::to_string(p.groups));
    p.groups = 0;
  }
  p.eps = r.real("eps", 1e-5);
  if (p.eps && *p.eps < 0)
    r.at_param("eps", "params.eps must be >= 0, got " + python_float(*p.eps));
  p.affine = r.flag("affine", false);
  return p;
}

/// Checks what torch refuses for x's shape: a group count that does not divide the channels,
/// a batch norm of one value per channel, an instance norm of one spatial element. Returns
/// whether x can be normalized.
bool check_statistics(family_reader& r, const std::string& op, int64_t groups) {
  const tensor_spec& x = r.tensor(role::input, 0);
  const int64_t channels = x.shape[1];
  const int64_t spatial = product(std::span<const int64_t>(x.shape).subspan(2));
  // groups is 0 when no valid groups were given (reported): a group norm stops.
  if (op == "group" && groups > 0 && channels % groups != 0) {
    r.at_param("groups", "params.groups " + std::to_string(groups) + " does not divide the " +
                             std::to_string(channels) + " channels of input '" + x.name + "'");
    return false;
  }
  if (op == "batch" && x.shape[0] * spatial == 1) {
    r.at_shape(role::input, 0,
               "inputs[0] ('" + x.name + "') has shape " + shape_text(x.shape) +
                   ": a batch norm needs more than one value per channel (torch refuses one)");
    return false;
  }
  if (op == "instance" && spatial == 1) {
    r.at_shape(role::input, 0,
               "inputs[0] ('" + x.name + "') has shape " + shape_text(x.shape) +
                   ": an instance norm needs more than one spatial element (torch refuses one)");
    return false;
  }
  return true;
}

/// Returns the channel norm's torch call over x (and its weight and bias with affine).
std::string torch_call(family_reader& r, const channel_norm_params& p, int64_t groups) {
  std::string affine_args = p.affine ? "weight=" + r.tensor(role::input, 1).name +
                                           ", bias=" + r.tensor(role::input, 2).name + ", "
                                     : "";
  std::string E = python_float(*p.eps);
  const std::string& X = r.tensor(role::input, 0).name;
  if (*p.op == "batch")
    return "torch.nn.functional.batch_norm(" + X + ", None, None, " + affine_args +
           "training=True, eps=" + E + ")";
  if (*p.op == "instance")
    return "torch.nn.functional.instance_norm(" + X + ", " + affine_args + "eps=" + E + ")";
  return "torch.nn.functional.group_norm(" + X + ", " + std::to_string(groups) + ", " +
         affine_args + "eps=" + E + ")";
}

} // namespace

void analyze_channel_norm(family_reader& r) {
  const channel_norm_params p = read_params(r);
  if (!p.op)
    return;
  const std::string& op = *p.op;
  size_t weights = p.affine ? 2 : 0;
  if (!r.counts(1 + weights, 1 + weights, 1, p.affine ? "x, its weight and bias" : "x"))
    return;
  r.require_type(role::input, 0, dtype::f32);
  r.require_type(role::output, 0, dtype::f32);
  const tensor_spec& x = r.tensor(role::input, 0);
  if (x.shape.size() < 2) {
    r.at_shape(role::input, 0,
               "inputs[0] ('" + x.name + "') has shape " + shape_text(x.shape) +
                   ", but a channel norm takes [batch, channels, *spatial] (rank >= 2)");
    return;
  }
  bool shapes_ok =
      r.require_shape(role::output, 0, x.shape, "a channel norm keeps its input's shape");
  int64_t batch = x.shape[0];
  int64_t channels = x.shape[1];
  int64_t spatial = product(std::span<const int64_t>(x.shape).subspan(2));
  for (size_t i = 1; i <= weights; ++i)
    shapes_ok = r.require_shape(role::input, i, {channels},
                                std::string("an affine ") + (i == 1 ? "weight" : "bias") +
                                    " per channel of " + shape_text(x.shape)) &&
                shapes_ok;
  if (!check_statistics(r, op, p.groups))
    return;
  if (!shapes_ok || !p.eps || (op == "group" && p.groups == 0))
    return;
  // Batch and instance norms are group norms of one channel per group; batch's statistics
  // span the batch too.
  int64_t g = op == "group" ? p.groups : channels;
  r.set("op", op);
  r.set_op_flags(channel_norm_ops, op);
  r.set("batch", batch);
  r.set("channels", channels);
  r.set("spatial", spatial);
  r.set("groups", g);
  r.set("channels_per_group", channels / g);
  r.set("eps", *p.eps);
  r.set("affine", p.affine);
  if (op != "batch") {
    // The rows of a layer norm: without affine weights, the norm family's row skills compute
    // an instance or group norm.
    r.set("outer", batch * g);
    r.set("axis", channels / g * spatial);
    r.set("inner", int64_t{1});
  }
  // As a layer norm: per element a mean (1), a variance (3), a shift and a scale (2), with
  // affine a weight and a bias (2); per statistics group its mean, + eps and sqrt (3).
  int64_t statistics = op == "batch" ? channels : batch * g;
  set_cost(r, (6.0 + static_cast<double>(weights)) * static_cast<double>(x.numel()) +
                  3.0 * static_cast<double>(statistics));
  r.out().torch = torch_call(r, p, g);
}

} // namespace ks::engine::family_detail
