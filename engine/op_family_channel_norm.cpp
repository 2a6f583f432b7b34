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

void analyze_channel_norm(family_reader& r) {
  std::optional<std::string> op = r.choice("op", channel_norm_ops, std::nullopt);
  bool has_groups = r.has("groups");
  // 0 when absent; nullopt when not an integer (reported).
  std::optional<int64_t> groups_read = r.integer("groups", 0);
  int64_t given_groups = groups_read.value_or(0);
  if (op == "group" && !has_groups)
    r.at_params("a group norm needs param 'groups' (an integer that divides the channels)");
  if (op && op != "group" && has_groups)
    r.at_param("groups", "params.groups is for op \"group\" only");
  if (has_groups && groups_read && given_groups < 1) {
    r.at_param("groups", "params.groups must be >= 1, got " + std::to_string(given_groups));
    given_groups = 0;
  }
  std::optional<double> eps = r.real("eps", 1e-5);
  if (eps && *eps < 0)
    r.at_param("eps", "params.eps must be >= 0, got " + python_float(*eps));
  bool affine = r.flag("affine", false);
  if (!op)
    return;
  size_t weights = affine ? 2 : 0;
  if (!r.counts(1 + weights, 1 + weights, 1, affine ? "x, its weight and bias" : "x"))
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
  // given_groups is 0 when no valid groups were given (reported above): a group norm stops.
  if (*op == "group" && given_groups > 0 && channels % given_groups != 0) {
    r.at_param("groups", "params.groups " + std::to_string(given_groups) + " does not divide the " +
                             std::to_string(channels) + " channels of input '" + x.name + "'");
    return;
  }
  if (*op == "batch" && batch * spatial == 1) {
    r.at_shape(role::input, 0,
               "inputs[0] ('" + x.name + "') has shape " + shape_text(x.shape) +
                   ": a batch norm needs more than one value per channel (torch refuses one)");
    return;
  }
  if (*op == "instance" && spatial == 1) {
    r.at_shape(role::input, 0,
               "inputs[0] ('" + x.name + "') has shape " + shape_text(x.shape) +
                   ": an instance norm needs more than one spatial element (torch refuses one)");
    return;
  }
  if (!shapes_ok || !eps || (*op == "group" && given_groups == 0))
    return;
  // Batch and instance norms are group norms of one channel per group; batch's statistics
  // span the batch too.
  int64_t g = *op == "group" ? given_groups : channels;
  r.set("op", *op);
  r.set_op_flags(channel_norm_ops, *op);
  r.set("batch", batch);
  r.set("channels", channels);
  r.set("spatial", spatial);
  r.set("groups", g);
  r.set("channels_per_group", channels / g);
  r.set("eps", *eps);
  r.set("affine", affine);
  if (*op != "batch") {
    // The rows of a layer norm: without affine weights, the norm family's row skills compute
    // an instance or group norm.
    r.set("outer", batch * g);
    r.set("axis", channels / g * spatial);
    r.set("inner", int64_t{1});
  }

  // As a layer norm: per element a mean (1), a variance (3), a shift and a scale (2), with
  // affine a weight and a bias (2); per statistics group its mean, + eps and sqrt (3).
  int64_t statistics = *op == "batch" ? channels : batch * g;
  set_cost(r, (6.0 + static_cast<double>(weights)) * static_cast<double>(x.numel()) +
                  3.0 * static_cast<double>(statistics));
  std::string affine_args = affine ? "weight=" + r.tensor(role::input, 1).name +
                                         ", bias=" + r.tensor(role::input, 2).name + ", "
                                   : "";
  std::string E = python_float(*eps);
  const std::string& X = x.name;
  if (*op == "batch")
    r.out().torch = "torch.nn.functional.batch_norm(" + X + ", None, None, " + affine_args +
                    "training=True, eps=" + E + ")";
  else if (*op == "instance")
    r.out().torch =
        "torch.nn.functional.instance_norm(" + X + ", " + affine_args + "eps=" + E + ")";
  else
    r.out().torch = "torch.nn.functional.group_norm(" + X + ", " + std::to_string(g) + ", " +
                    affine_args + "eps=" + E + ")";
}

} // namespace ks::engine::family_detail
