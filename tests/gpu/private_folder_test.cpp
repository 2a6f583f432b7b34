#include "gpu/child_process.hpp"
#include "gpu/private_folder.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

using namespace ks;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Returns the pid of a process that has already exited (and been reaped).
int dead_pid() {
  auto child = gpu::child_process::spawn({"/bin/true"});
  REQUIRE(child);
  int pid = child->pid();
  child->wait(5000ms);
  return pid;
}

} // namespace

TEST_CASE("a private folder is removed with everything in it when dropped", "[boundary]") {
  test::test_context ctx;
  fs::path path;
  {
    auto folder = gpu::private_folder::create(ctx.dir(), "ks-worker-");
    REQUIRE(folder);
    path = folder->path();
    CHECK(path.parent_path() == ctx.dir());
    CHECK(path.filename().string().rfind("ks-worker-" + std::to_string(::getpid()) + "-", 0) == 0);
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    // What a candidate might leave: nested files, a link out, a folder it locked itself out of.
    ctx.write(fs::relative(path / "a" / "b" / "file", ctx.dir()).string(), "data");
    fs::create_symlink(ctx.dir(), path / "link-out");
    fs::create_directory(path / "locked");
    ctx.write(fs::relative(path / "locked" / "inside", ctx.dir()).string(), "x");
    ::chmod((path / "locked").c_str(), 0);
    gpu::private_folder moved = std::move(*folder);
    CHECK_FALSE(*folder);
    CHECK(moved.path() == path);
  }
  CHECK_FALSE(fs::exists(path));
  CHECK(fs::exists(ctx.dir())); // the link was removed, not followed
}

TEST_CASE("a private folder cannot be made where there is no room", "[boundary]") {
  auto folder = gpu::private_folder::create("/nonexistent/parent", "ks-worker-");
  REQUIRE_FALSE(folder);
  CHECK(folder.error().code() == engine::errc::io);
  CHECK(folder.error().message().find("/nonexistent/parent") != std::string::npos);
  CHECK(folder.error().message().find("TMPDIR") != std::string::npos);
}

TEST_CASE("the sweep removes only the folders killed engines left behind", "[boundary]") {
  test::test_context ctx;
  const std::string dead = std::to_string(dead_pid());
  const std::string ours = std::to_string(::getpid());
  for (const std::string& name :
       {"ks-worker-" + dead + "-left", "ks-worker-" + dead + "-locked",
        "ks-worker-" + ours + "-live", std::string("ks-worker-1-init"), "ks-worker-" + dead,
        std::string("ks-worker-x-y"), "other-" + dead + "-z"})
    fs::create_directories(ctx.dir() / name / "sub");
  fs::create_symlink(ctx.dir() / ("ks-worker-" + dead + "-left"),
                     ctx.dir() / ("ks-worker-" + dead + "-link"));
  // A live engine in another pid namespace holds its folder locked: its pid looks dead to us.
  int held = ::open((ctx.dir() / ("ks-worker-" + dead + "-locked")).c_str(),
                    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(held >= 0);
  REQUIRE(::flock(held, LOCK_EX) == 0);
  CHECK(gpu::sweep_private_folders(ctx.dir(), "ks-worker-") == 1);
  ::close(held);

  CHECK_FALSE(fs::exists(ctx.dir() / ("ks-worker-" + dead + "-left")));
  for (const std::string& kept : {"ks-worker-" + dead + "-locked", "ks-worker-" + ours + "-live",
                                  std::string("ks-worker-1-init"), "ks-worker-" + dead,
                                  std::string("ks-worker-x-y"), "other-" + dead + "-z"})
    CHECK(fs::exists(ctx.dir() / kept / "sub"));
  CHECK(fs::is_symlink(ctx.dir() / ("ks-worker-" + dead + "-link")));
}

TEST_CASE("a child's own folder is removed when it is reaped", "[boundary]") {
  test::test_context ctx;
  auto folder = gpu::private_folder::create(ctx.dir(), "ks-worker-");
  REQUIRE(folder);
  const fs::path path = folder->path();
  gpu::spawn_options options;
  options.cwd = path;
  options.folder = std::move(*folder);
  auto child = gpu::child_process::spawn({"/bin/sh", "-c", "echo x > file; pwd; sleep 100"},
                                         std::move(options));
  REQUIRE(child);
  CHECK(child->folder() == path);
  auto line = child->read_line(10000ms);
  REQUIRE(line);
  REQUIRE(*line);
  CHECK(fs::path(**line) == path);
  CHECK(fs::exists(path / "file"));
  child->kill();
  CHECK_FALSE(fs::exists(path));
  CHECK(child->folder().empty());
}

TEST_CASE("a child inherits no descriptor but its three pipes", "[boundary]") {
  test::test_context ctx;
  // Opened without O_CLOEXEC, as a careless library would; moved high, so that no descriptor
  // the child opens itself can have its number.
  int opened = ::open(ctx.write("open.txt", "x").c_str(), O_RDONLY);
  REQUIRE(opened >= 0);
  int leaked = ::fcntl(opened, F_DUPFD, 200);
  ::close(opened);
  REQUIRE(leaked >= 200);
  auto r = gpu::run_to_completion({"/bin/sh", "-c", "ls /proc/self/fd"}, 10000ms);
  ::close(leaked);
  REQUIRE(r);
  INFO("descriptors of the child: " << r->out);
  CHECK(r->out.find(std::to_string(leaked) + "\n") == std::string::npos);
}
