#include "gpu/worker_client.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace ks;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

// Returns options that start ks-scripted-worker on `script`, its position kept in the test's
// directory so that a restarted worker carries on where the last one stopped.
gpu::worker_options scripted(const test::test_context& ctx, const std::string& script,
                             std::chrono::milliseconds job_timeout = 5000ms) {
  gpu::worker_options o;
  o.executable = test::bin_dir() / "ks-scripted-worker";
  o.extra_args = {"--script", script, "--state", (ctx.dir() / "script.state").string()};
  o.start_timeout = 5000ms;
  o.info_timeout = o.calibrate_timeout = o.verify_timeout = o.time_timeout = job_timeout;
  return o;
}

engine::task tiny_task() {
  engine::task t;
  t.name = "tiny";
  t.family = "copy";
  t.inputs.push_back({"x", engine::dtype::f32, {4, 8}});
  t.outputs.push_back({"y", engine::dtype::f32, {4, 8}});
  return t;
}

gpu::job_result<gpu::verify_result> verify(gpu::worker_client& client) {
  return client.verify(tiny_task(), "/nonexistent/ref.so", "/nonexistent/cand.so", {});
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

TEST_CASE("failure kinds have stable names, exit codes and restart rules", "[client]") {
  const auto& kinds = gpu::all_failure_kinds();
  REQUIRE(kinds.size() == 14);
  for (size_t i = 0; i < kinds.size(); ++i) {
    auto n = static_cast<int32_t>(i + 1);
    CAPTURE(n);
    CHECK(static_cast<int32_t>(kinds[i]) == n);
    CHECK(gpu::parse_failure_kind(gpu::to_string(kinds[i])) == kinds[i]);
    CHECK(gpu::exit_code_for(kinds[i]) == 10 + n);
  }
  CHECK(std::string(gpu::to_string(gpu::failure_kind::wrong_result)) == "wrong_result");
  CHECK(std::string(gpu::to_string(gpu::failure_kind::vendor_library)) == "vendor_library");
  CHECK(gpu::parse_failure_kind("vendor_library") == gpu::failure_kind::vendor_library);
  CHECK(gpu::exit_code_for(gpu::failure_kind::vendor_library) == 23);
  CHECK(std::string(gpu::to_string(gpu::failure_kind::host_fault)) == "host_fault");
  CHECK(gpu::exit_code_for(gpu::failure_kind::host_fault) == 24);
  CHECK(gpu::is_host_fault(gpu::failure_kind::host_fault));
  CHECK_FALSE(gpu::is_host_fault(gpu::failure_kind::crash));
  CHECK_FALSE(gpu::is_host_fault(gpu::failure_kind::no_device));
  CHECK(gpu::kills_worker(gpu::failure_kind::host_fault));
  CHECK_FALSE(gpu::parse_failure_kind("segfault").has_value());
  CHECK(gpu::kills_worker(gpu::failure_kind::illegal_address));
  CHECK(gpu::kills_worker(gpu::failure_kind::timeout));
  CHECK(gpu::kills_worker(gpu::failure_kind::crash));
  CHECK(gpu::kills_worker(gpu::failure_kind::protocol_error));
  CHECK(gpu::kills_worker(gpu::failure_kind::cuda_error));
  CHECK_FALSE(gpu::kills_worker(gpu::failure_kind::wrong_result));
  CHECK_FALSE(gpu::kills_worker(gpu::failure_kind::launch_error));
  CHECK_FALSE(gpu::kills_worker(gpu::failure_kind::no_device));
  // A refusal on DT_NEEDED loads nothing: the worker's reply says when it must go (retire).
  CHECK_FALSE(gpu::kills_worker(gpu::failure_kind::vendor_library));
}

TEST_CASE("an info request round-trips through the worker", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "ok;ok"));
  auto info = client.info();
  REQUIRE(info.has_value());
  CHECK(info->name == "Scripted GPU");
  CHECK(info->arch == "sm_90a");
  CHECK(info->sms == 132);
  CHECK(info->device_count == 1);
  CHECK(client.starts() == 1);
  CHECK(client.last_start_ms() > 0);

  auto again = client.calibrate();
  REQUIRE(again.has_value());
  CHECK(again->dram_gbps == 3000);
  CHECK(client.starts() == 1);
  client.shutdown();
}

