// The bench worker on a real GPU: every quickstart reference verified against itself and
// timed; each planted faulty candidate caught with its own failure kind, and the job after
// each one still succeeds.

#include "engine/card_stability.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_client.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "test_context.hpp"

namespace fs = std::filesystem;
using namespace ks;

namespace {

// One compiler, worker and arch for the whole executable: starting them is the slow part.
struct gpu_fixture {
  gpu::worker_client client{[] {
    gpu::worker_options o;
    o.executable = test::bin_dir() / "ks-bench-worker";
    o.verify_timeout = std::chrono::milliseconds(30000);
    o.time_timeout = std::chrono::milliseconds(30000);
    return o;
  }()};
  std::optional<gpu::compiler> cc;
  std::map<std::string, engine::task> tasks;

  gpu_fixture() {
    auto info = client.info();
    REQUIRE(info);
    gpu::compiler_options o;
    o.arch = info->arch;
    o.include_dir = test::source_dir() / "gpu/include";
    o.cache_dir = fs::temp_directory_path() / "ks-gpu-test-cache";
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

  gpu::compile_result build(const fs::path& source) {
    gpu::compile_request req;
    req.source = test::read_file(source);
    req.label = source.filename().string();
    return cc->compile(req);
  }

  std::string build_ok(const fs::path& source) {
    auto r = build(source);
    INFO(r.diagnostics);
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

gpu_fixture& fixture() {
  static gpu_fixture f;
  return f;
}

fs::path faulty(const std::string& name) {
  return test::source_dir() / "tests/gpu/faulty" / name;
}

// The job after a failure: a good relu must verify, on whatever worker the client has now.
void next_job_succeeds() {
  auto& f = fixture();
  const auto& relu = f.task("19_relu.toml");
  auto ref = f.reference(relu);
  auto good = f.build_ok(faulty("relu_good.cu"));
  auto r = f.client.verify(relu, ref, good, {});
  INFO((r ? std::string() : r.error().message));
  CHECK(r);
}

gpu::failure expect_failure(const std::string& task_file, const std::string& candidate,
                            bool time_it) {
  auto& f = fixture();
  const auto& t = f.task(task_file);
  auto ref = f.reference(t);
  auto cand = f.build_ok(faulty(candidate));
  if (time_it) {
    auto v = f.client.verify(t, ref, cand, {});
    INFO((v ? std::string("verified") : v.error().message));
    REQUIRE(v);
    auto r = f.client.time(t, cand, ref, {});
    REQUIRE_FALSE(r);
    return r.error();
  }
  auto r = f.client.verify(t, ref, cand, {});
  REQUIRE_FALSE(r);
  return r.error();
}

} // namespace

TEST_CASE("every quickstart reference verifies against itself and is timed", "[gpu]") {
  auto& f = fixture();
  int count = 0;
  for (const auto& entry : fs::directory_iterator(test::source_dir() / "tasks/quickstart")) {
    if (entry.path().extension() != ".toml")
      continue;
    const auto& t = f.task(entry.path().filename().string());
    auto ref = f.reference(t);
    auto v = f.client.verify(t, ref, ref, {});
    INFO(t.name << ": " << (v ? std::string("ok") : v.error().message));
    REQUIRE(v);
    CHECK(v->passed);
    CHECK(v->norm_rel_err == 0.0);
    auto timing = f.client.time(t, ref, ref, {});
    INFO(t.name << ": " << (timing ? std::string("ok") : timing.error().message));
    REQUIRE(timing);
    CHECK(timing->median_ms > 0);
    CHECK(timing->trials >= 10);
    CHECK(timing->p10_ms <= timing->median_ms);
    CHECK(timing->median_ms <= timing->p90_ms);
    ++count;
  }
  CHECK(count == 8);
}

TEST_CASE("good candidates pass verification", "[gpu]") {
  auto& f = fixture();
  for (auto [task_file, cand] :
       {std::pair{"19_relu.toml", "relu_good.cu"}, std::pair{"1_matmul.toml", "matmul_good.cu"}}) {
    const auto& t = f.task(task_file);
    auto r = f.client.verify(t, f.reference(t), f.build_ok(faulty(cand)), {});
    INFO(cand << ": " << (r ? std::string("ok") : r.error().message));
    REQUIRE(r);
    CHECK(r->norm_rel_err < t.tol.norm_rel);
  }
}

TEST_CASE("an out-of-bounds write is an illegal address and the next job succeeds", "[gpu]") {
  auto fail = expect_failure("19_relu.toml", "relu_oob_write.cu", false);
  INFO(fail.message);
  CHECK(fail.kind == gpu::failure_kind::illegal_address);
  next_job_succeeds();
}

TEST_CASE("a kernel that never returns is a timeout and the next job succeeds", "[gpu]") {
  auto& f = fixture();
  gpu::worker_options o;
  o.executable = test::bin_dir() / "ks-bench-worker";
  o.verify_timeout = std::chrono::milliseconds(5000);
  gpu::worker_client short_fuse(o);
  const auto& t = f.task("19_relu.toml");
  auto r = short_fuse.verify(t, f.reference(t), f.build_ok(faulty("relu_infinite_loop.cu")), {});
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().kind == gpu::failure_kind::timeout);
  auto again = short_fuse.verify(t, f.reference(t), f.build_ok(faulty("relu_good.cu")), {});
  INFO((again ? std::string() : again.error().message));
  CHECK(again);
  CHECK(short_fuse.starts() == 2);
}

TEST_CASE("a half-written output is a wrong result that points at the first gap", "[gpu]") {
  auto fail = expect_failure("19_relu.toml", "relu_half_output.cu", false);
  INFO(fail.message);
  CHECK(fail.kind == gpu::failure_kind::wrong_result);
  REQUIRE(fail.verify);
  CHECK(fail.verify->nan_count > 0);
  CHECK(fail.verify->first_bad_index > 0);
  next_job_succeeds();
}

TEST_CASE("a candidate that changes its input is a wrong result", "[gpu]") {
  auto fail = expect_failure("19_relu.toml", "relu_mutates_input.cu", false);
  INFO(fail.message);
  CHECK(fail.kind == gpu::failure_kind::wrong_result);
  REQUIRE(fail.verify);
  CHECK(fail.verify->input_changed);
  CHECK(fail.verify->bad_output == "x");
  next_job_succeeds();
}

TEST_CASE("a TF32 matmul fails the float32 task on its norm-relative error", "[gpu]") {
  auto fail = expect_failure("1_matmul.toml", "matmul_tf32.cu", false);
  INFO(fail.message);
  CHECK(fail.kind == gpu::failure_kind::wrong_result);
  REQUIRE(fail.verify);
  CHECK(fail.verify->norm_rel_err > 1e-5);
  next_job_succeeds();
}

TEST_CASE("work launched on a side stream is caught by the host-clock check", "[gpu]") {
  auto fail = expect_failure("19_relu.toml", "relu_side_stream.cu", true);
  INFO(fail.message);
  CHECK(fail.kind == gpu::failure_kind::escaped_stream);
  next_job_succeeds();
}

TEST_CASE("a non-zero return is a launch error carrying the code", "[gpu]") {
  auto fail = expect_failure("19_relu.toml", "relu_nonzero_return.cu", false);
  INFO(fail.message);
  CHECK(fail.kind == gpu::failure_kind::launch_error);
  CHECK(fail.return_code == 7);
  next_job_succeeds();
}

TEST_CASE("a shared object without ks_forward is a load error", "[gpu]") {
  auto fail = expect_failure("19_relu.toml", "relu_no_symbol.cu", false);
  INFO(fail.message);
  CHECK(fail.kind == gpu::failure_kind::load_error);
  CHECK(fail.message.find("ks_forward") != std::string::npos);
  next_job_succeeds();
}

TEST_CASE("a candidate that does not compile keeps nvcc's diagnostics", "[gpu]") {
  auto r = fixture().build(faulty("relu_syntax_error.cu"));
  CHECK_FALSE(r.ok);
  CHECK(r.diagnostics.find("error") != std::string::npos);
}

TEST_CASE("calibration measures plausible peaks", "[gpu]") {
  auto c = fixture().client.calibrate();
  REQUIRE(c);
  // An H100 copies at about 3 TB/s and an H200 at about 4; both do tens of TFLOP/s of FMA.
  CHECK(c->dram_gbps > 1000);
  CHECK(c->dram_gbps < 10000);
  CHECK(c->fp32_gflops > 10000);
  CHECK(c->fp32_gflops < 200000);
}

TEST_CASE("the stability probe on a quiet card stays within its bounds, between timings too",
          "[gpu][stability]") {
  // Probes as a campaign runs them: between jobs, a heavy timing (the quickstart matmul) among
  // them. On a quiet card none may trip the monitor (engine/card_stability.hpp: 10% bounds,
  // about 1% of noise on an H100); the figures are printed for docs/measurement.md.
  auto& f = fixture();
  const auto& matmul = f.task("1_matmul.toml");
  auto ref = f.reference(matmul);
  engine::card_monitor monitor;
  double worst_ratio = 1, worst_spread = 1;
  for (int i = 0; i < 12; ++i) {
    if (i % 4 == 2)
      REQUIRE(f.client.time(matmul, ref, ref, {}));
    auto p = f.client.probe();
    INFO("probe " << i << ": " << (p ? std::string("ok") : p.error().message));
    REQUIRE(p);
    CHECK(p->samples == 4); // 32 copies in windows of eight
    CHECK(p->bytes >= (int64_t{8} << 20));
    // Bytes read plus written per second: a plausible copy bandwidth.
    double gbps = 2.0 * static_cast<double>(p->bytes) / (p->median_ms * 1e-3) / 1e9;
    CHECK(gbps > 500);
    CHECK(gbps < 10000);
    engine::stability_event e = monitor.record(engine::probe_reading{
        static_cast<double>(i), p->bytes, p->median_ms, p->p10_ms, p->p90_ms});
    worst_ratio = std::max(worst_ratio, monitor.last_assessment().ratio);
    worst_spread = std::max(worst_spread, monitor.last_assessment().spread);
    WARN("probe " << i << ": " << p->bytes / (1 << 20) << " MiB, median " << p->median_ms << " ms ("
                  << gbps << " GB/s), p10 " << p->p10_ms << ", p90 " << p->p90_ms
                  << ", ratio to the quiet level " << monitor.last_assessment().ratio);
    CHECK(e == engine::stability_event::none);
  }
  WARN("quiet card: worst probe median over the quiet level "
       << worst_ratio << ", worst p90 over p10 " << worst_spread);
  CHECK(monitor.episodes().empty());
}
