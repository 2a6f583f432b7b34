#pragma once

// The checksum every value of our LMDB stores carries (the campaign store, record_codec.hpp,
// and the skill memory, skill_store.hpp). LMDB 0.9 checksums nothing: a byte changed on disk
// (a bad sector, a stray write, an edit) reads back as a valid record, and one changed digit
// of a timing turns a 1.29x speedup into 0.15x. So every value is sealed when written and
// checked when read:
//
//   value    = body NUL "xxh3-64:" hex16
//   body     = the record's JSON text (record_codec.hpp's grammar), unchanged
//   hex16    = XXH3-64 of body, seeded with XXH3-64 of the record's key, as 16 lowercase hex
//              digits
//
// JSON text never holds a NUL byte (a string escapes it), so the trailer cannot be mistaken
// for a body's end, and a value holds a trailer exactly when it holds a NUL. Seeding with the
// key makes a value that turns up under another key (a damaged key) fail too. XXH3 is
// xxHash's (header-only, as gpu/ uses it): a damaged value passes with probability 2^-64.
//
// A store written before values were sealed (its header says no checksum) reads its unsealed
// values unchecked; what is written into it since is sealed. A store whose header names the
// checksum requires it of every value: one without is damaged.

#include <tl/expected.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace ks::memory::seal {

/// Names the checksum, as a store's header records it.
inline constexpr std::string_view checksum_name = "xxh3-64";

/// Says whether a store's values must carry a checksum.
enum class rule : int32_t {
  required = 0, ///< a store whose header names the checksum: every value is sealed
  optional = 1, ///< a store written before checksums: an unsealed value reads unchecked
};

/// Returns `body` sealed for `key`: body, then the trailer with its checksum.
std::string sealed(std::string_view key, std::string_view body);

/// What open() found in a value.
struct opened {
  std::string_view body; ///< the value without its trailer (a view into the value)
  bool checked = false;  ///< false: an unsealed value of an optional store, read unchecked
};

/// Returns the body of `value`, stored at `key`, once its checksum matches. Fails, saying why
/// (without the key, which the caller names), when the checksum does not match, the trailer is
/// malformed, or the value carries none and `r` is required.
[[nodiscard]] tl::expected<opened, std::string> open(std::string_view key, std::string_view value,
                                                     rule r);

} // namespace ks::memory::seal
