// The bench worker's account of the libraries its kernels bring in (gpu/library_watch.hpp),
// driven as bench_session.cu drives it, with host-only stand-ins (tests/gpu/stand_ins/): a
// "vendor library", copied under a fresh name per test so that each load is a new one; a
// "candidate" that loads a library when called; one linked against the vendor library.

#include "gpu/library_watch.hpp"
#include "gpu/loaded_objects.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using namespace ks;
using Catch::Matchers::Contains;

namespace {

using load_fn = int (*)(const char*);

std::string stand_in(const std::string& name) {
  return (test::bin_dir() / name).string();
}

// Copies the vendor stand-in into the test's folder as `name`: a library not loaded yet.
std::string fresh_vendor_library(const test::test_context& ctx, const std::string& name) {
  fs::path copy = ctx.dir() / name;
  fs::copy_file(stand_in("libks_test_vendor.so"), copy);
  return copy.string();
}

bool is_loaded(const std::string& file_name) {
  auto objects = gpu::loaded_objects();
  return std::any_of(objects.begin(), objects.end(),
                     [&](const std::string& o) { return fs::path(o).filename() == file_name; });
}

// Opens the loader stand-in as the job's kernel and returns its function `symbol`.
load_fn open_loader(gpu::library_watch& watch, const char* symbol) {
  auto handle = watch.open(stand_in("libks_test_loader.so"));
  REQUIRE(handle.has_value());
  auto fn = reinterpret_cast<load_fn>(dlsym(*handle, symbol));
  REQUIRE(fn != nullptr);
  return fn;
}

// Calls `fn(library)` as the worker calls a kernel, and returns the watch's verdict.
tl::expected<void, gpu::failure> call(gpu::library_watch& watch, load_fn fn,
                                      const std::string& library) {
  watch.before_call();
  REQUIRE(fn(library.c_str()) == 0);
  return watch.after_call(stand_in("libks_test_loader.so"));
}

} // namespace

TEST_CASE("a candidate that loads a vendor library during its call is refused, naming it",
          "[vendor]") {
  test::test_context ctx;
  std::string library = fresh_vendor_library(ctx, "libks_vendor_call.so");
  gpu::library_watch watch;
  watch.start_job(stand_in("libks_test_loader.so"), gpu::vendor_policy::refuse);
  load_fn load = open_loader(watch, "ks_test_load");
  CHECK_FALSE(watch.tainted());

  auto verdict = call(watch, load, library);
  REQUIRE_FALSE(verdict.has_value());
  CHECK(verdict.error().kind == gpu::failure_kind::vendor_library);
  CHECK_THAT(verdict.error().message, Contains("ks_vendor_call (" + library + ")") &&
                                          Contains("during a call of its ks_forward"));
  CHECK(watch.tainted()); // it is in the process now: the worker must go

  // Refused once, refused again, though the library is loaded already.
  watch.start_job(stand_in("libks_test_loader.so"), gpu::vendor_policy::refuse);
  auto again = watch.after_call(stand_in("libks_test_loader.so"));
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().kind == gpu::failure_kind::vendor_library);
}

TEST_CASE("an allowed vendor library is recorded against the candidate that loaded it",
          "[vendor]") {
  test::test_context ctx;
  std::string library = fresh_vendor_library(ctx, "libks_vendor_allowed.so");
  gpu::library_watch watch;
  watch.start_job(stand_in("libks_test_loader.so"), gpu::vendor_policy::allow);
  load_fn load = open_loader(watch, "ks_test_load");
  REQUIRE(call(watch, load, library).has_value());
  REQUIRE(watch.finish_job().has_value());
  CHECK(watch.used_by(stand_in("libks_test_loader.so")) == std::vector<std::string>{library});
  CHECK(watch.tainted());
}

TEST_CASE("a candidate linked against a vendor library is refused before it is loaded",
          "[vendor]") {
  const bool loaded_before = is_loaded("libks_test_linked.so");
  gpu::library_watch watch;
  watch.start_job(stand_in("libks_test_linked.so"), gpu::vendor_policy::refuse);
  auto handle = watch.open(stand_in("libks_test_linked.so"));
  REQUIRE_FALSE(handle.has_value());
  CHECK(handle.error().kind == gpu::failure_kind::vendor_library);
  CHECK_THAT(handle.error().message,
             Contains("ks_test_vendor (libks_test_vendor.so)") && Contains("DT_NEEDED"));
  CHECK(is_loaded("libks_test_linked.so") == loaded_before); // not opened
  CHECK_FALSE(watch.tainted());                              // nothing of it was loaded
}

