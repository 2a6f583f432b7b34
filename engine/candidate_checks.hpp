#pragma once

// What a candidate's source may reach before nvcc runs, and what of nvcc's answer goes back to
// a model: a candidate comes from a model, and nvcc quotes the lines of whatever file it was
// made to include, so an `#include "/home/me/.ssh/id_rsa"` would send that file to the model's
// endpoint in the repairer's prompt (issue 27). See candidate_checks.cpp.

#include <optional>
#include <string>
#include <string_view>

namespace ks::engine {

/// Checks every `#include` (and `#include_next`, `#import`, `%:include`) of `source`, after
/// joining continued lines and removing comments: a path in "..." or <...> that is relative
/// and has no ".." component is allowed (the standard, CUDA and system headers, and
/// kernelskill/abi.h); an absolute path, a ".." component, or an operand that is no literal
/// path (a macro) is refused. Returns nullopt when every include is allowed, else one line per
/// refused include, as "`file_name`:LINE: #include ...: why", for nvcc's diagnostics.
std::optional<std::string> refused_includes(std::string_view source,
                                            std::string_view file_name = "kernel.cu");

/// Returns `diagnostics` (nvcc's and its host compiler's output for the candidate
/// `file_name`) with every diagnostic about another file cut down to its position and
/// severity: the lines it quotes are not kept, so that no line of a file other than the
/// candidate's reaches a model. Lines that are no diagnostic of a file (nvcc's summary, "In
/// file included from ...") are kept.
std::string own_diagnostics(std::string_view diagnostics, std::string_view file_name = "kernel.cu");

} // namespace ks::engine
