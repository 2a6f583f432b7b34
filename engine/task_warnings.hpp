#pragma once

// Warnings about a manifest that loads but will not do what its author meant; `task check` and
// the dry run print each at its FILE:LINE:COL, before a GPU is needed:
//
//   - A hand-written `reference` beside a family of docs/tasks.md. Every candidate is judged
//     against the reference, while the skills write their candidates from the family's params:
//     a reference edited into another op (beside the `op = "x"` of an old skeleton) made
//     every skill candidate a copy that failed verification, and nothing said so before the
//     GPU did. A warning, not an error: a hand-written reference of the op the params state
//     is a documented override (tasks/README.md; tests/gpu/references/ compares such pairs),
//     and whether the two agree only a GPU can tell. `task check --strict` refuses it.
//   - Tensors that cannot fit the GPU: what the bench worker holds for the task
//     (bench_memory.hpp) against the GPU's memory, known or assumed.

#include "config/diagnostics.hpp"
#include "engine/bench_memory.hpp"
#include "engine/task.hpp"

#include <string>
#include <vector>

namespace ks::engine {

/// One warning about a manifest: where, and what is wrong and what to do.
struct task_warning {
  config::position at; ///< in the manifest (1:1 when the manifest cannot be read again)
  std::string message;
};

/// Returns the warnings of `subject`, a task loaded from subject.manifest_path (read again for
/// the positions), its tensors checked against `gpu`; empty when there is nothing to say.
std::vector<task_warning> task_warnings(const task& subject, const gpu_memory& gpu);

/// Returns `FILE:LINE:COL: warning: MESSAGE`.
std::string located(const std::string& file, const task_warning& warning);

} // namespace ks::engine