TEST_CASE("verify and time return the worker's results", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "ok;ok:2.5"));
  gpu::verify_options opt;
  opt.trials = 4;
  auto v = client.verify(tiny_task(), "ref.so", "cand.so", opt);
  REQUIRE(v.has_value());
  CHECK(v->passed);
  CHECK(v->trials == 4);
  auto t = client.time(tiny_task(), "cand.so", "ref.so", {});
  REQUIRE(t.has_value());
  CHECK(t->median_ms == Approx(2.5));
  CHECK(client.starts() == 1);
}

TEST_CASE("a worker that crashes mid-job gives a crash naming the signal, and the next job "
          "runs on a fresh worker",
          "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "crash;ok"));
  auto first = verify(client);
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::crash);
  CHECK_THAT(first.error().message, Contains("signal 11"));
  CHECK_THAT(first.error().message, Contains("verify"));
  // What the worker wrote to stderr before dying is part of the message.
  CHECK_THAT(first.error().message, Contains("about to crash"));

  auto second = verify(client);
  REQUIRE(second.has_value());
  CHECK(second->passed);
  CHECK(client.starts() == 2);
}

TEST_CASE("a worker killed from outside mid-job is the host's: the job runs again on a fresh "
          "worker and its answer is the job's",
          "[client][host_fault]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "killed;ok:3.5"));
  auto t = client.time(tiny_task(), "cand.so", "ref.so", {});
  REQUIRE(t.has_value());
  CHECK(t->median_ms == Approx(3.5));
  CHECK(client.kill_retries() == 1);
  CHECK(client.starts() == 2);
  CHECK_THAT(client.last_kill(), Contains("signal 9"));
  CHECK_THAT(client.last_kill(), Contains("time"));

  // The second run's own failure is the job's: a wrong result stays a wrong result.
  test::test_context ctx2;
  gpu::worker_client second(scripted(ctx2, "killed;fail:wrong_result"));
  auto v = verify(second);
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().kind == gpu::failure_kind::wrong_result);
  CHECK(second.kill_retries() == 1);
}

TEST_CASE("a job whose worker is killed twice is charged with the crash, naming both deaths",
          "[client][host_fault]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "killed;killed;ok"));
  auto v = verify(client);
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().kind == gpu::failure_kind::crash);
  CHECK_THAT(v.error().message, Contains("signal 9"));
  CHECK_THAT(v.error().message, Contains("the first time too"));
  CHECK(client.kill_retries() == 1);
  CHECK(client.starts() == 2);
  // The next job is a job of its own, on a fresh worker.
  REQUIRE(verify(client).has_value());
  CHECK(client.starts() == 3);
}

TEST_CASE("a worker's own fault (SIGSEGV) is not run again: the candidate crashed",
          "[client][host_fault]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "crash;ok"));
  auto v = verify(client);
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().kind == gpu::failure_kind::crash);
  CHECK(client.kill_retries() == 0);
  CHECK(client.starts() == 1);
}

TEST_CASE("a GPU that answered before and is gone, or unavailable, is a fault of the host",
          "[client][host_fault]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "ok;fail:no_device;lost;ok"));
  REQUIRE(client.info().has_value());
  auto gone = verify(client);
  REQUIRE_FALSE(gone.has_value());
  CHECK(gone.error().kind == gpu::failure_kind::host_fault);
  CHECK_THAT(gone.error().message, Contains("GPU 0 answered earlier jobs and is gone now"));
  auto lost = verify(client);
  REQUIRE_FALSE(lost.has_value());
  CHECK(lost.error().kind == gpu::failure_kind::host_fault);
  CHECK_THAT(lost.error().message, Contains("cudaErrorDevicesUnavailable"));
  // Each worker on the lost device was let go: every job after starts a fresh one.
  REQUIRE(verify(client).has_value());
  CHECK(client.starts() == 3);

  // A machine with no device from the start is no fault of a running campaign: no_device.
  test::test_context ctx2;
  gpu::worker_client none(scripted(ctx2, "fail:no_device"));
  auto first = none.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::no_device);
}

TEST_CASE("a hang gives a timeout within the deadline and the next job succeeds", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "ok;hang;ok", 300ms));
  REQUIRE(client.info().has_value());

  auto start = std::chrono::steady_clock::now();
  auto hung = verify(client);
  double elapsed = ms_since(start);
  REQUIRE_FALSE(hung.has_value());
  CHECK(hung.error().kind == gpu::failure_kind::timeout);
  CHECK_THAT(hung.error().message, Contains("no answer after 300 ms"));
  CHECK_THAT(hung.error().message, Contains("killed"));
  CHECK(elapsed >= 290);
  CHECK(elapsed < 1500);

  auto next = verify(client);
  REQUIRE(next.has_value());
  CHECK(client.starts() == 2);
}

