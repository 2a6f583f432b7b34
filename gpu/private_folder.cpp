#include "gpu/private_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

namespace ks::gpu {

namespace fs = std::filesystem;

namespace {

// Opens `path` as a folder (never through a symbolic link) and takes its lock without
// waiting; returns the descriptor, or -1 when it cannot be opened or someone holds the lock.
int lock_folder(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Gives the owner every permission on each folder below `root`, so that a candidate that
// made a folder unreadable (chmod 000) cannot keep its files from being removed.
void open_up(const fs::path& root) noexcept {
  std::error_code ec;
  ::chmod(root.c_str(), S_IRWXU);
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec))
      ::chmod(it->path().c_str(), S_IRWXU);
  }
}

void remove_tree(const fs::path& path) noexcept {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec && fs::exists(fs::symlink_status(path, ec))) {
    open_up(path);
    fs::remove_all(path, ec);
  }
}

// Checks whether a process with `pid` exists (EPERM: it does, and is someone else's).
bool process_alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

} // namespace

private_folder::private_folder(private_folder&& other) noexcept
  : path_(std::exchange(other.path_, {})), lock_fd_(std::exchange(other.lock_fd_, -1)) {}

private_folder& private_folder::operator=(private_folder&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
    lock_fd_ = std::exchange(other.lock_fd_, -1);
  }
  return *this;
}

private_folder::~private_folder() {
  remove();
}

engine::expected<private_folder> private_folder::create(const fs::path& parent,
                                                        std::string_view prefix) {
  std::string pattern =
      (parent / (std::string(prefix) + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    int err = errno;
    return engine::fail(engine::errc::io, "cannot make a private folder in " + parent.string() +
                                              ": " + std::strerror(err) +
                                              " (point $TMPDIR at a writable folder)");
  }
  private_folder folder;
  folder.path_ = pattern;
  // Unlocked, the folder would look like a leftover to a sweep once we are dead: that is the
  // point. Failing to lock costs only that protection, so it is not an error.
  folder.lock_fd_ = lock_folder(folder.path_);
  return folder;
}

void private_folder::remove() noexcept {
  if (!path_.empty()) {
    // Removed while still locked, so that no sweep races with us over its contents.
    remove_tree(path_);
    path_.clear();
  }
  if (lock_fd_ >= 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
}

int64_t sweep_private_folders(const fs::path& parent, std::string_view prefix) {
  int64_t removed = 0;
  std::error_code ec;
  fs::directory_iterator it(parent, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
      continue;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    pid_t pid = 0;
    auto [end, err] = std::from_chars(first, last, pid);
    if (err != std::errc{} || end == last || *end != '-' || pid <= 0)
      continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    if (pid == ::getpid() || process_alive(pid))
      continue;
    int fd = lock_folder(it->path());
    if (fd < 0)
      continue; // held by a live engine in another pid namespace
    remove_tree(it->path());
    ::close(fd);
    ++removed;
  }
  return removed;
}

fs::path default_temp_root() {
  std::error_code ec;
  if (const char* dir = std::getenv("TMPDIR");
      dir != nullptr && *dir == '/' && fs::is_directory(dir, ec))
    return dir;
  return "/tmp";
}

} // namespace ks::gpu
