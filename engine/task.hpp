#pragma once

#include "engine/error.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ks::engine {

/// Element types of task tensors. The numbers equal the ABI's ks_dtype codes.
enum class dtype : int32_t { f32 = 0, f16 = 1, bf16 = 2, f64 = 3, i32 = 4, i64 = 5, u8 = 6 };

/// Returns the manifest spelling of `t` ("f32", "bf16", ...).
const char* to_string(dtype t) noexcept;

/// Parses a manifest spelling ("f32", "float32", "bool", ...); nullopt if unknown.
std::optional<dtype> parse_dtype(std::string_view text) noexcept;

/// Lists every dtype, in ABI order.
inline constexpr std::array<dtype, 7> all_dtypes{dtype::f32, dtype::f16, dtype::bf16, dtype::f64,
                                                 dtype::i32, dtype::i64, dtype::u8};

/// Returns every manifest spelling of `t`, its canonical name first ("f16", "float16", "half").
std::vector<std::string_view> spellings_of(dtype t);

/// Returns bytes per element of `t`.
int64_t size_of(dtype t) noexcept;

/// Checks whether `t` is a floating-point type.
bool is_floating(dtype t) noexcept;

/// How the worker draws an input's values for correctness trials. Timing trials always use
/// uniform on [0, 1) (KernelBench's torch.rand), whatever the init.
enum class init_kind : int32_t {
  normal = 0,    ///< standard normal, mixed signs
  uniform = 1,   ///< uniform on [-1, 1), mixed signs
  uniform01 = 2, ///< uniform on [0, 1)
  positive = 3,  ///< uniform on [0.5, 1.5): for inputs that must stay away from 0
  randint = 4,   ///< integers uniform in [low, high)
};

/// Lists every init kind, in the order of their numbers.
inline constexpr std::array<init_kind, 5> all_init_kinds{init_kind::normal, init_kind::uniform,
                                                         init_kind::uniform01, init_kind::positive,
                                                         init_kind::randint};

/// Returns the manifest spelling of `k`.
const char* to_string(init_kind k) noexcept;

/// Parses a manifest spelling of an init; nullopt if unknown.
std::optional<init_kind> parse_init_kind(std::string_view text) noexcept;

/// Describes one input or output tensor of a task.
struct tensor_spec {
  std::string name;
  engine::dtype type = dtype::f32;
  std::vector<int64_t> shape;
  init_kind init = init_kind::normal; ///< inputs only
  int64_t low = 0;                    ///< randint only
  int64_t high = 2;                   ///< randint only

  /// Returns the number of elements (1 for a scalar).
  int64_t numel() const noexcept;

  /// Returns numel() * size_of(type).
  int64_t bytes() const noexcept;
};

/// Bounds on the error of a candidate against the reference. An element passes when
/// |out - ref| <= atol + rtol * |ref|; the whole output also needs
/// ||out - ref|| / ||ref|| <= norm_rel, which separates float32 (near 1e-6) from TF32
/// (near 3e-4) and fp16 shortcuts.
struct tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
  double norm_rel = 1e-5;
};

/// Returns the default tolerance for outputs of type `t`.
tolerance default_tolerance(dtype t) noexcept;

/// The useful work of a task: the roofline floor is max(flops / peak_flops, bytes / peak_bw).
struct task_cost {
  double flops = 0; ///< useful floating-point operations (an FMA counts 2)
  double bytes = 0; ///< fewest bytes moved through device memory: inputs once, outputs once
};

/// A parameter value given to templates and prompts; a list of integers holds `dims = [1, 2]`
/// or a pooling window given as `[h, w]` (templates walk it as {at, value} records).
using param_value = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

/// One record of a list that templates walk (`{{#task.inputs}}{{name}}{{/task.inputs}}`).
using template_record = std::map<std::string, param_value>;

/// The values a task's op family derives from its params and shapes (docs/tasks.md):
/// templates, constraints and preconditions see each as `task.NAME`, a family's defaults
/// included (`task.keepdim` is false when the manifest leaves it out). Empty for a task whose
/// family docs/tasks.md does not define.
struct derived_values {
  std::map<std::string, param_value> scalars;                ///< NAME -> value
  std::map<std::string, std::vector<template_record>> lists; ///< NAME -> records
};

