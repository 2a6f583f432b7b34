#pragma once

// Each test runs in its own temporary directory (ccache's TestContext): created on entry,
// made the working directory, removed on exit unless KS_KEEP_TEST_DIRS is set.

#include <filesystem>
#include <string>
#include <string_view>

/// Skips the running test: prints "SKIPPED: " and the reason (a std::string) and returns from
/// the test case. The tests' main (tests/main.cpp) then exits ks::test::skip_exit_code, which
/// ctest reports as skipped, unless an assertion failed. Skip before the test checks anything,
/// or split the test: a skip says nothing ran.
#define KS_SKIP(reason)                                                                            \
  do {                                                                                             \
    ::ks::test::skip(reason);                                                                      \
    return;                                                                                        \
  } while (false)

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

/// The exit code ctest reads as "skipped": the SKIP_RETURN_CODE of every test (ccache's 125).
inline constexpr int skip_exit_code = 125;

/// Records that the running test was skipped and prints why; KS_SKIP calls it.
void skip(const std::string& reason);

/// Returns whether a test of this process was skipped.
bool skipped();

/// Returns the repository root (the tests' source tree).
std::filesystem::path source_dir();

/// Returns the folder of the content-keyed caches that tests share across runs, builds and
/// clones (nvcc's outputs, clang-tidy's clean results, the emulators' shared objects):
/// $KS_TEST_CACHE_DIR, else $XDG_CACHE_HOME/kernelskill/tests, else ~/.cache/kernelskill/tests.
/// Every entry is keyed by everything its result depends on, so a stale one is never used.
std::filesystem::path cache_dir();

/// Returns the build tree's bin/ folder (ks-bench-worker, kernelskill, ks-scripted-worker).
std::filesystem::path bin_dir();

/// Reads a whole file; empty if it cannot be read.
std::string read_file(const std::filesystem::path& path);

/// Returns `part` repeated `times` times (deep or long inputs for the parsers' limits).
std::string repeated(std::string_view part, size_t times);

} // namespace ks::test