TEST_CASE("a reply that is not JSON gives a protocol error and the next job succeeds", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "garbage;ok"));
  auto first = client.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::protocol_error);
  CHECK_THAT(first.error().message, Contains("malformed reply"));
  CHECK_THAT(first.error().message, Contains("just garbage"));

  auto second = client.info();
  REQUIRE(second.has_value());
  CHECK(client.starts() == 2);
}

TEST_CASE("a reply cut off mid-line gives a protocol error and the next job succeeds", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "cut;ok"));
  auto first = verify(client);
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::protocol_error);
  CHECK_THAT(first.error().message, Contains("verify"));

  auto second = verify(client);
  REQUIRE(second.has_value());
  CHECK(client.starts() == 2);
}

TEST_CASE("a sticky illegal address is reported and the next job starts a new worker", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "sticky;ok"));
  auto first = verify(client);
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::illegal_address);
  CHECK(first.error().cuda_error == "cudaErrorIllegalAddress");
  CHECK_THAT(first.error().message, Contains("illegal memory access"));

  auto second = client.info();
  REQUIRE(second.has_value());
  CHECK(client.starts() == 2);
}

TEST_CASE("a failure that leaves the worker usable keeps the worker", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "fail:wrong_result;fail:launch_error;ok"));
  auto wrong = verify(client);
  REQUIRE_FALSE(wrong.has_value());
  CHECK(wrong.error().kind == gpu::failure_kind::wrong_result);
  REQUIRE(wrong.error().verify.has_value());
  CHECK(wrong.error().verify->bad_output == "y");
  CHECK(wrong.error().verify->first_bad_index == 4242);
  CHECK(wrong.error().verify->expected == Approx(1.5));
  CHECK(wrong.error().verify->actual == Approx(-0.25));

  auto launch = verify(client);
  REQUIRE_FALSE(launch.has_value());
  CHECK(launch.error().kind == gpu::failure_kind::launch_error);
  CHECK(launch.error().return_code == 7);

  REQUIRE(verify(client).has_value());
  CHECK(client.starts() == 1);
}

TEST_CASE("a job out of device memory in a worker that served others runs again on a fresh "
          "worker; a fresh worker's is the job's",
          "[client]") {
  test::test_context ctx;
  // Job 1 ok; job 2 out of memory, then ok on a fresh worker; job 3 out of memory there too.
  gpu::worker_client client(
      scripted(ctx, "ok;fail:out_of_memory;ok;fail:out_of_memory;fail:out_of_memory;ok"));
  REQUIRE(verify(client).has_value());
  REQUIRE(verify(client).has_value());
  CHECK(client.starts() == 2);
  CHECK(client.memory_retries() == 1);
  // The fresh worker served job 2, so job 3 gets one more try; its second worker is fresh
  // for this job, and what it says is the job's.
  auto out = verify(client);
  REQUIRE_FALSE(out.has_value());
  CHECK(out.error().kind == gpu::failure_kind::out_of_memory);
  CHECK(client.starts() == 3);
  CHECK(client.memory_retries() == 2);
  // A worker that never served a job: no retry.
  test::test_context fresh_ctx;
  gpu::worker_client fresh(scripted(fresh_ctx, "fail:out_of_memory;ok"));
  auto first = verify(fresh);
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::out_of_memory);
  CHECK(fresh.memory_retries() == 0);
  CHECK(fresh.starts() == 1);
}

TEST_CASE("a candidate refused for a vendor library retires the worker that loaded it",
          "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "vendor;ok;ok"));
  auto refused = verify(client);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().kind == gpu::failure_kind::vendor_library);
  CHECK_THAT(refused.error().message, Contains("libcublas.so.13"));
  CHECK(client.worker_pid() == -1); // killed and reaped once the reply was read

  REQUIRE(verify(client).has_value());
  CHECK(client.starts() == 2);
  REQUIRE(verify(client).has_value());
  CHECK(client.starts() == 2); // an ordinary reply keeps the worker
}