struct graph_spec; // engine/graph_spec.hpp

/// One positional argument of a module's forward: a task input, or a Python literal.
struct module_argument {
  std::string input; ///< a task input's name; empty for a literal
  std::string dtype; ///< with an input: the dtype forward wants ("bool" for a u8 mask); or empty
  std::string value; ///< a Python literal; empty for an input
  /// A tensor forward takes but never reads (the task has no input for it): its dtype, with
  /// `shape`; the torch side passes zeros. Empty for an input or a literal.
  std::string unused;
  std::vector<int64_t> shape; ///< with unused: the tensor's shape
};

/// The PyTorch module an imported task was made from (the manifest's `module` table): what
/// tools/torch_baselines.py times instead of the torch expression, and what `kernelskill
/// import --verify` checks the reference against. The engine checks its form and keeps it.
struct module_spec {
  std::string file;                       ///< where it was imported from (informational)
  std::string sha256;                     ///< of source, as the importer wrote it
  std::string source;                     ///< the file's text: the manifest is self-contained
  std::string entry;                      ///< the nn.Module class (or function) in source
  std::string init;                       ///< a Python literal: the constructor's arguments
  std::vector<module_argument> arguments; ///< forward's positional arguments, in order
  std::map<std::string, std::string> parameters; ///< module parameter or buffer -> task input
  int64_t outputs = 1;                           ///< tensors forward returns (flattened)
  bool eval = false; ///< the module runs in eval mode (its constructor set it); default training
};

/// One operator with fixed shapes, its reference kernel and how to judge a candidate.
struct task {
  std::string name;
  std::string family;
  std::string about;
  std::filesystem::path manifest_path; ///< absolute path of the manifest
  /// Absolute path of the reference: the hand-written .cu, or for a reference rendered from
  /// the family's template, that template (families/<family>/reference.cu.mustache); for a
  /// graph's composed reference, the manifest.
  std::filesystem::path reference_path;
  /// The rendered (or composed) reference's source; empty for a hand-written one (read
  /// reference_path: read_reference() does either).
  std::string reference_source;
  std::vector<tensor_spec> inputs;
  std::vector<tensor_spec> outputs;
  std::map<std::string, param_value> params;
  derived_values derived; ///< what the family derives from params and shapes
  engine::tolerance tol;
  task_cost cost;
  std::string torch; ///< optional torch expression of the op, empty if none
  /// Launch parameters the offline planner may vary: each macro of the reference
  /// (KS_BLOCK_THREADS, ...) to the values it may take, in the manifest's order; the
  /// reference's own default (`#ifndef NAME` / `#define NAME VALUE`) is one of them.
  std::map<std::string, std::vector<int64_t>> tunables;
  /// For family = "graph": the nodes, views and main node (engine/graph_spec.hpp); null for
  /// any other task. Shared: a copy of the task shares its graph, which nothing changes.
  std::shared_ptr<const graph_spec> graph;
  std::optional<module_spec> module; ///< the manifest's `module` table, when it has one
};

/// Returns what a search works on: for a graph task, its main node's task (a family task:
/// retrieval, the offline planner and coder, and skill statistics' family key use it); any
/// other task itself.
const task& search_target(const task& subject) noexcept;

/// Returns the reference's CUDA source: the rendered one, else the file at reference_path;
/// errc::not_found or errc::io naming the file when it cannot be read.
[[nodiscard]] expected<std::string> read_reference(const task& subject);

/// Returns how messages name the reference: its path, or for a rendered one "the <family>
/// reference rendered from <template path>".
std::string reference_name(const task& subject);

/// Returns the roofline floor of `cost` in milliseconds, given measured peaks in GB/s and
/// GFLOP/s; the larger of the memory time and the compute time. A peak <= 0 counts as
/// unknown: its term is left out (0 when both are unknown).
double roofline_floor_ms(const task_cost& cost, double peak_gbps, double peak_gflops) noexcept;

} // namespace ks::engine
