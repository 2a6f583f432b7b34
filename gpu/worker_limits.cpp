#include "gpu/worker_limits.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace ks::gpu {

namespace {

// Lowers `resource` to `value` (soft and hard), keeping a lower hard limit where there is one.
engine::expected<void> lower(int resource, const char* name, rlim_t value) {
  struct rlimit now {};
  if (::getrlimit(resource, &now) != 0)
    now.rlim_max = RLIM_INFINITY;
  rlim_t target = now.rlim_max == RLIM_INFINITY ? value : std::min(value, now.rlim_max);
  struct rlimit next {
    target, target
  };
  if (::setrlimit(resource, &next) != 0) {
    int err = errno;
    return engine::fail(engine::errc::subprocess, std::string("cannot set ") + name + " to " +
                                                      std::to_string(target) + ": " +
                                                      std::strerror(err));
  }
  return {};
}

} // namespace

int64_t count_user_tasks(uint32_t uid) {
  namespace fs = std::filesystem;
  int64_t tasks = 0;
  std::error_code ec;
  fs::directory_iterator it("/proc", ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0 || st.st_uid != uid)
      continue;
    // A task folder's link count is its threads plus "." and "..".
    struct stat task {};
    if (::stat((it->path() / "task").c_str(), &task) == 0 && task.st_nlink > 2)
      tasks += static_cast<int64_t>(task.st_nlink) - 2;
    else
      tasks += 1;
  }
  return tasks;
}

engine::expected<void> apply_worker_limits(const worker_limits& limits) {
  if (auto ok = lower(RLIMIT_CORE, "RLIMIT_CORE", 0); !ok)
    return ok;
  if (auto ok = lower(RLIMIT_FSIZE, "RLIMIT_FSIZE", static_cast<rlim_t>(limits.max_file_bytes));
      !ok)
    return ok;
  int64_t tasks = count_user_tasks(::getuid());
  return lower(RLIMIT_NPROC, "RLIMIT_NPROC",
               static_cast<rlim_t>(std::max<int64_t>(tasks, 1) + limits.process_headroom));
}

} // namespace ks::gpu