TEST_CASE("an allowed vendor library is named in the result and the worker is replaced after "
          "the job",
          "[client]") {
  test::test_context ctx;
  gpu::worker_options options = scripted(ctx, "vendor;vendor;ok");
  options.vendor_libraries = gpu::vendor_policy::allow;
  gpu::worker_client client(options);
  auto verified = verify(client);
  REQUIRE(verified.has_value());
  CHECK(verified->vendor_libraries ==
        std::vector<std::string>{"/usr/local/cuda/lib64/libcublas.so.13"});
  CHECK(client.worker_pid() == -1);

  auto timed = client.time(tiny_task(), "/nonexistent/cand.so", "/nonexistent/ref.so", {});
  REQUIRE(timed.has_value());
  CHECK(timed->vendor_libraries ==
        std::vector<std::string>{"/usr/local/cuda/lib64/libcublas.so.13"});
  CHECK(client.starts() == 2);

  auto next = verify(client);
  REQUIRE(next.has_value());
  CHECK(next->vendor_libraries.empty());
  CHECK(client.starts() == 3);
  CHECK(client.worker_pid() > 0);
}

TEST_CASE("a reply with another request's id gives a protocol error", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "wrongid;ok"));
  auto first = client.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::protocol_error);
  CHECK_THAT(first.error().message, Contains("answered request"));
  REQUIRE(client.info().has_value());
  CHECK(client.starts() == 2);
}

TEST_CASE("a reply of another protocol version gives a protocol error", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "version;ok"));
  auto first = client.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::protocol_error);
  REQUIRE(client.info().has_value());
  CHECK(client.starts() == 2);
}

TEST_CASE("a hello of another protocol version gives a protocol error", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "hello-version;ok"));
  auto first = client.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::protocol_error);
  CHECK_THAT(first.error().message, Contains("hello"));
  REQUIRE(client.info().has_value());
  CHECK(client.starts() == 2);
}

TEST_CASE("a hello that is not JSON gives a protocol error", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "hello-garbage"));
  auto first = client.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::protocol_error);
  CHECK_THAT(first.error().message, Contains("I am not JSON"));
}

TEST_CASE("a worker that never says hello is killed at the start deadline", "[client]") {
  test::test_context ctx;
  auto options = scripted(ctx, "hello-none;ok");
  options.start_timeout = 300ms;
  gpu::worker_client client(options);
  auto start = std::chrono::steady_clock::now();
  auto first = client.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::timeout);
  CHECK_THAT(first.error().message, Contains("hello"));
  CHECK(ms_since(start) < 1500);
  REQUIRE(client.info().has_value());
}

TEST_CASE("a worker that exits before its hello gives a crash with its stderr", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "hello-exit;ok"));
  auto first = client.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::crash);
  CHECK_THAT(first.error().message, Contains("exit code 3"));
  CHECK_THAT(first.error().message, Contains("giving up before the hello"));
  REQUIRE(client.info().has_value());
}

TEST_CASE("a worker that exits mid-job gives a crash with its exit code", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, "exit:5;ok"));
  auto first = client.calibrate();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::crash);
  CHECK_THAT(first.error().message, Contains("exit code 5"));
  CHECK_THAT(first.error().message, Contains("calibrate"));
  REQUIRE(client.calibrate().has_value());
}

TEST_CASE("a missing worker executable gives a clear message", "[client]") {
  test::test_context ctx;
  gpu::worker_options options;
  options.executable = ctx.dir() / "no-such-worker";
  gpu::worker_client client(options);
  auto first = client.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::crash);
  CHECK_THAT(first.error().message, Contains("cannot start the bench worker"));
  CHECK_THAT(first.error().message, Contains("no-such-worker"));
  CHECK_THAT(first.error().message, Contains("no such file"));
  CHECK(client.starts() == 0);
}

TEST_CASE("a worker file that is not executable gives a clear message", "[client]") {
  test::test_context ctx;
  gpu::worker_options options;
  options.executable = ctx.write("not-a-worker", "just text\n");
  gpu::worker_client client(options);
  auto first = client.info();
  REQUIRE_FALSE(first.has_value());
  CHECK(first.error().kind == gpu::failure_kind::crash);
  CHECK_THAT(first.error().message, Contains("not an executable"));
}

TEST_CASE("after a shutdown the next job starts a new worker", "[client]") {
  test::test_context ctx;
  gpu::worker_client client(scripted(ctx, ""));
  REQUIRE(client.info().has_value());
  client.shutdown();
  REQUIRE(client.info().has_value());
  CHECK(client.starts() == 2);
}
