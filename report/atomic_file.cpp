#include "report/atomic_file.hpp"

#include <unistd.h>

#include <fstream>

namespace ks::report {

namespace fs = std::filesystem;

engine::expected<void> write_atomically(const fs::path& path, const std::string& text) {
  static int64_t counter = 0;
  fs::path temporary =
      path.parent_path() / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()) +
                            "-" + std::to_string(counter++));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      return engine::fail(engine::errc::io, "cannot write " + temporary.string());
    }
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return engine::fail(engine::errc::io, "cannot rename " + temporary.string() + " to " +
                                              path.string() + ": " + ec.message());
  }
  return {};
}

} // namespace ks::report
