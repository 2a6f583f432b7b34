#include "gpu/loaded_objects.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace ks;

namespace {

fs::path stand_in(const std::string& name) {
  return test::bin_dir() / name;
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Returns the loaded object whose file name starts with `prefix` ("libstdc++.so"), or "".
std::string loaded_named(const std::string& prefix) {
  for (const std::string& name : gpu::loaded_objects())
    if (fs::path(name).filename().string().rfind(prefix, 0) == 0)
      return name;
  return {};
}

} // namespace

TEST_CASE("the objects loaded in this process are listed, and a new one is counted and listed",
          "[vendor]") {
  test::test_context ctx;
  auto before = gpu::loaded_objects();
  CHECK_FALSE(loaded_named("libc.so").empty());
  CHECK(std::none_of(before.begin(), before.end(),
                     [](const std::string& n) { return n.rfind("linux-vdso", 0) == 0; }));

  // A copy under a fresh name: the loader maps it even if the original was loaded before.
  fs::path copy = ctx.dir() / "libks_counted.so";
  fs::copy_file(stand_in("libks_test_vendor.so"), copy);
  const uint64_t count = gpu::load_count();
  void* handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  CHECK(gpu::load_count() == count + 1);
  auto after = gpu::loaded_objects();
  CHECK(std::count_if(after.begin(), after.end(),
                      [](const std::string& n) { return ends_with(n, "/libks_counted.so"); }) == 1);
  CHECK(after.size() == before.size() + 1);
  dlclose(handle);
  // Unloaded: no longer listed, and still counted.
  auto closed = gpu::loaded_objects();
  CHECK(std::none_of(closed.begin(), closed.end(),
                     [](const std::string& n) { return ends_with(n, "/libks_counted.so"); }));
  CHECK(gpu::load_count() == count + 1);
}

TEST_CASE("the DT_NEEDED entries of a shared object are read from its file", "[vendor]") {
  auto linked = gpu::needed_libraries(stand_in("libks_test_linked.so"));
  REQUIRE(linked);
  CHECK(std::find(linked->begin(), linked->end(), "libks_test_vendor.so") != linked->end());

  auto vendor = gpu::needed_libraries(stand_in("libks_test_vendor.so"));
  REQUIRE(vendor);
  CHECK(std::find(vendor->begin(), vendor->end(), "libks_test_vendor.so") == vendor->end());

  // A library of the system, as the loader found it: libstdc++ needs libc.
  std::string libstdcxx = loaded_named("libstdc++.so");
  REQUIRE_FALSE(libstdcxx.empty());
  auto system = gpu::needed_libraries(libstdcxx);
  REQUIRE(system);
  CHECK(std::find(system->begin(), system->end(), "libc.so.6") != system->end());
}

TEST_CASE("a file that is no shared object is refused by the DT_NEEDED reader, never read "
          "past its end",
          "[vendor]") {
  test::test_context ctx;
  auto missing = gpu::needed_libraries(ctx.dir() / "nothing.so");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == engine::errc::io);

  auto text = gpu::needed_libraries(ctx.write("text.so", "not an ELF file at all\n"));
  REQUIRE_FALSE(text);
  CHECK(text.error().code() == engine::errc::invalid_input);
  CHECK(text.error().message().find("no ELF header") != std::string::npos);

  // Cut inside its headers, or before its dynamic section: an error, and no read past the end.
  std::string whole = test::read_file(stand_in("libks_test_linked.so"));
  REQUIRE(whole.size() > 4096);
  for (size_t length :
       {size_t{4}, size_t{63}, size_t{64}, size_t{100}, size_t{500}, size_t{1000}}) {
    CAPTURE(length);
    auto cut = gpu::needed_libraries(ctx.write("cut.so", whole.substr(0, length)));
    CHECK_FALSE(cut.has_value());
  }
}
