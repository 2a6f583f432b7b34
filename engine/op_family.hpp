#pragma once

// The op families of docs/tasks.md as data: for a task that names one (softmax, norm, reduce,
// scan, channel_norm, elementwise, gather, pool, matvec, matmul), its params are checked
// against its tensors, and the values templates need are derived from them (`task.outer`,
// `task.expr`, ...), with the task's useful work (flops, bytes) and its torch expression. The
// manifest loader calls this; family_reference.hpp renders the family's reference from the
// same values.

#include "config/diagnostics.hpp"
#include "engine/task.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine {

/// Where the parts of a manifest that a family checks were written: its problems point there.
struct family_sources {
  config::position params;                       ///< the params table (1:1 when there is none)
  std::map<std::string, config::position> param; ///< each param's value
  std::vector<config::position> input_shapes;    ///< each input's shape
  std::vector<config::position> output_shapes;   ///< each output's shape
  std::vector<config::position> input_types;     ///< each input's dtype
  std::vector<config::position> output_types;    ///< each output's dtype
};

/// One problem with the params or tensors of a family task.
struct family_problem {
  config::position at;
  std::string message;
};

/// What a family makes of a task.
struct family_analysis {
  derived_values derived;               ///< template values, the family's defaults included
  task_cost cost;                       ///< the useful work, by the family's formula
  std::string torch;                    ///< the op in torch, over the input names
  std::vector<family_problem> problems; ///< empty when the task is valid
};

/// Lists the families docs/tasks.md defines, sorted.
std::vector<std::string_view> family_names();

/// Checks whether docs/tasks.md defines `family`.
bool is_family(std::string_view family);

/// Checks the params and tensors of `subject` against its family (is_family(subject.family)
/// must hold): required params present, each of its type and range, no unknown param, tensor
/// counts, dtypes and shapes as the op makes them. Returns the derived values, cost and torch
/// expression; meaningful only when problems is empty. `sources` says where to point.
family_analysis analyze_family(const task& subject, const family_sources& sources);

/// Returns every scalar a template sees as `task.NAME` (keys without "task."): name, family,
/// dtype (of the first input), numel (of the first output), <tensor>_numel and <tensor>_rank
/// for each tensor, inputs and outputs (counts, which templates see as the lists of
/// tensor_records instead), input_count and output_count (the counts again, for templates),
/// numel_in, numel_out, rank_in, every manifest
/// param, then the derived values (which win over a param of the same name).
std::map<std::string, param_value> task_scalars(const task& subject);

/// Returns the records templates walk as `task.inputs` or `task.outputs` (`which`): for each
/// tensor its name, index, numel, rank, dtype ("f32"), ctype ("float"), abi_dtype ("KS_F32"),
/// shape ("[4096, 1024]") and extents (the shape as a list of integers, which templates walk
/// as {at, value} records); then whatever the family derived for that tensor (elementwise:
/// broadcast, offset).
std::vector<template_record> tensor_records(const task& subject, std::string_view which);

} // namespace ks::engine
