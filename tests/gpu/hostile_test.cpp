// The hostile-candidate suite (issue 8): one planted candidate per way of fooling the bench
// worker, each in tests/gpu/hostile/ with a header comment saying what it does and what the
// worker must report (README.md there has the table). A test compiles its candidate and
// runs the jobs a campaign would (verify, then time), asserts the failure kind, and then
// asserts that the next job succeeds: a good relu verifies and is timed.
//
// Candidates whose trick only makes sense when timed inputs repeat (a fingerprint, a pointer
// key, a persisting L2 window, a cache of results, a look-up of the reference's answer) need
// not fail: they must gain nothing. Their median is compared with that of the honest kernel
// they are built on, timed in the same test on the same worker and card, so the thresholds
// are ratios and hold on an H100 and an H200 alike. The honest kernel is timed before and
// after the candidate and the faster of its two medians is used, so a slow moment of the
// card makes the candidate look faster, never an honest kernel look like a cheat.

#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_client.hpp"

#include <catch2/catch.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_context.hpp"

namespace fs = std::filesystem;
using namespace ks;
using namespace std::chrono_literals;

namespace {

fs::path compile_cache_dir() {
  return fs::temp_directory_path() / "ks-gpu-test-cache";
}

gpu::worker_options test_worker_options() {
  gpu::worker_options o;
  o.executable = test::bin_dir() / "ks-bench-worker";
  o.verify_timeout = 30s;
  o.time_timeout = 60s; // the host-compute candidate takes ~2 ms a call for a few seconds
  return o;
}

// A compiler and a worker for the suite (its own: bench_gpu_test.cpp's is private to it).
struct hostile_fixture {
  gpu::worker_client client{test_worker_options()};
  std::optional<gpu::compiler> cc;
  std::map<std::string, engine::task> tasks;

  hostile_fixture() {
    auto info = client.info();
    REQUIRE(info);
    gpu::compiler_options o;
    o.arch = info->arch;
    o.include_dir = test::source_dir() / "gpu/include";
    o.cache_dir = compile_cache_dir();
    auto created = gpu::compiler::create(o);
    REQUIRE(created);
    cc.emplace(std::move(*created));
  }

  const engine::task& task(const std::string& file) {
    auto it = tasks.find(file);
    if (it == tasks.end()) {
      auto t = engine::load_task_manifest(test::source_dir() / "tasks/quickstart" / file);
      INFO((t ? std::string() : t.error().message()));
      REQUIRE(t);
      it = tasks.emplace(file, std::move(*t)).first;
    }
    return it->second;
  }

  std::string build(const fs::path& source, std::vector<std::string> flags = {}) {
    gpu::compile_request req;
    req.source = test::read_file(source);
    req.label = source.filename().string();
    req.extra_flags = std::move(flags);
    auto r = cc->compile(req);
    INFO(source.filename().string() << ": " << r.diagnostics);
    REQUIRE(r.ok);
    return r.shared_object.string();
  }

