#pragma once

// A content key hasher (ccache's hash_delimiter): every field is hashed behind its type tag
// and its length, so that moving bytes from one field to the next always changes the key.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ks::gpu {

/// Hashes tagged fields into a 128-bit XXH3 content key and records a dump of its input.
class content_hasher {
public:
  /// Starts an empty key.
  content_hasher();
  content_hasher(const content_hasher& other);
  content_hasher& operator=(const content_hasher& other);
  content_hasher(content_hasher&&) noexcept;
  content_hasher& operator=(content_hasher&&) noexcept;
  ~content_hasher();

  /// Adds one field: hashes the length of `tag`, `tag`, the length of `data`, then `data`.
  void update(std::string_view tag, std::string_view data);

  /// Returns the key so far as 32 lowercase hex digits (XXH3-128, canonical byte order).
  std::string hex_digest() const;

  /// Returns one line per field added: its tag, its length in bytes, and its first 64 bytes
  /// (escaped), for comparing the inputs of two keys that were expected to match.
  std::string debug_dump() const;

private:
  struct state;
  std::unique_ptr<state> state_;
  std::string dump_;
};

/// Returns the content hash of a CUDA source `text`: the store's key for it and a node's
/// `source_hash` (results.json's winner too), 32 hex digits.
std::string source_hash(std::string_view text);

} // namespace ks::gpu
