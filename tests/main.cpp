// The tests' main: Catch2's session, then ctest's skip code. A test that cannot check what it
// is for on this machine (no nvcc, no sandbox, a GPU where it needs none) says why with
// KS_SKIP (tests/test_context.hpp) and returns; this main then exits 125, which every test's
// SKIP_RETURN_CODE makes ctest report as skipped, unless an assertion failed, which fails it.
// ctest runs one test case per process (catch_discover_tests), so a skip is that test's alone.

#include "tests/test_context.hpp"

// This file writes main() itself: the define must come before Catch's header.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  int failed = Catch::Session().run(argc, argv);
  if (failed == 0 && ks::test::skipped())
    return ks::test::skip_exit_code;
  return failed;
}
