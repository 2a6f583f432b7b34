// Faults of the host told from a candidate's (gpu/host_fault.hpp): the words of a failed write
// in a tool's own lines, the disk's evidence, the compile service's use of both with a stand-in
// nvcc (a script written by each test, no CUDA needed).

#include "gpu/compiler.hpp"
#include "gpu/host_fault.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ks::gpu::compile_request;
using ks::gpu::compile_result;
using ks::gpu::compiler;
using ks::gpu::compiler_options;

namespace {

// A stand-in for nvcc: answers --version; a compile writes -o OUT, unless the file `full`
// exists (it then fails as a full temporary folder makes gcc fail) or `kill_once` exists (it
// removes that file and kills itself with SIGKILL, as the OOM killer would). Each compile
// appends a line to `runs`. A source holding KS_PLANTED_ERROR fails with that word in the
// source's own diagnostic, as `#error No space left on device` would.
fs::path write_stand_in(const ks::test::test_context& ctx) {
  fs::path script = ctx.write("nvcc.sh", R"(#!/usr/bin/env bash
here=$(dirname "$0")
out=
input=
while [ $# -gt 0 ]; do
  case "$1" in
    --version) echo "stand-in nvcc for host_fault_test"; exit 0 ;;
    -o) out=$2; shift ;;
    -I|-Xcompiler|-Xptxas|-cudart) shift ;;
    *.cu) input=$1 ;;
  esac
  shift
done
echo run >>"$here/runs"
if [ -e "$here/kill_once" ]; then
  rm -f "$here/kill_once"
  kill -KILL $$
fi
if grep -q KS_PLANTED_ERROR "$input"; then
  echo "$input(2): error: #error directive: No space left on device" >&2
  exit 1
fi
if [ -e "$here/full" ]; then
  echo "cc1plus: fatal error: error writing to /tmp/ccQ2fAKE.s: No space left on device" >&2
  echo "compilation terminated." >&2
  exit 1
fi
: >"$out"
exit 0
)");
  fs::permissions(script, fs::perms::owner_all, fs::perm_options::add);
  return script;
}

compiler make(const ks::test::test_context& ctx, int64_t min_free_bytes) {
  compiler_options options;
  options.nvcc = write_stand_in(ctx);
  options.cache_dir = ctx.dir() / "cache";
  options.include_dir = ks::test::source_dir() / "gpu" / "include";
  options.min_free_bytes = min_free_bytes;
  auto made = compiler::create(options);
  if (!made)
    FAIL("cannot create the compiler: " << made.error().message());
  return std::move(*made);
}

// More free space than any disk has: every folder counts as full.
constexpr int64_t any_disk_is_full = int64_t{1} << 60;

int runs(const ks::test::test_context& ctx) {
  std::string text = ks::test::read_file(ctx.dir() / "runs");
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

fs::path entry_of(const ks::test::test_context& ctx, const compile_result& r) {
  return ctx.dir() / "cache" / "compile" / r.key.substr(0, 2) / r.key;
}

const char* const source = "#include <kernelskill/abi.h>\nint x;\n";

} // namespace

TEST_CASE("a failed write is found in a tool's own lines, never in the source's diagnostics",
          "[host_fault]") {
  using ks::gpu::write_failure_line;
  CHECK(write_failure_line("ptxas info: ok\ncc1plus: fatal error: error writing to /tmp/a.s: No "
                           "space left on device\ncompilation terminated.\n") ==
        "cc1plus: fatal error: error writing to /tmp/a.s: No space left on device");
  CHECK(write_failure_line("nvcc fatal   : Could not open output file 'kernel.so'\n").has_value());
  CHECK(write_failure_line("/usr/bin/ld: final link failed: Disk quota exceeded\n").has_value());
  CHECK(write_failure_line("x: Read-only file system\n").has_value());
  CHECK(write_failure_line("fatbinary: Input/output error\n").has_value());
  // What the candidate's #error, static_assert or #pragma message says is its own.
  CHECK_FALSE(
      write_failure_line("kernel.cu(3): error: #error directive: No space left on device\n"));
  CHECK_FALSE(write_failure_line("kernel.cu:3:2: error: #error No space left on device\n"));
  CHECK_FALSE(write_failure_line("my.cu:3: error: No space left on device\n", "my.cu"));
  CHECK_FALSE(write_failure_line("kernel.cu(7): error: identifier \"x\" is undefined\n"));
  CHECK_FALSE(write_failure_line(""));
}

TEST_CASE("the disk's evidence: free space under the threshold, or a probe that cannot be "
          "written",
          "[host_fault]") {
  ks::test::test_context ctx;
  fs::create_directories(ctx.dir() / "folder");
  CHECK_FALSE(ks::gpu::disk_fault({ctx.dir() / "folder"}, 0).has_value());
  auto full = ks::gpu::disk_fault({ctx.dir() / "folder"}, any_disk_is_full);
  REQUIRE(full.has_value());
  CHECK_THAT(*full, Contains((ctx.dir() / "folder").string()));
  CHECK_THAT(*full, Contains("MiB free"));
  // The probe leaves nothing behind.
  CHECK(fs::is_empty(ctx.dir() / "folder"));
  // A folder that is not there is no evidence either way.
  CHECK_FALSE(ks::gpu::disk_fault({ctx.dir() / "missing"}, any_disk_is_full).has_value());
}

