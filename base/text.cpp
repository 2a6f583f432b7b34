#include "base/text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace ks::base {

namespace {

/// Closes a descriptor when it goes out of scope.
struct descriptor {
  int fd;
  ~descriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

enum class read_outcome { whole, too_large, failed };

// Appends what `fd` holds to `out`, reading at most one byte past `max_bytes`.
read_outcome read_all(int fd, int64_t max_bytes, std::string& out) {
  std::array<char, 65536> chunk{};
  while (true) {
    ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return read_outcome::failed;
    if (n == 0)
      return read_outcome::whole;
    out.append(chunk.data(), static_cast<size_t>(n));
    if (static_cast<int64_t>(out.size()) > max_bytes)
      return read_outcome::too_large;
  }
}

} // namespace

std::optional<std::string> read_text(const std::filesystem::path& path, int64_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return std::nullopt;
  expected<std::string> text = read_file(path, max_bytes, "file");
  if (!text)
    return std::nullopt;
  return std::move(*text);
}

expected<std::string> read_file(const std::filesystem::path& path, int64_t max_bytes,
                                std::string_view what) {
  const std::string file = path.string();
  auto too_large = [&] {
    return fail(errc::invalid_input, file + ": holds more than " + describe_size(max_bytes) +
                                         ", too much for a " + std::string(what));
  };
  // Non-blocking only for the open: a named pipe without a writer would block it forever.
  descriptor in{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (in.fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return fail(errc::not_found, file + ": " + std::string(what) + " not found");
    if (errno == EISDIR)
      return fail(errc::io, file + ": is a folder, not a " + std::string(what));
    return fail(errc::io,
                file + ": cannot read " + std::string(what) + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(in.fd, &st) != 0)
    return fail(errc::io,
                file + ": cannot read " + std::string(what) + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return fail(errc::io, file + ": is a folder, not a " + std::string(what));
  if (S_ISREG(st.st_mode) && st.st_size > max_bytes)
    return too_large();
  int flags = ::fcntl(in.fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(in.fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  if (S_ISREG(st.st_mode))
    text.reserve(static_cast<size_t>(st.st_size));
  switch (read_all(in.fd, max_bytes, text)) {
  case read_outcome::whole:
    return text;
  case read_outcome::too_large:
    return too_large();
  case read_outcome::failed:
    break;
  }
  return fail(errc::io, file + ": cannot read " + std::string(what) + ": " + std::strerror(errno));
}

std::string describe_size(int64_t bytes) {
  constexpr int64_t kib = 1024;
  constexpr int64_t mib = kib * 1024;
  if (bytes >= mib && bytes % mib == 0)
    return std::to_string(bytes / mib) + " MiB";
  if (bytes >= kib && bytes % kib == 0)
    return std::to_string(bytes / kib) + " KiB";
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

std::string_view trim(std::string_view text) noexcept {
  auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && blank(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && blank(text.back()))
    text.remove_suffix(1);
  return text;
}

} // namespace ks::base
