// The concat family: y = torch.cat([x0, x1, ...], dim), the inputs laid one after another along
// `dim`. Viewed as [outer, axis, inner] of the output at dim, each input is [outer, its own
// extent, inner] and lands at its `start` along the axis. It carries no arithmetic, so in a
// graph it is a neighbour of the main op, like an elementwise node (graph_spec.cpp), and a
// graph's bytes are the fused graph's anyway. Any dtype, the same for every tensor: a
// concatenation copies bits.

#include "engine/op_family_reader.hpp"

#include <limits>

namespace ks::engine::family_detail {

void analyze_concat(family_reader& r) {
  std::optional<int64_t> dim = r.integer("dim", 0);
  if (!r.counts(1, std::numeric_limits<size_t>::max(), 1, "the tensors it concatenates"))
    return;
  const tensor_spec& y = r.tensor(role::output, 0);
  for (size_t i = 0; i < r.subject().inputs.size(); ++i) {
    const tensor_spec& x = r.tensor(role::input, i);
    if (x.type != y.type)
      r.at_type(role::input, i,
                "inputs[" + std::to_string(i) + "] ('" + x.name + "') is " + to_string(x.type) +
                    ", but the output is " + to_string(y.type) +
                    ": a concatenation keeps the dtype");
  }
  if (!dim || r.problems() > 0)
    return;
  auto rank = static_cast<int64_t>(y.shape.size());
  if (rank == 0) {
    r.at_shape(role::output, 0, "a concatenation needs tensors of rank >= 1, not scalars");
    return;
  }
  if (*dim < -rank || *dim >= rank) {
    r.at_param("dim", "params.dim: dim " + std::to_string(*dim) + " is out of range for rank " +
                          std::to_string(rank) + " (" + std::to_string(-rank) + " to " +
                          std::to_string(rank - 1) + ")");
    return;
  }
  auto d = static_cast<size_t>(*dim < 0 ? *dim + rank : *dim);
  int64_t along = 0;
  std::vector<template_record> inputs;
  for (size_t i = 0; i < r.subject().inputs.size(); ++i) {
    const tensor_spec& x = r.tensor(role::input, i);
    bool fits = x.shape.size() == y.shape.size();
    for (size_t k = 0; fits && k < x.shape.size(); ++k)
      fits = k == d || x.shape[k] == y.shape[k];
    if (!fits) {
      std::vector<int64_t> wanted = y.shape;
      wanted[d] = x.shape.size() == y.shape.size() ? x.shape[d] : 1;
      r.at_shape(role::input, i,
                 "inputs[" + std::to_string(i) + "] ('" + x.name + "') has shape " +
                     shape_text(x.shape) + ", but a concatenation along dim " + std::to_string(d) +
                     " into " + shape_text(y.shape) + " needs the output's extents but along dim " +
                     std::to_string(d) + " (as " + shape_text(wanted) + ")");
      return;
    }
    inputs.push_back({{"start", along}, {"extent", x.shape[d]}});
    along += x.shape[d];
  }
  if (along != y.shape[d]) {
    r.at_shape(role::output, 0,
               "outputs[0] ('" + y.name + "') has extent " + std::to_string(y.shape[d]) +
                   " along dim " + std::to_string(d) +
                   ", but the inputs' extents there add up to " + std::to_string(along));
    return;
  }
  std::span<const int64_t> all(y.shape);
  r.set("outer", product(all.subspan(0, d)));
  r.set("axis", y.shape[d]);
  r.set("inner", product(all.subspan(d + 1)));
  r.set("dim", static_cast<int64_t>(d));
  // Copied as unsigned words of the element's width: bits, whatever the dtype.
  const int64_t width = size_of(y.type);
  r.set("word", std::string(width == 1   ? "uint8_t"
                            : width == 2 ? "uint16_t"
                            : width == 4 ? "uint32_t"
                                         : "uint64_t"));
  r.out().derived.lists["inputs"] = std::move(inputs);
  set_cost(r, 0.0);
  std::string names;
  for (const tensor_spec& x : r.subject().inputs)
    names += (names.empty() ? "" : ", ") + x.name;
  r.out().torch = "torch.cat([" + names + "], dim=" + std::to_string(d) + ")";
}

} // namespace ks::engine::family_detail
