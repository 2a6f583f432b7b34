#include "base/writable_folder.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

using Catch::Matchers::Contains;
using ks::base::cannot_create_in;
namespace fs = std::filesystem;

namespace {

bool is_empty_folder(const fs::path& folder) {
  return fs::is_directory(folder) && fs::directory_iterator(folder) == fs::directory_iterator();
}

} // namespace

TEST_CASE("a folder that takes files passes the probe, which leaves nothing in it", "[folder]") {
  ks::test::test_context ctx;
  fs::path out = ctx.dir() / "out";
  fs::create_directory(out);
  CHECK_FALSE(cannot_create_in(out));
  CHECK(is_empty_folder(out));
  // Not there yet: judged where it would be made, and not made.
  CHECK_FALSE(cannot_create_in(out / "later" / "deeper"));
  CHECK(is_empty_folder(out));

  ctx.write("file", "x");
  auto under_file = cannot_create_in(ctx.dir() / "file" / "out");
  REQUIRE(under_file);
  CHECK(*under_file == (ctx.dir() / "file").string() + " is not a folder");
}

TEST_CASE("a folder that refuses files, root included, fails the probe", "[folder]") {
  // /proc makes no files, and access(2) says root may write it: the check that trusted
  // access() passed an output folder there as root.
  if (::geteuid() == 0)
    CHECK(::access("/proc", W_OK) == 0); // the old check's answer
  auto proc = cannot_create_in("/proc/kernelskill-out");
  REQUIRE(proc);
  CHECK_THAT(*proc, Contains("cannot create a file in /proc: "));

  ks::test::test_context ctx;
  fs::path locked = ctx.dir() / "locked";
  fs::create_directory(locked);
  if (::geteuid() != 0) {
    REQUIRE(::chmod(locked.c_str(), 0555) == 0);
    auto why = cannot_create_in(locked / "out");
    REQUIRE(why);
    CHECK(*why == "cannot create a file in " + locked.string() + ": Permission denied");
    ::chmod(locked.c_str(), 0755);
    return;
  }
  // As root, a folder made immutable refuses root too, where the file system and the
  // container allow chattr +i (CAP_LINUX_IMMUTABLE).
  std::string quoted = "'" + locked.string() + "'";
  if (std::system(("chattr +i " + quoted + " 2>/dev/null").c_str()) != 0) {
    WARN("chattr +i is not allowed here: only /proc stands for a folder that refuses root");
    return;
  }
  auto why = cannot_create_in(locked / "out");
  CHECK(std::system(("chattr -i " + quoted).c_str()) == 0);
  REQUIRE(why);
  CHECK(*why == "cannot create a file in " + locked.string() + ": Operation not permitted");
}
