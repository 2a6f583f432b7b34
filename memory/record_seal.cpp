#include "memory/record_seal.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ks::memory::seal {

namespace {

constexpr std::string_view prefix = "xxh3-64:";
constexpr size_t hex_digits = 16;
constexpr size_t trailer_size = 1 + prefix.size() + hex_digits; // NUL, prefix, digits

uint64_t checksum(std::string_view key, std::string_view body) {
  const XXH64_hash_t seed = XXH3_64bits(key.data(), key.size());
  return XXH3_64bits_withSeed(body.data(), body.size(), seed);
}

std::string hex(uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(hex_digits, '0');
  for (size_t i = hex_digits; i-- > 0; v >>= 4)
    out[i] = digits[v & 0xf];
  return out;
}

} // namespace

std::string sealed(std::string_view key, std::string_view body) {
  std::string out;
  out.reserve(body.size() + trailer_size);
  out.append(body);
  out += '\0';
  out.append(prefix);
  out += hex(checksum(key, body));
  return out;
}

tl::expected<opened, std::string> open(std::string_view key, std::string_view value, rule r) {
  const size_t nul = value.find('\0');
  if (nul == std::string_view::npos) {
    if (r == rule::optional)
      return opened{value, false};
    return tl::unexpected(std::string("it carries no checksum, which every record of this store "
                                      "has: its end was cut off or changed"));
  }
  std::string_view trailer = value.substr(nul + 1);
  if (value.size() - nul != trailer_size || !trailer.starts_with(prefix))
    return tl::unexpected(std::string("its checksum trailer is damaged"));
  std::string_view body = value.substr(0, nul);
  const std::string expected = hex(checksum(key, body));
  if (trailer.substr(prefix.size()) != expected)
    return tl::unexpected("its checksum does not match its contents (" +
                          std::string(checksum_name) + " " + expected + " computed, " +
                          std::string(trailer.substr(prefix.size())) +
                          " stored): it was changed after it was written");
  return opened{body, true};
}

} // namespace ks::memory::seal