TEST_CASE("signals a candidate's code raises are its own, others may come from outside",
          "[host_fault]") {
  CHECK(ks::gpu::outside_signal(SIGKILL));
  CHECK(ks::gpu::outside_signal(SIGTERM));
  CHECK(ks::gpu::outside_signal(SIGHUP));
  CHECK_FALSE(ks::gpu::outside_signal(0));
  CHECK_FALSE(ks::gpu::outside_signal(SIGSEGV));
  CHECK_FALSE(ks::gpu::outside_signal(SIGBUS));
  CHECK_FALSE(ks::gpu::outside_signal(SIGFPE));
  CHECK_FALSE(ks::gpu::outside_signal(SIGABRT));
  CHECK(ks::gpu::device_lost_error("cudaErrorDevicesUnavailable"));
  CHECK(ks::gpu::device_lost_error("cudaErrorNoDevice"));
  CHECK_FALSE(ks::gpu::device_lost_error("cudaErrorIllegalAddress"));
  CHECK_FALSE(ks::gpu::device_lost_error(""));
}

TEST_CASE("nvcc failing to write on a full disk is the host's fault, not cached, and with room it "
          "is the candidate's compile error",
          "[host_fault][compiler]") {
  ks::test::test_context ctx;
  ctx.write("full", "");
  compiler cc = make(ctx, any_disk_is_full);
  compile_result r = cc.compile(compile_request{source, "cand.cu", {}});
  CHECK_FALSE(r.ok);
  CHECK(r.host_fault);
  CHECK_THAT(r.diagnostics, Contains("No space left on device"));
  CHECK_THAT(r.diagnostics, Contains("the host cannot take the compile's files"));
  CHECK_FALSE(fs::exists(entry_of(ctx, r)));
  // Asked again, nvcc runs again: nothing of the fault was kept.
  compile_result again = cc.compile(compile_request{source, "cand.cu", {}});
  CHECK(again.host_fault);
  CHECK(runs(ctx) == 2);

  // The disk has room (no free-space threshold) and takes the probe: the same words are a
  // compile error, cached as one.
  ks::test::test_context roomy;
  roomy.write("full", "");
  compiler room = make(roomy, 0);
  compile_result error = room.compile(compile_request{source, "cand.cu", {}});
  CHECK_FALSE(error.ok);
  CHECK_FALSE(error.host_fault);
  CHECK(fs::exists(entry_of(roomy, error)));
}

TEST_CASE("a source's own diagnostic that names a full disk is its compile error",
          "[host_fault][compiler]") {
  ks::test::test_context ctx;
  compiler cc = make(ctx, any_disk_is_full);
  compile_result r =
      cc.compile(compile_request{std::string(source) + "#error KS_PLANTED_ERROR\n", "c.cu", {}});
  CHECK_FALSE(r.ok);
  CHECK_FALSE(r.host_fault);
  CHECK_THAT(r.diagnostics, Contains("No space left on device"));
}

TEST_CASE("a cached failure that says a write failed is compiled again once the disk is fine",
          "[host_fault][compiler]") {
  ks::test::test_context ctx;
  ctx.write("full", "");
  // Cached as a compile error, as an engine that did not tell host faults apart stored it.
  compiler cc = make(ctx, 0);
  compile_result stored = cc.compile(compile_request{source, "cand.cu", {}});
  REQUIRE_FALSE(stored.ok);
  REQUIRE(fs::exists(entry_of(ctx, stored)));
  fs::remove(ctx.dir() / "full");
  compile_result fine = cc.compile(compile_request{source, "cand.cu", {}});
  CHECK(fine.ok);
  CHECK_FALSE(fine.cached);
  CHECK(runs(ctx) == 2);
}

TEST_CASE("nvcc killed by a signal once is run again, and our own unwritable cache is the host's",
          "[host_fault][compiler]") {
  ks::test::test_context ctx;
  ctx.write("kill_once", "");
  compiler cc = make(ctx, 0);
  compile_result r = cc.compile(compile_request{source, "cand.cu", {}});
  CHECK(r.ok);
  CHECK(runs(ctx) == 2);
  CHECK_FALSE(fs::exists(ctx.dir() / "kill_once"));

  // The cache folder is a file: our own write fails, whatever the source.
  ks::test::test_context blocked;
  compiler_options options;
  options.nvcc = write_stand_in(blocked);
  options.cache_dir = blocked.write("cache", "not a folder");
  options.include_dir = ks::test::source_dir() / "gpu" / "include";
  auto made = compiler::create(options);
  REQUIRE(made.has_value());
  compile_result refused = made->compile(compile_request{source, "cand.cu", {}});
  CHECK_FALSE(refused.ok);
  CHECK(refused.host_fault);
  CHECK_THAT(refused.diagnostics, Contains("cannot write to the compile cache"));
}
