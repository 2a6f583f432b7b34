#include "base/text.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>

using namespace ks::base;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("a file is read within its size limit, whatever sits at its path", "[text]") {
  ks::test::test_context ctx;
  fs::path file = ctx.write("c.toml", "abc");
  auto text = read_file(file, 3, "config file");
  REQUIRE(text);
  CHECK(*text == "abc");

  auto large = read_file(file, 2, "config file");
  REQUIRE_FALSE(large);
  CHECK(large.error().code() == errc::invalid_input);
  CHECK(large.error().message() == file.string() + ": holds more than 2 bytes, too much for a "
                                                   "config file");
  CHECK_FALSE(read_text(file, 2));

  auto missing = read_file(ctx.dir() / "none.toml", 10, "task manifest");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == errc::not_found);
  CHECK_THAT(missing.error().message(), Contains("none.toml: task manifest not found"));

  auto folder = read_file(ctx.dir(), 10, "task manifest");
  REQUIRE_FALSE(folder);
  CHECK(folder.error().code() == errc::io);
  CHECK_THAT(folder.error().message(), Contains(": is a folder, not a task manifest"));

  // A device that never ends is cut at the limit, not read until memory runs out.
  auto zero = read_file("/dev/zero", 1 << 20, "config file");
  REQUIRE_FALSE(zero);
  CHECK(zero.error().code() == errc::invalid_input);
  CHECK(zero.error().message() == "/dev/zero: holds more than 1 MiB, too much for a config file");

  // A named pipe with no writer reads as empty at once, instead of waiting for one.
  fs::path fifo = ctx.dir() / "fifo.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto start = std::chrono::steady_clock::now();
  auto empty = read_file(fifo, 10, "config file");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  REQUIRE(empty);
  CHECK(empty->empty());
}

TEST_CASE("sizes read as people write them", "[text]") {
  CHECK(describe_size(4 << 20) == "4 MiB");
  CHECK(describe_size(256 << 10) == "256 KiB");
  CHECK(describe_size(1536) == "1536 bytes");
  CHECK(describe_size(1) == "1 byte");
}
