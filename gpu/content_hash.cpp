#include "gpu/content_hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <cstring>

namespace ks::gpu {

namespace {

constexpr size_t dump_prefix_bytes = 64;

void hash_length(XXH3_state_t& st, size_t length) {
  // Fixed width, little endian: the key must not depend on the host's byte order.
  unsigned char bytes[8];
  auto value = static_cast<uint64_t>(length);
  for (unsigned char& byte : bytes) {
    byte = static_cast<unsigned char>(value & 0xff);
    value >>= 8;
  }
  XXH3_128bits_update(&st, bytes, sizeof bytes);
}

std::string escaped_prefix(std::string_view data) {
  std::string text;
  for (char c : data.substr(0, dump_prefix_bytes)) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      text += "\\n";
    } else if (c == '\t') {
      text += "\\t";
    } else if (c == '\\' || c == '"') {
      text += '\\';
      text += c;
    } else if (byte < 0x20 || byte >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      text += hex;
    } else {
      text += c;
    }
  }
  if (data.size() > dump_prefix_bytes)
    text += "...";
  return text;
}

} // namespace

struct content_hasher::state {
  XXH3_state_t xxh;
};

content_hasher::content_hasher() : state_(std::make_unique<state>()) {
  XXH3_128bits_reset(&state_->xxh);
}

content_hasher::content_hasher(const content_hasher& other)
  : state_(std::make_unique<state>()), dump_(other.dump_) {
  XXH3_copyState(&state_->xxh, &other.state_->xxh);
}

content_hasher& content_hasher::operator=(const content_hasher& other) {
  if (this != &other) {
    XXH3_copyState(&state_->xxh, &other.state_->xxh);
    dump_ = other.dump_;
  }
  return *this;
}

content_hasher::content_hasher(content_hasher&&) noexcept = default;
content_hasher& content_hasher::operator=(content_hasher&&) noexcept = default;
content_hasher::~content_hasher() = default;

void content_hasher::update(std::string_view tag, std::string_view data) {
  hash_length(state_->xxh, tag.size());
  XXH3_128bits_update(&state_->xxh, tag.data(), tag.size());
  hash_length(state_->xxh, data.size());
  XXH3_128bits_update(&state_->xxh, data.data(), data.size());
  dump_ += std::string(tag) + " (" + std::to_string(data.size()) + " bytes): \"" +
           escaped_prefix(data) + "\"\n";
}

std::string content_hasher::hex_digest() const {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state_->xxh));
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * sizeof canonical.digest);
  for (unsigned char byte : canonical.digest) {
    hex += digits[byte >> 4];
    hex += digits[byte & 0xf];
  }
  return hex;
}

std::string content_hasher::debug_dump() const {
  return dump_;
}

std::string source_hash(std::string_view text) {
  content_hasher h;
  h.update("cuda-source", text);
  return h.hex_digest();
}

} // namespace ks::gpu