  /// Builds the reference of `t` (rendered from its family, or hand-written).
  std::string reference(const engine::task& t) {
    auto source = engine::read_reference(t);
    REQUIRE(source);
    gpu::compile_request req;
    req.source = std::move(*source);
    req.label = t.name + " reference";
    auto r = cc->compile(req);
    INFO(t.name << " reference: " << r.diagnostics);
    REQUIRE(r.ok);
    return r.shared_object.string();
  }
};

hostile_fixture& fixture() {
  static hostile_fixture f;
  return f;
}

fs::path hostile(const std::string& name) {
  return test::source_dir() / "tests/gpu/hostile" / name;
}

fs::path faulty(const std::string& name) {
  return test::source_dir() / "tests/gpu/faulty" / name;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// What a candidate's verify and time jobs gave: the first failure, or a timing.
struct outcome {
  std::optional<gpu::failure> verify_failure;
  std::optional<gpu::failure> time_failure; // set only when verification passed
  std::optional<gpu::timing_result> timing; // set only when both passed

  bool passed() const { return timing.has_value(); }

  const gpu::failure* failure() const {
    return verify_failure ? &*verify_failure : time_failure ? &*time_failure : nullptr;
  }

  std::string describe() const {
    std::ostringstream s;
    if (verify_failure)
      s << "verify failed: " << gpu::to_string(verify_failure->kind) << ": "
        << verify_failure->message;
    else if (time_failure)
      s << "verified; time failed: " << gpu::to_string(time_failure->kind) << ": "
        << time_failure->message;
    else
      s << "passed: median " << timing->median_ms << " ms over " << timing->trials << " trials";
    return s.str();
  }
};

// Verifies `source` (compiled with `flags`) against `task_file`'s reference on `client`
// and, if that passes, times it (timed calls checked against the reference).
outcome run_candidate(gpu::worker_client& client, const std::string& task_file,
                      const fs::path& source, std::vector<std::string> flags = {}) {
  auto& f = fixture();
  const auto& t = f.task(task_file);
  auto ref = f.reference(t);
  auto cand = f.build(source, std::move(flags));
  outcome out;
  auto v = client.verify(t, ref, cand, {});
  if (!v) {
    out.verify_failure = v.error();
    return out;
  }
  auto r = client.time(t, cand, ref, {});
  if (!r)
    out.time_failure = r.error();
  else
    out.timing = *r;
  return out;
}

// Returns the median of honest `source` on `task_file`, timed on the fixture's worker.
double honest_median(const std::string& task_file, const fs::path& source) {
  auto& f = fixture();
  const auto& t = f.task(task_file);
  auto r = f.client.time(t, f.build(source), f.reference(t), {});
  INFO(source.filename().string() << ": " << (r ? std::string("ok") : r.error().message));
  REQUIRE(r);
  return r->median_ms;
}

// The job after a hostile one: a good relu must verify and be timed on `client`.
void next_job_succeeds(gpu::worker_client& client) {
  auto out = run_candidate(client, "19_relu.toml", faulty("relu_good.cu"));
  INFO("the next job (relu_good.cu): " << out.describe());
  CHECK(out.passed());
}

void next_job_succeeds() {
  next_job_succeeds(fixture().client);
}

// Checks that a candidate that only cheats once timing starts passed verification and was
// then caught during timing with wrong_result.
void expect_wrong_result_during_timing(const outcome& out) {
  INFO(out.describe());
  REQUIRE_FALSE(out.verify_failure);
  REQUIRE(out.time_failure);
  CHECK(out.time_failure->kind == gpu::failure_kind::wrong_result);
  CHECK(contains(out.time_failure->message, "during timing"));
}

// Checks that a candidate whose work escapes the worker's stream was rejected: by the stream
// audit (escaped_stream), or by a check of a timed call that saw the escaped work unfinished
// (wrong_result during timing), which WARNs: the audit should have been first.
void expect_escape_rejected(const outcome& out) {
  INFO(out.describe());
  REQUIRE_FALSE(out.verify_failure); // verification synchronizes the device: it passes
  REQUIRE(out.time_failure);
  const auto& fail = *out.time_failure;
  const bool audit = fail.kind == gpu::failure_kind::escaped_stream;
  const bool check =
      fail.kind == gpu::failure_kind::wrong_result && contains(fail.message, "during timing");
  CHECK((audit || check));
  if (check)
    WARN("rejected by an output check during timing, not by the stream audit: " << fail.message);
}

// Checks that a candidate failed, with one of `kinds`, or passed no faster than `ratio`
// times the honest kernel's median (`good_before` and a second timing after it).
void expect_no_gain(const outcome& out, std::initializer_list<gpu::failure_kind> kinds,
                    const std::string& task_file, const fs::path& good, double good_before,
                    double ratio) {
  INFO(out.describe());
  if (const auto* fail = out.failure()) {
    bool listed = false;
    for (auto k : kinds)
      listed = listed || fail->kind == k;
    CHECK(listed);
    return;
  }
  const double good_after = honest_median(task_file, good);
  const double honest = std::min(good_before, good_after);
  INFO(good.filename().string() << ": median " << good_before << " ms before, " << good_after
                                << " ms after; the candidate's is "
                                << out.timing->median_ms / honest << "x the faster");
  CHECK(out.timing->median_ms >= ratio * honest);
}

// Sets an environment variable for one scope, then restores what was there.
class scoped_env {
public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old;
    ::setenv(name, value, 1);
  }
  ~scoped_env() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

private:
  std::string name_;
  std::optional<std::string> old_;
};

// A process of ours that holds a secret in its exec-time environment (which is what
// /proc/<pid>/environ shows; a setenv in this process would not): stands in for the shell
// or the engine that a user started with an API key exported.
class secret_holder {
public:
  secret_holder() {
    char arg0[] = "sleep", arg1[] = "300";
    char* argv[] = {arg0, arg1, nullptr};
    std::string secret = "KS_HOSTILE_TEST_TOKEN=not-a-real-token";
    std::string path = "PATH=/usr/bin:/bin";
    char* envp[] = {secret.data(), path.data(), nullptr};
    if (posix_spawnp(&pid_, "sleep", nullptr, nullptr, argv, envp) != 0)
      pid_ = -1;
  }
  ~secret_holder() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  secret_holder(const secret_holder&) = delete;
  secret_holder& operator=(const secret_holder&) = delete;

