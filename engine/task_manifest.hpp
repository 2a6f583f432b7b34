#pragma once

// A task manifest is a TOML file beside its reference kernel:
//
//   name      = "softmax"               required, [a-z0-9_]+, unique within a suite
//   family    = "softmax"               required, non-empty: skill retrieval and templates; for
//                                       a family of docs/tasks.md (op_family.hpp), its params
//                                       are checked against the tensors and values derived
//   about     = "..."                   optional
//   reference = "softmax_ref.cu"        relative to the manifest's folder, must exist; optional
//                                       for a family of docs/tasks.md (rendered from its
//                                       template, family_reference.hpp), required otherwise
//   inputs    = [ TENSOR, ... ]         required, at least one
//   outputs   = [ TENSOR, ... ]         required, at least one; no init, low or high
//   params    = { KEY = VALUE, ... }    optional (a family's own: required ones, no others);
//                                       integer, float, boolean, string or integer-array values
//   tolerance = { atol = A, rtol = R, norm_rel = N }
//                                       optional, each key too: defaults from
//                                       default_tolerance(first output's dtype); finite, >= 0
//   cost      = { flops = F, bytes = B }
//                                       both keys: finite numbers (integers accepted), flops
//                                       >= 0, bytes > 0; optional for a family (derived by its
//                                       formula, docs/tasks.md), required otherwise
//   torch     = "torch.softmax(x, dim=1)"   optional; a family's is derived when absent
//   tunables  = { KS_BLOCK_THREADS = [64, 128, 256, 512, 1024], ... }
//                                       optional: each key a macro name ([A-Z_][A-Z0-9_]*) of
//                                       the reference, each value a non-empty array of
//                                       distinct integers (the reference's default among them)
//   module    = { file = ..., sha256 = ..., source = ..., entry = ..., init = ...,
//                 arguments = [ { input = "x" }, { value = "3.14" } ], parameters = { ... },
//                 outputs = 1 }        optional, any family: the PyTorch module the task was
//                                       imported from (source and entry required; inputs it
//                                       names must exist); kept as it is (task::module)
//
//   family = "graph" (docs/tasks.md, "Graph tasks"; graph_manifest.cpp) adds, and allows only
//   there:
//   views     = [ { name, of, shape | permute | flip | narrow }, ... ]     optional
//   nodes     = [ { name, family, inputs = [NAME, ...], outputs = [NAME | { name, dtype,
//                 shape }, ...], params = { ... } }, ... ]                  required
//   main      = "NODE"                  optional: the node the search works on
//   A graph has no params of its own; its reference is composed from its nodes' (a hand-written
//   one still overrides it), its cost and torch derived unless given.
//
//   TENSOR = { name = "x", dtype = "f32", shape = [4096, 16384], init = "normal",
//              low = 0, high = 10 }
//     name   required, an identifier ([A-Za-z_][A-Za-z0-9_]*), unique among inputs and outputs
//     dtype  required, see parse_dtype()
//     shape  required, at most 8 positive integers; [] is a scalar
//     init   inputs only, optional (default "normal"), see parse_init_kind()
//     low, high   inputs with init = "randint" only, and required there: integers,
//                 low < high, [low, high) within the dtype's range
//
// Loading reports every problem it finds, one line each, `FILE:LINE:COL: message`, in source
// order (the position of the offending key or value, or of the table that lacks a key), and
// then fails once with all of them.

#include "engine/error.hpp"
#include "engine/task.hpp"

#include <filesystem>
#include <vector>

namespace ks::engine {

/// Loads and validates the task manifest at `path`. Returns the task with absolute
/// manifest_path and reference_path (for a rendered reference, the family's template, with
/// reference_source the rendered text; the families' folder is default_families_dir());
/// errc::not_found or errc::io (naming `path`) when the file
/// is missing or unreadable; errc::invalid_input whose message holds one
/// `FILE:LINE:COL: message` line per problem, FILE being `path` as given.
[[nodiscard]] expected<task> load_task_manifest(const std::filesystem::path& path);

/// Loads a suite: every *.toml directly inside `dir_or_file`, sorted by file name, or that one
/// manifest when it is a file. Returns the tasks in that order, or one error that gathers the
/// problems of every file, duplicate task names included; errc::not_found when `dir_or_file`
/// does not exist or a folder holds no manifest.
[[nodiscard]] expected<std::vector<task>> load_task_suite(const std::filesystem::path& dir_or_file);

} // namespace ks::engine
