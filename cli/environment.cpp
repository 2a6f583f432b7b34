#include "cli/environment.hpp"

#include "cli/command_result.hpp"
#include "gpu/worker_client.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <system_error>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

bool has_abi_header(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "kernelskill" / "abi.h", ec);
}

} // namespace

fs::path cache_dir_or_default(const fs::path& given) {
  if (!given.empty())
    return given;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return fs::path(xdg) / "kernelskill";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return fs::path(home) / ".cache" / "kernelskill";
  return fs::temp_directory_path() / "kernelskill-cache";
}

gpu::worker_options standalone_worker(const fs::path& worker, int32_t device, bool sandbox,
                                      const fs::path& cache_dir, double job_timeout_s) {
  gpu::worker_options w;
  w.executable = worker_or_default(worker);
  w.device = device;
  w.boundary.sandbox = sandbox ? gpu::sandbox_mode::bubblewrap : gpu::sandbox_mode::off;
  w.boundary.requested_by = "--sandbox";
  w.boundary.readable = {fs::absolute(cache_dir_or_default(cache_dir))};
  if (job_timeout_s > 0) {
    auto limit = std::chrono::milliseconds(static_cast<int64_t>(job_timeout_s * 1000));
    w.info_timeout = w.calibrate_timeout = w.verify_timeout = w.time_timeout = w.profile_timeout =
        limit;
  }
  return w;
}

fs::path include_dir_for_compiler() {
  if (const char* env = std::getenv("KS_INCLUDE_DIR"); env != nullptr && has_abi_header(env))
    return {};
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && has_abi_header(exe.parent_path() / ".." / "include"))
    return {};
#ifdef KS_SOURCE_DIR
  // A binary run from its build tree: the header is still in the sources it was built from.
  fs::path source = fs::path(KS_SOURCE_DIR) / "gpu" / "include";
  if (has_abi_header(source))
    return source;
#endif
  return {};
}

fs::path worker_or_default(const fs::path& given) {
  return given.empty() ? gpu::default_worker_executable() : given;
}

void progress(const std::string& line) {
  std::cerr << "kernelskill: " << line << std::endl;
}

void warn(const std::string& line) {
  std::cerr << "kernelskill: warning: " << line << std::endl;
}

std::string format_ms(double ms) {
  char text[64];
  // Fixed decimals by magnitude, so that times in one report line up and compare at a glance.
  double magnitude = std::fabs(ms);
  if (magnitude == 0)
    return "0 ms";
  if (magnitude >= 100)
    std::snprintf(text, sizeof text, "%.0f ms", ms);
  else if (magnitude >= 10)
    std::snprintf(text, sizeof text, "%.1f ms", ms);
  else if (magnitude >= 1)
    std::snprintf(text, sizeof text, "%.3f ms", ms);
  else if (magnitude >= 0.01)
    std::snprintf(text, sizeof text, "%.4f ms", ms);
  else
    std::snprintf(text, sizeof text, "%.3g ms", ms);
  return text;
}

std::string format_number(double value, int digits) {
  char text[64];
  // Whole numbers too long for `digits` stay whole ("61234", not "6.123e+04").
  double magnitude = std::fabs(value);
  if (magnitude >= std::pow(10.0, digits) && magnitude < 1e15)
    std::snprintf(text, sizeof text, "%.0f", value);
  else
    std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[64];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.3g %s", bytes, units[unit]);
  return text;
}

} // namespace ks::cli
