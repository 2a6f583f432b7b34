#pragma once

// nvcc inside bubblewrap, when bench.sandbox is on (issue 27): a candidate comes from a model,
// and what it makes nvcc read ends up in its diagnostics (which go back to a model) or inside
// its shared object (`asm(".incbin \"/home/me/.ssh/id_rsa\"")` embeds any file the assembler
// can open, and the worker runs the result). engine/candidate_checks.hpp refuses the plain
// includes before nvcc runs; the sandbox is what holds against everything else. nvcc sees:
//
//   /usr                          read-only: the compilers, the system's headers and libraries,
//                                 the CUDA toolkit where it lives under /usr/local
//   /bin /sbin /lib* links        as the host has them (links into /usr on a merged /usr)
//   /etc/alternatives,            read-only: what the host compiler's names and the dynamic
//   /etc/ld.so.{cache,conf,conf.d} loader need of /etc, and nothing else of it (/etc/shadow)
//   each `readable` folder        read-only: the toolkit where it is not under /usr, and the
//                                 folder of kernelskill/abi.h
//   the build folder              writable: the candidate's kernel.cu, nvcc's kernel.so
//   /tmp                          an empty tmpfs of its own, for nvcc's temporary files
//   /dev                          a minimal one (null, zero, random, ...)
//   /proc                         a fresh one in its own pid namespace; none where the host
//                                 allows no pid namespace (the host's would show other
//                                 processes' environments)
//
// and no network, with the namespaces of namespace_arguments(). Nothing else: not the home
// folder, the campaign's output and store, the other entries of the compile cache, the skill
// memory or the engine's sources.

#include "gpu/worker_sandbox.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace ks::gpu {

/// Returns bwrap's arguments, up to and including "--", for nvcc compiling in `build` (its
/// working directory) with the view above; `readable` are the folders shown read-only besides
/// /usr (absolute; a missing one is left out).
std::vector<std::string>
compile_sandbox_arguments(const sandbox_support& support,
                          const std::vector<std::filesystem::path>& readable,
                          const std::filesystem::path& build);

} // namespace ks::gpu
