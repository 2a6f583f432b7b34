#include "gpu/child_process.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using ks::gpu::child_process;
using ks::gpu::run_to_completion;

namespace {

// Checks whether `pid` is gone or a zombie (killed but not yet reaped by its new parent).
bool process_is_dead(int pid) {
  if (::kill(pid, 0) != 0)
    return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

// Waits up to 30 s (a loaded machine) for `pid` to die: SIGKILL is delivered asynchronously.
bool dies_soon(int pid) {
  for (int i = 0; i < 3000; ++i) {
    if (process_is_dead(pid))
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

} // namespace

TEST_CASE("a child echoes what it is fed through /bin/sh", "[gpu_host][process]") {
  SECTION("run_to_completion feeds stdin and collects stdout") {
    auto r = run_to_completion({"/bin/sh", "-c", "cat; echo err >&2"}, 10s, "hello\nworld\n");
    REQUIRE(r);
    CHECK(r->out == "hello\nworld\n");
    CHECK(r->err == "err\n");
    CHECK(r->status.code == 0);
    CHECK(r->status.success());
    CHECK(r->status.describe() == "exit code 0");
  }
  SECTION("a long-lived child answers line by line") {
    auto child =
        child_process::spawn({"/bin/sh", "-c", "while read line; do echo \"got $line\"; done"});
    REQUIRE(child);
    CHECK(child->running());
    CHECK(child->pid() > 0);
    for (std::string word : {"one", "two", "three"}) {
      REQUIRE(child->write_line(word));
      auto line = child->read_line(10s);
      REQUIRE(line);
      REQUIRE(line->has_value());
      CHECK(**line == "got " + word);
    }
    auto status = child->wait(10s); // closes stdin: the loop ends
    CHECK(status.code == 0);
    CHECK_FALSE(child->running());
  }
}

TEST_CASE("exit codes are reported", "[gpu_host][process]") {
  auto r = run_to_completion({"/bin/sh", "-c", "exit 3"}, 10s);
  REQUIRE(r);
  CHECK(r->status.code == 3);
  CHECK(r->status.signal == 0);
  CHECK_FALSE(r->status.timed_out);
  CHECK(r->status.describe() == "exit code 3");

  auto child = child_process::spawn({"/bin/sh", "-c", "read x; exit 4"});
  REQUIRE(child);
  CHECK(child->wait(10s).code == 4);
  CHECK(child->kill().code == 4); // already reaped: the same status again
}

TEST_CASE("a child killed by a signal is described by the signal's name", "[gpu_host][process]") {
  auto r = run_to_completion({"/bin/sh", "-c", "kill -SEGV $$"}, 10s);
  REQUIRE(r);
  CHECK(r->status.code == -1);
  CHECK(r->status.signal == SIGSEGV);
  CHECK(r->status.describe() == "killed by signal 11 (SIGSEGV)");
}

TEST_CASE("a timeout kills the child and its grandchild", "[gpu_host][process]") {
  SECTION("in run_to_completion") {
    auto r = run_to_completion({"/bin/sh", "-c", "sleep 100 & echo $!; sleep 100"}, 300ms);
    REQUIRE(r);
    CHECK(r->status.timed_out);
    CHECK(r->status.describe() == "timed out after 300 ms");
    CHECK(r->wall_ms >= 300);
    CHECK(r->wall_ms < 5000);
    int grandchild = std::stoi(r->out);
    CHECK(dies_soon(grandchild));
  }
  SECTION("in wait") {
    auto child = child_process::spawn({"/bin/sh", "-c", "sleep 100 & echo $!; sleep 100"});
    REQUIRE(child);
    auto line = child->read_line(10s);
    REQUIRE(line);
    REQUIRE(line->has_value());
    int grandchild = std::stoi(**line);
    auto status = child->wait(200ms);
    CHECK(status.timed_out);
    CHECK(status.signal == SIGKILL);
    CHECK(dies_soon(grandchild));
  }
  SECTION("when the child is destroyed") {
    int grandchild = 0;
    {
      auto child = child_process::spawn({"/bin/sh", "-c", "sleep 100 & echo $!; sleep 100"});
      REQUIRE(child);
      auto line = child->read_line(10s);
      REQUIRE(line);
      grandchild = std::stoi(line->value());
    }
    CHECK(dies_soon(grandchild));
  }
  SECTION("a leftover that holds the pipes does not hold up run_to_completion") {
    auto r = run_to_completion({"/bin/sh", "-c", "sleep 100 & echo $!"}, 10s);
    REQUIRE(r);
    CHECK_FALSE(r->status.timed_out);
    CHECK(r->status.code == 0);
    CHECK(r->wall_ms < 5000);
    CHECK(dies_soon(std::stoi(r->out)));
  }
}

TEST_CASE("read_line times out when the child says nothing", "[gpu_host][process]") {
  auto child = child_process::spawn({"sleep", "100"});
  REQUIRE(child);
  auto start = std::chrono::steady_clock::now();
  auto line = child->read_line(150ms);
  auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(line);
  CHECK(line.error().code() == ks::engine::errc::timeout);
  CHECK(elapsed >= 150ms);
  CHECK(elapsed < 5s);
  CHECK(child->running());
  auto status = child->kill();
  CHECK(status.signal == SIGKILL);
  CHECK_FALSE(child->running());
}

TEST_CASE("read_line returns the last partial line, then end of file", "[gpu_host][process]") {
  auto child = child_process::spawn({"/bin/sh", "-c", "echo one; printf two"});
  REQUIRE(child);
  auto first = child->read_line(10s);
  REQUIRE(first);
  CHECK(first->value() == "one");
  auto second = child->read_line(10s);
  REQUIRE(second);
  CHECK(second->value() == "two");
  auto end = child->read_line(10s);
  REQUIRE(end);
  CHECK_FALSE(end->has_value());
  CHECK(child->wait(10s).code == 0);
}

TEST_CASE("writing to a child that exited fails without killing us", "[gpu_host][process]") {
  auto child = child_process::spawn({"/bin/sh", "-c", "exec 0<&-; echo closed; sleep 100"});
  REQUIRE(child);
  REQUIRE(child->read_line(10s)); // stdin is closed on the child's side now
  auto written = child->write_line("anyone there?");
  REQUIRE_FALSE(written);
  CHECK(written.error().code() == ks::engine::errc::subprocess);
  CHECK(child->kill().signal == SIGKILL);
}

TEST_CASE("a child writing 1 MB to stderr while we read stdout does not deadlock",
          "[gpu_host][process]") {
  const char* script = "head -c 1048576 /dev/zero | tr '\\0' x >&2; echo done";
  SECTION("read_line keeps stderr drained and its last 64 KiB") {
    auto child = child_process::spawn({"/bin/sh", "-c", script});
    REQUIRE(child);
    auto line = child->read_line(20s);
    REQUIRE(line);
    CHECK(line->value() == "done");
    CHECK(child->wait(10s).code == 0);
    CHECK(child->stderr_tail().size() == size_t{64} * 1024);
    CHECK(child->stderr_tail().find_first_not_of('x') == std::string::npos);
  }
  SECTION("run_to_completion keeps all of it") {
    auto r = run_to_completion({"/bin/sh", "-c", script}, 20s);
    REQUIRE(r);
    CHECK(r->out == "done\n");
    CHECK(r->err.size() == 1048576);
  }
}

TEST_CASE("a program that does not exist cannot be started", "[gpu_host][process]") {
  auto r = run_to_completion({"/nonexistent/program"}, 1s);
  REQUIRE_FALSE(r);
  CHECK(r.error().code() == ks::engine::errc::not_found);
  CHECK(r.error().message().find("/nonexistent/program") != std::string::npos);

  auto child = child_process::spawn({"ks-no-such-program-anywhere"});
  REQUIRE_FALSE(child);
  CHECK(child.error().code() == ks::engine::errc::not_found);

  auto empty = run_to_completion({}, 1s);
  REQUIRE_FALSE(empty);
  CHECK(empty.error().code() == ks::engine::errc::invalid_input);
}

TEST_CASE("no pipe end is left open after a child is done", "[gpu_host][process]") {
  auto open_fds = [] {
    int64_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
      ++n;
    return n;
  };
  int64_t before = open_fds();
  for (int i = 0; i < 3; ++i) {
    REQUIRE(run_to_completion({"/bin/sh", "-c", "echo hi"}, 10s));
    auto child = child_process::spawn({"/bin/sh", "-c", "echo hi; sleep 100"});
    REQUIRE(child);
    REQUIRE(child->read_line(10s));
  }
  CHECK(open_fds() == before);
}

TEST_CASE("a child can run in another working directory", "[gpu_host][process]") {
  ks::test::test_context ctx;
  ctx.write("sub/marker.txt", "here\n");
  auto r = run_to_completion({"cat", "marker.txt"}, 10s, "", ctx.dir() / "sub");
  REQUIRE(r);
  CHECK(r->out == "here\n");
  CHECK(std::filesystem::current_path() == ctx.dir()); // ours is unchanged

  auto missing = run_to_completion({"cat", "marker.txt"}, 10s, "", ctx.dir() / "nowhere");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message().find("nowhere") != std::string::npos);
}
