#include "base/writable_folder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace ks::base {

namespace fs = std::filesystem;

namespace {

// Creates and drops a file in the folder `at`; returns errno's value when it cannot.
int try_create_in(const fs::path& at) {
  int fd = ::open(at.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd); // unnamed: gone with its descriptor
    return 0;
  }
  // A file system (or kernel) without unnamed files says so in one of these; any other error
  // is the folder's answer.
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
    return errno;
  std::string name = (at / ".kernelskill-probe-XXXXXX").string();
  fd = ::mkstemp(name.data());
  if (fd < 0)
    return errno;
  ::unlink(name.c_str());
  ::close(fd);
  return 0;
}

} // namespace

std::optional<std::string> cannot_create_in(const fs::path& folder) {
  std::error_code ec;
  fs::path at = fs::absolute(folder, ec);
  if (ec)
    at = folder;
  while (!at.empty() && !fs::exists(at, ec)) {
    if (at == at.parent_path())
      break;
    at = at.parent_path();
  }
  if (!fs::is_directory(at, ec))
    return at.string() + " is not a folder";
  if (int error = try_create_in(at); error != 0)
    return "cannot create a file in " + at.string() + ": " + std::strerror(error);
  return std::nullopt;
}

} // namespace ks::base