TEST_CASE("an allowed linked vendor library is named by the path it was loaded from", "[vendor]") {
  gpu::library_watch watch;
  watch.start_job(stand_in("libks_test_linked.so"), gpu::vendor_policy::allow);
  auto handle = watch.open(stand_in("libks_test_linked.so"));
  REQUIRE(handle.has_value());
  auto used = watch.used_by(stand_in("libks_test_linked.so"));
  REQUIRE(used.size() == 1);
  INFO(used[0]);
  // The loader may have bound the name to a copy another test loaded (by its soname).
  CHECK(fs::path(used[0]).is_absolute());
  CHECK(watch.tainted());
}

TEST_CASE("what the reference loads is the worker's own, and taints nothing", "[vendor]") {
  test::test_context ctx;
  std::string library = fresh_vendor_library(ctx, "libks_vendor_reference.so");
  gpu::library_watch watch;
  // A job whose untrusted kernel is another object: the loader runs as the reference.
  watch.start_job(stand_in("libks_test_vendor.so"), gpu::vendor_policy::refuse);
  load_fn load = open_loader(watch, "ks_test_load");
  REQUIRE(call(watch, load, library).has_value());
  CHECK_FALSE(watch.tainted());
  REQUIRE(watch.finish_job().has_value());
}

TEST_CASE("a vendor library loaded outside the candidate's calls is blamed on it at the end "
          "of the job",
          "[vendor]") {
  test::test_context ctx;
  std::string library = fresh_vendor_library(ctx, "libks_vendor_thread.so");
  gpu::library_watch watch;
  watch.start_job(stand_in("libks_test_loader.so"), gpu::vendor_policy::refuse);
  (void)open_loader(watch, "ks_test_load");
  // As a thread of the candidate's would, between two calls.
  REQUIRE(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr);
  watch.before_call();
  REQUIRE(watch.after_call(stand_in("libks_test_loader.so")).has_value());
  auto verdict = watch.finish_job();
  REQUIRE_FALSE(verdict.has_value());
  CHECK(verdict.error().kind == gpu::failure_kind::vendor_library);
  CHECK_THAT(verdict.error().message, Contains(library) && Contains("outside its calls"));
  CHECK(watch.tainted());
}

TEST_CASE("a candidate that unloads what it loaded during its call is refused even where "
          "vendor libraries are allowed",
          "[vendor]") {
  test::test_context ctx;
  std::string library = fresh_vendor_library(ctx, "libks_vendor_hidden.so");
  gpu::library_watch watch;
  watch.start_job(stand_in("libks_test_loader.so"), gpu::vendor_policy::allow);
  load_fn load_and_unload = open_loader(watch, "ks_test_load_and_unload");
  auto verdict = call(watch, load_and_unload, library);
  REQUIRE_FALSE(verdict.has_value());
  CHECK(verdict.error().kind == gpu::failure_kind::vendor_library);
  CHECK_THAT(verdict.error().message, Contains("unloaded them before it returned"));
  CHECK_FALSE(is_loaded("libks_vendor_hidden.so"));
}

TEST_CASE("a candidate that loads nothing passes, and what the worker loads between its calls "
          "is not charged to it",
          "[vendor]") {
  test::test_context ctx;
  gpu::library_watch watch;
  watch.start_job(stand_in("libks_test_loader.so"), gpu::vendor_policy::refuse);
  load_fn load = open_loader(watch, "ks_test_load");
  watch.before_call();
  REQUIRE(watch.after_call(stand_in("libks_test_loader.so")).has_value());
  // The worker's own loads between calls (CUPTI, say) are allowed libraries; here, a system
  // one of the allowlist that may or may not be loaded yet.
  (void)dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  watch.before_call();
  REQUIRE(load("libm.so.6") == 0); // already loaded: nothing new
  REQUIRE(watch.after_call(stand_in("libks_test_loader.so")).has_value());
  REQUIRE(watch.finish_job().has_value());
  CHECK(watch.used_by(stand_in("libks_test_loader.so")).empty());
  CHECK_FALSE(watch.tainted());
}
