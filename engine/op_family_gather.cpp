// The gather family: y = torch.gather(x, dim, index), y[..., j, ...] = x[..., index[..., j,
// ...], ...] along `dim`, for a float32 x and an int64 index of x's rank whose extents are x's
// but along dim (cross-entropy's pick of each row's target class is an index of extent 1
// there). Viewed like the axis families as [outer, axis, inner] of x, with the index and y
// [outer, index_extent, inner]. torch raises on an index out of range, which a kernel cannot:
// the reference writes NaN there, and the index must be drawn in range (init = "randint",
// low >= 0, high <= the extent of x along dim) so that every trial is meaningful.

#include "engine/op_family_reader.hpp"

#include <algorithm>

namespace ks::engine::family_detail {

void analyze_gather(family_reader& r) {
  std::optional<int64_t> dim = r.integer("dim", std::nullopt);
  if (!r.counts(2, 2, 1, "x and the index"))
    return;
  const tensor_spec& x = r.tensor(role::input, 0);
  const tensor_spec& index = r.tensor(role::input, 1);
  if (x.type != dtype::f32)
    r.at_type(role::input, 0,
              "inputs[0] ('" + x.name + "') must be f32 for family gather, got " +
                  to_string(x.type));
  if (index.type != dtype::i64)
    r.at_type(role::input, 1,
              "inputs[1] ('" + index.name + "') is the index: it must be i64 for family " +
                  "gather, got " + to_string(index.type));
  r.require_type(role::output, 0, dtype::f32);
  if (!dim)
    return;
  std::optional<axis_view> v = view_of(r, "dim", {*dim}, x.shape);
  if (!v)
    return;
  auto d = static_cast<size_t>(v->first);
  bool extents_ok = index.shape.size() == x.shape.size();
  for (size_t i = 0; extents_ok && i < x.shape.size(); ++i)
    extents_ok = i == d || index.shape[i] == x.shape[i];
  if (!extents_ok) {
    std::vector<int64_t> wanted = x.shape;
    wanted[d] = 1;
    r.at_shape(role::input, 1,
               "inputs[1] ('" + index.name + "') has shape " + shape_text(index.shape) +
                   ", but a gather's index has the extents of x " + shape_text(x.shape) +
                   " but along dim " + std::to_string(d) + " (as " + shape_text(wanted) + ")");
    return;
  }
  if (!r.require_shape(role::output, 0, index.shape,
                       "a gather of index " + shape_text(index.shape)))
    return;
  if (index.init != init_kind::randint || index.low < 0 || index.high > v->axis) {
    r.at_type(role::input, 1,
              "inputs[1] ('" + index.name + "') must be drawn in range: init = \"randint\", " +
                  "low >= 0, high <= " + std::to_string(v->axis) + " (x's extent along dim " +
                  std::to_string(d) + "), so that every trial gathers");
    return;
  }
  set_view(r, *v);
  r.set("index_extent", index.shape[d]);
  // No arithmetic; each output reads the index and one element of x (at most all of x).
  auto outputs = static_cast<double>(r.tensor(role::output, 0).numel());
  double gathered = std::min(outputs, static_cast<double>(x.numel())) * 4.0;
  r.out().cost = task_cost{0.0, static_cast<double>(index.bytes()) + gathered + outputs * 4.0};
  r.out().torch = "torch.gather(" + x.name + ", " + std::to_string(d) + ", " + index.name + ")";
}

} // namespace ks::engine::family_detail
