#include "gpu/host_fault.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace ks::gpu {

namespace fs = std::filesystem;

namespace {

// What a tool prints when a write fails: strerror's words of the errors that mean the disk,
// and the tools' own words for a file they could not write.
constexpr std::array<std::string_view, 11> write_failure_words = {
    "No space left on device",    // ENOSPC
    "Disk quota exceeded",        // EDQUOT
    "Read-only file system",      // EROFS
    "Input/output error",         // EIO
    "Could not write",            // nvcc, ptxas, fatbinary
    "could not write",            //
    "Could not open output file", // nvcc, ptxas
    "error writing to",           // gcc: "error writing to /tmp/ccX.s: No space left on device"
    "cannot create temporary file",
    "Cannot create temporary file",
    "write error",
};

std::string mib(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

std::atomic<uint64_t> probe_counter{0};

// Creates, writes and removes a probe file of 64 KiB in `folder`; returns why it failed.
std::optional<std::string> probe(const fs::path& folder) {
  fs::path file =
      folder / (".ks-probe-" + std::to_string(::getpid()) + "-" + std::to_string(probe_counter++));
  int fd = ::open(file.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0)
    return "cannot create a file in " + folder.string() + ": " + std::strerror(errno);
  static const std::array<char, size_t{64} * 1024> block{};
  std::optional<std::string> failed;
  size_t done = 0;
  while (done < block.size()) {
    ssize_t n = ::write(fd, block.data() + done, block.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      failed = "cannot write a file in " + folder.string() + ": " +
               (n < 0 ? std::strerror(errno) : "nothing written");
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && !failed)
    failed = "cannot write a file in " + folder.string() + ": " + std::strerror(errno);
  ::unlink(file.c_str());
  return failed;
}

} // namespace

std::optional<std::string> write_failure_line(std::string_view diagnostics,
                                              std::string_view source_name) {
  while (!diagnostics.empty()) {
    size_t end = diagnostics.find('\n');
    std::string_view line = diagnostics.substr(0, end);
    diagnostics = end == std::string_view::npos ? std::string_view{} : diagnostics.substr(end + 1);
    std::string_view body = line;
    while (!body.empty() && (body.front() == ' ' || body.front() == '\t'))
      body.remove_prefix(1);
    // The source's own diagnostics (#error, static_assert, #pragma message) say what it wants.
    if (!source_name.empty() && body.substr(0, source_name.size()) == source_name)
      continue;
    for (std::string_view words : write_failure_words)
      if (line.find(words) != std::string_view::npos) {
        if (!line.empty() && line.back() == '\r')
          line.remove_suffix(1);
        return std::string(line);
      }
  }
  return std::nullopt;
}

std::optional<std::string> disk_fault(const std::vector<fs::path>& folders,
                                      int64_t min_free_bytes) {
  for (const fs::path& folder : folders) {
    std::error_code ec;
    if (folder.empty() || !fs::is_directory(folder, ec))
      continue;
    struct statvfs fs_info {};
    if (::statvfs(folder.c_str(), &fs_info) == 0) {
      uint64_t free = static_cast<uint64_t>(fs_info.f_bavail) * fs_info.f_frsize;
      if (min_free_bytes > 0 && free < static_cast<uint64_t>(min_free_bytes))
        return folder.string() + " has " + mib(free) + " free, less than the " +
               mib(static_cast<uint64_t>(min_free_bytes)) + " a compile needs";
    }
    if (auto failed = probe(folder))
      return failed;
  }
  return std::nullopt;
}

bool outside_signal(int signal) noexcept {
  switch (signal) {
  case 0:
  case SIGSEGV:
  case SIGBUS:
  case SIGFPE:
  case SIGILL:
  case SIGABRT:
  case SIGTRAP:
  case SIGSYS:
  case SIGXCPU:
  case SIGXFSZ:
    return false;
  default:
    return true;
  }
}

bool device_lost_error(std::string_view cuda_error) noexcept {
  static constexpr std::array<std::string_view, 7> lost = {
      "cudaErrorDevicesUnavailable",   "cudaErrorNoDevice",
      "cudaErrorECCUncorrectable",     "cudaErrorSystemNotReady",
      "cudaErrorSystemDriverMismatch", "cudaErrorInsufficientDriver",
      "cudaErrorDeviceNotLicensed"};
  for (std::string_view name : lost)
    if (cuda_error == name)
      return true;
  return false;
}

} // namespace ks::gpu