  bool running() const { return pid_ > 0; }

private:
  pid_t pid_ = -1;
};

} // namespace

// -- cheats that pass verification and are caught by checks of timed calls ------------------

TEST_CASE("a candidate that works only in its first calls and every 50th after fails during "
          "timing with wrong_result",
          "[gpu][hostile]") {
  expect_wrong_result_during_timing(
      run_candidate(fixture().client, "19_relu.toml", hostile("relu_call_counter.cu")));
  next_job_succeeds();
}

TEST_CASE("a candidate that computes on every other call only fails during timing with "
          "wrong_result",
          "[gpu][hostile]") {
  expect_wrong_result_during_timing(
      run_candidate(fixture().client, "19_relu.toml", hostile("relu_every_other_call.cu")));
  next_job_succeeds();
}

TEST_CASE("a candidate that computes only where its output holds the NaN poison fails during "
          "timing with wrong_result",
          "[gpu][hostile]") {
  expect_wrong_result_during_timing(
      run_candidate(fixture().client, "19_relu.toml", hostile("relu_poison_detector.cu")));
  next_job_succeeds();
}

TEST_CASE("a candidate that starts writing its input after verification fails during timing "
          "with wrong_result",
          "[gpu][hostile]") {
  expect_wrong_result_during_timing(
      run_candidate(fixture().client, "19_relu.toml", hostile("relu_mutates_input_later.cu")));
  next_job_succeeds();
}

// -- work off the worker's stream -----------------------------------------------------------

TEST_CASE("a 10-15 us kernel on a stream of the candidate's own, never joined, is "
          "escaped_stream",
          "[gpu][hostile]") {
  expect_escape_rejected(
      run_candidate(fixture().client, "19_relu.toml", hostile("relu_own_stream.cu")));
  next_job_succeeds();
}

TEST_CASE("a fork-join that starts its work before the worker's stream is ready is "
          "escaped_stream",
          "[gpu][hostile]") {
  expect_escape_rejected(
      run_candidate(fixture().client, "19_relu.toml", hostile("relu_fork_join.cu")));
  next_job_succeeds();
}

TEST_CASE("a ReLU computed on the host and copied over the legacy default stream is "
          "escaped_stream",
          "[gpu][hostile]") {
  expect_escape_rejected(
      run_candidate(fixture().client, "19_relu.toml", hostile("relu_host_compute.cu")));
  next_job_succeeds();
}

TEST_CASE("hidden side work on the candidate's own stream is escaped_stream even though every "
          "output is right",
          "[gpu][hostile]") {
  // The outputs never depend on the side kernel, so no output check can catch it: only the
  // stream audit, on a kernel of about 13 us.
  auto out = run_candidate(fixture().client, "19_relu.toml", hostile("relu_side_work.cu"));
  INFO(out.describe());
  REQUIRE_FALSE(out.verify_failure);
  REQUIRE(out.time_failure);
  CHECK(out.time_failure->kind == gpu::failure_kind::escaped_stream);
  next_job_succeeds();
}

// -- tricks that must gain nothing ----------------------------------------------------------

TEST_CASE("an input fingerprint that skips repeated inputs gains nothing", "[gpu][hostile]") {
  const double good = honest_median("19_relu.toml", faulty("relu_good.cu"));
  auto out = run_candidate(fixture().client, "19_relu.toml", hostile("relu_input_fingerprint.cu"));
  // Its synchronous copy is off the worker's stream: escaped_stream is the audit's answer.
  expect_no_gain(out, {gpu::failure_kind::escaped_stream, gpu::failure_kind::wrong_result},
                 "19_relu.toml", faulty("relu_good.cu"), good, 0.9);
  next_job_succeeds();
}

