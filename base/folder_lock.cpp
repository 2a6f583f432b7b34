// The lock is flock(2) on a file in the folder, not the file's existence: the kernel releases
// it when the process dies, however it dies (kill -9 included), so a crashed campaign never
// leaves a stale lock for its resume to trip over. The descriptor is close-on-exec, so nvcc
// and the bench workers, which the campaign starts, never inherit it and cannot keep the
// folder locked after the campaign has gone. Once held, the file is rewritten with what the
// holder says of itself, which is what a second process reports when it finds the folder busy.
// flock works per open file description: a second acquire in the same process fails too.

#include "base/folder_lock.hpp"

#include "base/text.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ks::base {

std::string folder_lock::busy_message(const std::filesystem::path& folder,
                                      std::string_view holder) {
  return folder.string() + " is in use by another kernelskill process (" +
         (holder.empty() ? std::string("it has not said which yet") : std::string(holder)) +
         "); wait for it to end, or choose another folder";
}

expected<folder_lock> folder_lock::acquire(const std::filesystem::path& folder,
                                           std::string_view name, std::string_view owner) {
  std::filesystem::path file = folder / std::string(name);
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return fail(errc::io,
                "cannot open the lock file " + file.string() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int why = errno;
    ::close(fd);
    if (why != EWOULDBLOCK)
      return fail(errc::io, "cannot lock " + file.string() + ": " + std::strerror(why));
    return fail(errc::io, busy_message(folder, trim(read_text(file).value_or(""))));
  }
  std::string text = std::string(owner) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    int why = errno;
    ::close(fd);
    return fail(errc::io,
                "cannot write the lock file " + file.string() + ": " + std::strerror(why));
  }
  return folder_lock(fd);
}

std::optional<std::string> folder_lock::holder(const std::filesystem::path& folder,
                                               std::string_view name) {
  std::filesystem::path file = folder / std::string(name);
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return std::nullopt; // no lock file: nobody has ever held it
  // A shared lock is refused while a holder has the exclusive one; taken, it is dropped with
  // the descriptor at once.
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  if (!held)
    return std::nullopt;
  return std::string(trim(read_text(file).value_or("")));
}

folder_lock::folder_lock(folder_lock&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

folder_lock& folder_lock::operator=(folder_lock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

folder_lock::~folder_lock() {
  if (fd_ >= 0)
    ::close(fd_); // closing the last descriptor of the description releases the flock
}

} // namespace ks::base
