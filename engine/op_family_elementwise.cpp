// The elementwise family: one output computed element by element from an expression over the
// inputs (elementwise_expression.hpp), the inputs broadcast to the output's shape by numpy's
// rules (the output may be larger than what they broadcast to together: an expand). Each input
// gets `offset`, the CUDA expression of the output's flat index `i` that gives the input's own
// flat index: "i" for an input of the output's shape, "0" for one element, and otherwise one
// term per dimension the input spans, (i / out_stride % extent) * in_stride, leaving out what
// is 1. An input may be an integer tensor (u8: a bool mask; i32,
// i64), which the expression reads as float.

#include "engine/elementwise_expression.hpp"
#include "engine/op_family_reader.hpp"

#include <cstdint>
#include <limits>

namespace ks::engine::family_detail {

void analyze_elementwise(family_reader& r) {
  std::optional<std::string> op = r.text("op");
  if (!r.counts(1, std::numeric_limits<size_t>::max(), 1, "the operation's operands"))
    return;
  // An integer input (a bool mask is u8) is read as float: 0.0 and 1.0 for a mask.
  bool all_f32 = true;
  for (size_t i = 0; i < r.subject().inputs.size(); ++i) {
    const tensor_spec& x = r.tensor(role::input, i);
    all_f32 = all_f32 && x.type == dtype::f32;
    if (x.type != dtype::f32 && x.type != dtype::u8 && x.type != dtype::i32 && x.type != dtype::i64)
      r.at_type(role::input, i,
                "inputs[" + std::to_string(i) + "] ('" + x.name + "') must be f32, or u8, i32 " +
                    "or i64 (read as float) for family elementwise, got " + to_string(x.type));
  }
  r.require_type(role::output, 0, dtype::f32);
  const tensor_spec& y = r.tensor(role::output, 0);
  // Each input broadcasts to the output's shape; the output may be larger than what they
  // broadcast to together (torch's expand: a [1, 1, C] token repeated over a batch).
  bool shapes_ok = true;
  for (size_t i = 0; i < r.subject().inputs.size(); ++i) {
    const tensor_spec& x = r.tensor(role::input, i);
    bool fits = x.shape.size() <= y.shape.size();
    if (fits) {
      std::vector<int64_t> in = aligned(x.shape, y.shape.size());
      for (size_t d = 0; d < in.size(); ++d)
        fits = fits && (in[d] == 1 || in[d] == y.shape[d]);
    }
    if (!fits) {
      r.at_shape(role::input, i,
                 "inputs[" + std::to_string(i) + "] ('" + x.name + "') has shape " +
                     shape_text(x.shape) + ", which does not broadcast to the " + "output's " +
                     shape_text(y.shape) + " (aligned from the last dim, each extent equal or 1)");
      shapes_ok = false;
    }
  }
  if (!op)
    return;
  std::vector<std::string> names;
  for (const tensor_spec& x : r.subject().inputs)
    names.push_back(x.name);
  expected<elementwise_expression> parsed = elementwise_expression::parse(*op, names);
  if (!parsed) {
    r.at_expression_error("op", parsed.error());
    return;
  }
  for (const std::string& name : names)
    if (std::find(parsed->inputs_used().begin(), parsed->inputs_used().end(), name) ==
        parsed->inputs_used().end())
      r.at_param("op", "params.op does not use input '" + name + "'");
  if (!shapes_ok)
    return;
  r.set("expr", parsed->cuda());
  bool all_same = true;
  std::vector<template_record> inputs;
  for (const tensor_spec& x : r.subject().inputs) {
    bool broadcast = x.shape != y.shape;
    all_same = all_same && !broadcast;
    inputs.push_back({{"broadcast", broadcast}, {"offset", offset_of(x.shape, y.shape)}});
  }
  r.set("all_same_shape", all_same);
  r.set("all_inputs_f32", all_f32);
  r.out().derived.lists["inputs"] = std::move(inputs);
  set_cost(r, static_cast<double>(parsed->operations()) * static_cast<double>(y.numel()));
  r.out().torch = parsed->torch();
}

} // namespace ks::engine::family_detail