TEST_CASE("a cache keyed on the input pointer gains nothing", "[gpu][hostile]") {
  const double good = honest_median("19_relu.toml", faulty("relu_good.cu"));
  auto out = run_candidate(fixture().client, "19_relu.toml", hostile("relu_pointer_cache.cu"));
  // Verification refills one buffer, so it may fail there already.
  expect_no_gain(out, {gpu::failure_kind::wrong_result}, "19_relu.toml", faulty("relu_good.cu"),
                 good, 0.9);
  next_job_succeeds();
}

TEST_CASE("a persisting L2 window over the input gains nothing across the flush",
          "[gpu][hostile]") {
  const double good = honest_median("19_relu.toml", faulty("relu_good.cu"));
  auto out = run_candidate(fixture().client, "19_relu.toml", hostile("relu_persisting_l2.cu"));
  INFO(out.describe());
  REQUIRE(out.passed()); // an honest kernel with a legal hint: it must be timed
  expect_no_gain(out, {}, "19_relu.toml", faulty("relu_good.cu"), good, 0.93);
  next_job_succeeds();
}

TEST_CASE("a two-entry cache of results keyed on the inputs' content gains nothing on the "
          "matmul",
          "[gpu][hostile]") {
  const double good = honest_median("1_matmul.toml", faulty("matmul_good.cu"));
  auto out = run_candidate(fixture().client, "1_matmul.toml", hostile("matmul_memo_cache.cu"));
  expect_no_gain(out,
                 {gpu::failure_kind::wrong_result, gpu::failure_kind::escaped_stream,
                  gpu::failure_kind::launch_error},
                 "1_matmul.toml", faulty("matmul_good.cu"), good, 0.9);
  next_job_succeeds();
}

TEST_CASE("a candidate that computes only the calls whose inputs are exactly as drawn gains "
          "nothing",
          "[gpu][hostile]") {
  // Where checked calls alone see unperturbed inputs, "as drawn" means "checked".
  const double good = honest_median("1_matmul.toml", faulty("matmul_good.cu"));
  auto out =
      run_candidate(fixture().client, "1_matmul.toml", hostile("matmul_checked_call_oracle.cu"));
  expect_no_gain(out, {gpu::failure_kind::wrong_result}, "1_matmul.toml", faulty("matmul_good.cu"),
                 good, 0.9);
  next_job_succeeds();
}

TEST_CASE("a candidate that updates the previous call's result for the few changed input "
          "elements gains nothing",
          "[gpu][hostile]") {
  // Every output it returns is right: only inputs unrelated from call to call defeat it.
  const double good = honest_median("1_matmul.toml", faulty("matmul_good.cu"));
  auto out =
      run_candidate(fixture().client, "1_matmul.toml", hostile("matmul_incremental_update.cu"));
  expect_no_gain(out, {gpu::failure_kind::wrong_result}, "1_matmul.toml", faulty("matmul_good.cu"),
                 good, 0.9);
  next_job_succeeds();
}

TEST_CASE("a candidate that copies the reference's answer out of the worker's device memory "
          "gains nothing",
          "[gpu][hostile]") {
  const double good = honest_median("1_matmul.toml", faulty("matmul_good.cu"));
  auto out = run_candidate(fixture().client, "1_matmul.toml", hostile("matmul_answer_lookup.cu"));
  expect_no_gain(out,
                 {gpu::failure_kind::wrong_result, gpu::failure_kind::escaped_stream,
                  gpu::failure_kind::launch_error, gpu::failure_kind::illegal_address},
                 "1_matmul.toml", faulty("matmul_good.cu"), good, 0.9);
  next_job_succeeds();
}

TEST_CASE("a candidate whose own matmul is wrong cannot pass by copying the reference's answer",
          "[gpu][hostile]") {
  // Its own path writes zeros: whatever passes was copied from the worker's memory.
  auto out = run_candidate(fixture().client, "1_matmul.toml", hostile("matmul_answer_lookup.cu"),
                           {"-DKS_LOOKUP_ONLY"});
  INFO(out.describe());
  REQUIRE_FALSE(out.passed());
  CHECK(out.failure()->kind == gpu::failure_kind::wrong_result);
  next_job_succeeds();
}

