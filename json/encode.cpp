#include "json/encode.hpp"

#include <cstddef>
#include <cstdint>

namespace ks::encode {

namespace {

/// Returns the length of the valid UTF-8 sequence at the start of `text`, or 0 when there is
/// none (RFC 3629's table of well-formed byte sequences).
size_t sequence_length(std::string_view text) noexcept {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  auto continuation = [&](size_t i, uint8_t low = 0x80, uint8_t high = 0xbf) {
    return i < text.size() && byte(i) >= low && byte(i) <= high;
  };
  uint8_t lead = byte(0);
  if (lead < 0x80)
    return 1;
  if (lead >= 0xc2 && lead <= 0xdf)
    return continuation(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    uint8_t low = lead == 0xe0 ? 0xa0 : 0x80;  // no overlong form
    uint8_t high = lead == 0xed ? 0x9f : 0xbf; // no surrogate
    return continuation(1, low, high) && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    uint8_t low = lead == 0xf0 ? 0x90 : 0x80;  // no overlong form
    uint8_t high = lead == 0xf4 ? 0x8f : 0xbf; // nothing above U+10FFFF
    return continuation(1, low, high) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

} // namespace

bool is_valid_utf8(std::string_view text) noexcept {
  while (!text.empty()) {
    size_t n = sequence_length(text);
    if (n == 0)
      return false;
    text.remove_prefix(n);
  }
  return true;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t n = sequence_length(text);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      n = 1;
    } else {
      out.append(text.substr(0, n));
    }
    text.remove_prefix(n);
  }
  return out;
}

} // namespace ks::encode
