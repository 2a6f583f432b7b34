#pragma once

// A profile and its diagnosis for people and for files: the per-kernel table and the
// diagnosis with its evidence that `kernelskill profile` prints and report.md shows, and the
// JSON of a diagnosis that results.json and `kernelskill profile --json` carry (a profile's
// own JSON is the worker protocol's, encode_profile).

#include "engine/diagnosis.hpp"
#include "engine/profile.hpp"

#include <string>

namespace ks::gpu {

/// Encodes `d` as one JSON object (no '\n'): its class, roofline share, evidence, text and
/// the hardware facts that are known.
std::string encode_diagnosis(const engine::diagnosis& d);

/// Returns the table of `p`'s kernels, longest first: launches, time and share, launch
/// configuration, and the main counters of each (where read); then how the counters were
/// read, or why not, and the notes. Lines end in '\n'.
std::string kernel_table(const engine::profile& p);

/// Returns `d` for people: the class and where it comes from, the text, and every piece of
/// evidence as "metric value relation threshold". Lines end in '\n'.
std::string describe_diagnosis(const engine::diagnosis& d);

} // namespace ks::gpu