// -- the worker as a boundary -----------------------------------------------------------------

TEST_CASE("a candidate finds none of the engine's secrets in its environment", "[gpu][hostile]") {
  // Set before the worker starts, so that an unscrubbed worker would inherit them.
  scoped_env openai("OPENAI_API_KEY", "sk-not-a-real-key");
  scoped_env anthropic("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key");
  scoped_env token("KS_HOSTILE_TEST_TOKEN", "not-a-real-token");
  gpu::worker_client client(test_worker_options());
  auto out = run_candidate(client, "19_relu.toml", hostile("relu_secret_env.cu"));
  INFO(out.describe() << " (return code 7: a named secret; 8: a variable named like one)");
  CHECK(out.passed());
  next_job_succeeds(client);
  client.shutdown();
}

TEST_CASE("an unsandboxed candidate cannot read secrets from other processes' "
          "/proc/PID/environ",
          "[gpu][hostile][!mayfail]") {
  // A documented limit: without a pid namespace, every process of the same user (the shell
  // that started the engine, the engine itself) shows its exec-time environment to the
  // worker, whatever the worker's own environment holds. [!mayfail]: reported, not failed.
  secret_holder holder;
  REQUIRE(holder.running());
  gpu::worker_client client(test_worker_options());
  auto out = run_candidate(client, "19_relu.toml", hostile("relu_secret_proc_environ.cu"));
  INFO(out.describe() << " (return code 9: it read a secret from another process)");
  CHECK(out.passed());
  client.shutdown();
}

// -- classes issue 8 found caught, now with a file each ----------------------------------------

TEST_CASE("a write through a null pointer is illegal_address and the next job succeeds",
          "[gpu][hostile]") {
  auto out = run_candidate(fixture().client, "19_relu.toml", hostile("relu_null_write.cu"));
  INFO(out.describe());
  REQUIRE(out.verify_failure);
  CHECK(out.verify_failure->kind == gpu::failure_kind::illegal_address);
  next_job_succeeds();
}

TEST_CASE("a candidate that calls abort() is a crash and the next job starts a fresh worker",
          "[gpu][hostile]") {
  auto& f = fixture();
  auto out = run_candidate(f.client, "19_relu.toml", hostile("relu_abort.cu"));
  INFO(out.describe());
  REQUIRE(out.verify_failure);
  CHECK(out.verify_failure->kind == gpu::failure_kind::crash);
  CHECK(contains(out.verify_failure->message, "SIGABRT"));
  const int32_t starts = f.client.starts();
  next_job_succeeds();
  CHECK(f.client.starts() == starts + 1);
}

TEST_CASE("work left to a host thread after ks_forward returns is wrong_result with unwritten "
          "outputs",
          "[gpu][hostile]") {
  auto out = run_candidate(fixture().client, "19_relu.toml", hostile("relu_host_thread.cu"));
  INFO(out.describe());
  REQUIRE(out.verify_failure);
  CHECK(out.verify_failure->kind == gpu::failure_kind::wrong_result);
  REQUIRE(out.verify_failure->verify);
  CHECK(out.verify_failure->verify->nan_count > 0);
  // Its thread writes the worker's y about 20 ms after the call: let it finish first.
  std::this_thread::sleep_for(500ms);
  next_job_succeeds();
}

TEST_CASE("a float32 ReLU rounded through half precision is wrong_result", "[gpu][hostile]") {
  auto out = run_candidate(fixture().client, "19_relu.toml", hostile("relu_half_precision.cu"));
  INFO(out.describe());
  REQUIRE(out.verify_failure);
  CHECK(out.verify_failure->kind == gpu::failure_kind::wrong_result);
  REQUIRE(out.verify_failure->verify);
  CHECK(out.verify_failure->verify->norm_rel_err > 1e-5);
  next_job_succeeds();
}

