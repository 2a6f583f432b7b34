#include "test_context.hpp"

#include "base/text.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ks::test {

test_context::test_context() : previous_(std::filesystem::current_path()) {
  auto base = std::filesystem::temp_directory_path();
  std::string pattern = (base / "ks-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("test_context: mkdtemp failed in " + base.string());
  dir_ = pattern;
  std::filesystem::current_path(dir_);
}

test_context::~test_context() {
  std::error_code ec;
  std::filesystem::current_path(previous_, ec);
  if (std::getenv("KS_KEEP_TEST_DIRS") == nullptr)
    std::filesystem::remove_all(dir_, ec);
}

std::filesystem::path test_context::write(const std::string& name, const std::string& text) const {
  auto path = dir_ / name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

namespace {

bool skip_requested = false;

} // namespace

void skip(const std::string& reason) {
  skip_requested = true;
  std::printf("SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
}

bool skipped() {
  return skip_requested;
}

std::filesystem::path source_dir() {
  // The environment wins so that an installed test binary runs against a copied tree.
  if (const char* dir = std::getenv("KS_SOURCE_DIR"))
    return dir;
  return KS_SOURCE_DIR;
}

std::filesystem::path cache_dir() {
  // The same rule as tests/lint/check_tidy.sh's.
  if (const char* dir = std::getenv("KS_TEST_CACHE_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return std::filesystem::path(xdg) / "kernelskill" / "tests";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::filesystem::path(home) / ".cache" / "kernelskill" / "tests";
  return std::filesystem::temp_directory_path() / "kernelskill-tests-cache";
}

std::filesystem::path bin_dir() {
  if (const char* dir = std::getenv("KS_BIN_DIR"))
    return dir;
  return std::filesystem::path(KS_BINARY_DIR) / "bin";
}

std::string read_file(const std::filesystem::path& path) {
  return base::read_text(path).value_or("");
}

std::string repeated(std::string_view part, size_t times) {
  std::string out;
  out.reserve(part.size() * times);
  for (size_t i = 0; i < times; ++i)
    out += part;
  return out;
}

} // namespace ks::test
