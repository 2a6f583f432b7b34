#pragma once

// Each test runs in its own temporary directory (ccache's TestContext): created on entry,
// made the working directory, removed on exit unless KS_KEEP_TEST_DIRS is set.

#include <filesystem>
#include <string>
#include <string_view>

namespace ks::test {

/// Owns a fresh temporary directory for one test and makes it the working directory.
class test_context {
public:
  test_context();
  ~test_context();
  test_context(const test_context&) = delete;
  test_context& operator=(const test_context&) = delete;

  /// Returns the directory.
  const std::filesystem::path& dir() const noexcept { return dir_; }

  /// Writes `text` to `name` inside the directory and returns its path.
  std::filesystem::path write(const std::string& name, const std::string& text) const;

private:
  std::filesystem::path dir_;
  std::filesystem::path previous_;
};

/// Returns the repository root (the tests' source tree).
std::filesystem::path source_dir();

/// Returns the build tree's bin/ folder (ks-bench-worker, kernelskill, ks-scripted-worker).
std::filesystem::path bin_dir();

/// Reads a whole file; empty if it cannot be read.
std::string read_file(const std::filesystem::path& path);

/// Returns `part` repeated `times` times (deep or long inputs for the parsers' limits).
std::string repeated(std::string_view part, size_t times);

} // namespace ks::test