TEST_CASE("pointing the output descriptor at a buffer of the candidate's own is wrong_result",
          "[gpu][hostile]") {
  auto out =
      run_candidate(fixture().client, "19_relu.toml", hostile("relu_swaps_output_pointer.cu"));
  INFO(out.describe());
  REQUIRE(out.verify_failure);
  CHECK(out.verify_failure->kind == gpu::failure_kind::wrong_result);
  REQUIRE(out.verify_failure->verify);
  CHECK(out.verify_failure->verify->nan_count > 0);
  next_job_succeeds();
}

// -- vendor libraries (issue 27, "only our kernels count") -------------------------------------

namespace {

// Says why a cuBLAS candidate could not run: it found no libcublas (return code 20), or "".
std::string missing_cublas(const gpu::failure* f) {
  if (f != nullptr && f->kind == gpu::failure_kind::launch_error && f->return_code == 20)
    return "no libcublas on this machine for the candidate to load: " + f->message;
  return {};
}

bool names_cublas(const std::vector<std::string>& libraries) {
  for (const std::string& library : libraries)
    if (contains(library, "libcublas"))
      return true;
  return false;
}

} // namespace

TEST_CASE("a candidate that dlopens cuBLAS inside ks_forward is refused as vendor_library",
          "[gpu][hostile]") {
  auto& f = fixture();
  auto out = run_candidate(f.client, "1_matmul.toml", hostile("matmul_cublas.cu"));
  INFO(out.describe());
  if (std::string why = missing_cublas(out.failure()); !why.empty())
    KS_SKIP(why);
  REQUIRE(out.verify_failure); // its first call loads cuBLAS
  CHECK(out.verify_failure->kind == gpu::failure_kind::vendor_library);
  CHECK(contains(out.verify_failure->message, "libcublas"));
  CHECK(contains(out.verify_failure->message, "during a call of its ks_forward"));
  // cuBLAS stays in that worker's process: the next job runs in a fresh one.
  const int32_t starts = f.client.starts();
  next_job_succeeds();
  CHECK(f.client.starts() == starts + 1);
}

TEST_CASE("a candidate linked against cuBLAS is refused as vendor_library before it is loaded",
          "[gpu][hostile]") {
  auto& f = fixture();
  auto out = run_candidate(f.client, "1_matmul.toml", hostile("matmul_cublas.cu"),
                           {"-DKS_CUBLAS_LINKED", "-lcublas"});
  INFO(out.describe());
  REQUIRE(out.verify_failure);
  CHECK(out.verify_failure->kind == gpu::failure_kind::vendor_library);
  CHECK(contains(out.verify_failure->message, "libcublas.so"));
  CHECK(contains(out.verify_failure->message, "DT_NEEDED"));
  // Nothing of it was loaded: the worker stays.
  const int32_t starts = f.client.starts();
  next_job_succeeds();
  CHECK(f.client.starts() == starts);
}

TEST_CASE("with vendor libraries allowed, a cuBLAS candidate is measured and its results name "
          "libcublas",
          "[gpu][hostile]") {
  auto& f = fixture();
  gpu::worker_options options = test_worker_options();
  options.vendor_libraries = gpu::vendor_policy::allow;
  gpu::worker_client client(options);
  const auto& t = f.task("1_matmul.toml");
  const std::string reference = f.reference(t);
  for (bool linked : {false, true}) {
    CAPTURE(linked);
    const std::string candidate =
        linked ? f.build(hostile("matmul_cublas.cu"), {"-DKS_CUBLAS_LINKED", "-lcublas"})
               : f.build(hostile("matmul_cublas.cu"));
    auto verified = client.verify(t, reference, candidate, {});
    INFO((verified ? std::string("verified") : verified.error().message));
    if (std::string why = missing_cublas(verified ? nullptr : &verified.error()); !why.empty())
      KS_SKIP(why);
    REQUIRE(verified);
    CHECK(verified->passed);
    CHECK(names_cublas(verified->vendor_libraries));
    // The worker that loaded cuBLAS retired after the job: timing starts a fresh one.
    const int32_t starts = client.starts();
    auto timed = client.time(t, candidate, reference, {});
    INFO((timed ? std::string("timed") : timed.error().message));
    REQUIRE(timed);
    CHECK(timed->median_ms > 0);
    CHECK(names_cublas(timed->vendor_libraries));
    CHECK(client.starts() == starts + 1);
  }
  next_job_succeeds(client);
  client.shutdown();
}
