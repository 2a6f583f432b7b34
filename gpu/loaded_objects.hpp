#pragma once

// What the dynamic loader holds in this process, and what an ELF file will ask it for.
//
// loaded_objects() walks dl_iterate_phdr, which visits every object of every link namespace
// (dlmopen's too), and names each as the loader does: the path it was found at. load_count()
// reads the walk's dlpi_adds, a counter the loader bumps for every object it maps, loaded for
// good or unloaded again: the bench worker compares it around each call of a candidate, which
// costs one callback unless something was loaded (gpu/library_watch.hpp).
//
// needed_libraries() reads a file's DT_NEEDED entries the way the loader finds them: through
// the program headers (PT_DYNAMIC, and DT_STRTAB's address through the PT_LOAD segment that
// holds it), not the section headers, which a file may lack or lie in. The worker reads a
// candidate's before opening it, so that one linked against cuBLAS is refused before any of
// its code (or cuBLAS's constructors) runs, and even when cuBLAS is in the process already.
// The reader trusts nothing in the file: every offset and size is checked against the file's
// size before it is read.

#include "engine/error.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ks::gpu {

/// Returns the names (paths, as the loader found them) of the shared objects loaded in this
/// process now, in the loader's order, without the main program and the vDSO.
std::vector<std::string> loaded_objects();

/// Returns how many objects the dynamic loader has mapped into this process since it
/// started (dl_iterate_phdr's dlpi_adds): it grows whenever anything is loaded, also when it
/// is unloaded again before anyone looks.
uint64_t load_count();

/// Returns the DT_NEEDED entries of the shared object or executable at `path`, in order
/// (empty for a static one). Fails with errc::io when the file cannot be read, and with
/// errc::invalid_input when it is no 64-bit ELF file of this machine's byte order or its
/// dynamic section is malformed (the loader would refuse it too).
[[nodiscard]] engine::expected<std::vector<std::string>>
needed_libraries(const std::filesystem::path& path);

} // namespace ks::gpu
