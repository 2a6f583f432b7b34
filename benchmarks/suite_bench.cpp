// ks-suite-bench: the foundation's benchmark. For every task of the given suites it
// compiles the reference (cold, in a fresh cache, then cached), verifies it against itself,
// times it, and relates its median to the roofline floor from the device's measured peaks.
// Then it measures the engine's own overheads: a worker's start (spawn to hello, and to the
// first answered job) and the wall time of verifying and timing a ~1 ms kernel end to end.
// It prints Markdown tables, last, for docs/benchmarks.md.

#include "base/text.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_client.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace ks;

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

std::string read_file(const fs::path& p) {
  return ks::base::read_text(p).value_or("");
}

struct row {
  std::string suite, name, status;
  double cold_ms = 0, cached_ms = 0, verify_ms = 0, time_ms = 0;
  double time_again_ms = 0; // a second timing job: what every job after a task's first costs
  gpu::timing_result timing;
  double floor_ms = 0;
};

void usage() {
  std::fprintf(stderr,
               "usage: ks-suite-bench [--suite DIR]... [--one-ms TASK.toml] [--include DIR]\n"
               "                      [--worker PATH] [--device N] [--sandbox]\n"
               "Verifies and times every task's reference in each suite and prints tables.\n");
}

} // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> suites;
  fs::path one_ms_task, include_dir, worker;
  int device = 0;
  bool sandbox = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(1);
      }
      return argv[++i];
    };
    if (a == "--suite")
      suites.emplace_back(next());
    else if (a == "--one-ms")
      one_ms_task = next();
    else if (a == "--include")
      include_dir = next();
    else if (a == "--worker")
      worker = next();
    else if (a == "--device")
      device = std::atoi(next().c_str());
    else if (a == "--sandbox")
      sandbox = true; // the worker inside bubblewrap: its cost and its GPU access
    else {
      usage();
      return a == "--help" ? 0 : 1;
    }
  }

  // -- worker start ---------------------------------------------------------------------
  gpu::worker_options wopt;
  wopt.executable = worker.empty() ? gpu::default_worker_executable() : worker;
  wopt.device = device;
  wopt.boundary.sandbox = sandbox ? gpu::sandbox_mode::bubblewrap : gpu::sandbox_mode::off;
  wopt.boundary.requested_by = "--sandbox";
  // The compile cache (below) lies in the temporary folder, which the sandbox hides; it is
  // made afresh after the worker starts, so the whole folder is shown (read-only).
  wopt.boundary.readable = {fs::temp_directory_path()};
  wopt.verify_timeout = std::chrono::milliseconds(300000);
  wopt.time_timeout = std::chrono::milliseconds(300000);
  std::vector<double> hello_ms, first_job_ms;
  for (int i = 0; i < 3; ++i) {
    gpu::worker_client probe(wopt);
    auto t0 = clock_type::now();
    auto info = probe.info();
    double total = ms_since(t0);
    if (!info) {
      std::fprintf(stderr, "ks-suite-bench: %s\n", info.error().message.c_str());
      return 3;
    }
    hello_ms.push_back(probe.last_start_ms());
    first_job_ms.push_back(total);
    probe.shutdown();
  }

  gpu::worker_client client(wopt);
  auto info = client.info();
  if (!info) {
    std::fprintf(stderr, "ks-suite-bench: %s\n", info.error().message.c_str());
    return 3;
  }
  std::fprintf(stderr, "device %d: %s (%s), %d SMs\n", info->index, info->name.c_str(),
               info->arch.c_str(), info->sms);
  auto cal = client.calibrate();
  if (!cal) {
    std::fprintf(stderr, "ks-suite-bench: calibration failed: %s\n", cal.error().message.c_str());
    return 3;
  }

  gpu::compiler_options copt;
  copt.arch = info->arch;
  copt.include_dir = include_dir;
  copt.cache_dir = fs::temp_directory_path() / ("ks-suite-bench-" + std::to_string(getpid()));
  fs::remove_all(copt.cache_dir);
  auto cc = gpu::compiler::create(copt);
  if (!cc) {
    std::fprintf(stderr, "ks-suite-bench: %s\n", cc.error().message().c_str());
    return 3;
  }

  std::vector<row> rows;
  auto bench_task = [&](const std::string& suite, const engine::task& t) {
    row r;
    r.suite = suite;
    r.name = t.name;
    std::fprintf(stderr, "%s/%s: compiling...\n", suite.c_str(), t.name.c_str());
    gpu::compile_request req{engine::read_reference(t).value_or(""), t.name + " reference", {}};
    auto cold = cc->compile(req);
    r.cold_ms = cold.wall_ms;
    auto cached = cc->compile(req);
    r.cached_ms = cached.wall_ms;
    if (!cold.ok) {
      r.status = "compile_error";
      std::fprintf(stderr, "%s\n", cold.diagnostics.c_str());
      return r;
    }
    std::string so = cold.shared_object.string();
    std::fprintf(stderr, "%s/%s: verifying...\n", suite.c_str(), t.name.c_str());
    auto t0 = clock_type::now();
    auto v = client.verify(t, so, so, {});
    r.verify_ms = ms_since(t0);
    if (!v) {
      r.status = to_string(v.error().kind);
      std::fprintf(stderr, "  %s\n", v.error().message.c_str());
      return r;
    }
    std::fprintf(stderr, "%s/%s: timing...\n", suite.c_str(), t.name.c_str());
    t0 = clock_type::now();
    auto tm = client.time(t, so, so, {});
    r.time_ms = ms_since(t0);
    if (!tm) {
      r.status = to_string(tm.error().kind);
      std::fprintf(stderr, "  %s\n", tm.error().message.c_str());
      return r;
    }
    r.timing = *tm;
    // The first timing job of a task also draws its timing sets' reference outputs.
    t0 = clock_type::now();
    auto again = client.time(t, so, so, {});
    r.time_again_ms = ms_since(t0);
    if (!again) {
      r.status = to_string(again.error().kind);
      std::fprintf(stderr, "  %s\n", again.error().message.c_str());
      return r;
    }
    r.floor_ms = engine::roofline_floor_ms(t.cost, cal->dram_gbps, cal->fp32_gflops);
    r.status = "ok";
    return r;
  };

  for (const auto& dir : suites) {
    std::vector<fs::path> manifests;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".toml")
        manifests.push_back(e.path());
    std::sort(manifests.begin(), manifests.end());
    for (const auto& m : manifests) {
      auto t = engine::load_task_manifest(m);
      if (!t) {
        std::fprintf(stderr, "%s\n", t.error().message().c_str());
        rows.push_back({dir.filename().string(), m.filename().string(), "bad_manifest"});
        continue;
      }
      rows.push_back(bench_task(dir.filename().string(), *t));
    }
  }

  // -- eval overhead on a ~1 ms kernel --------------------------------------------------
  row one_ms;
  if (!one_ms_task.empty()) {
    auto t = engine::load_task_manifest(one_ms_task);
    if (t)
      one_ms = bench_task("overhead", *t);
    else
      std::fprintf(stderr, "%s\n", t.error().message().c_str());
  }

  // -- tables ---------------------------------------------------------------------------
  std::printf("\n### Device\n\n");
  std::printf("| device | arch | SMs | memory GiB | L2 MiB | driver | measured DRAM GB/s | "
              "measured fp32 GFLOP/s |\n|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %s | %d | %.1f | %.1f | %d | %.0f | %.0f |\n", info->name.c_str(),
              info->arch.c_str(), info->sms, static_cast<double>(info->memory_bytes) / 1073741824.0,
              static_cast<double>(info->l2_bytes) / 1048576.0, info->driver_version, cal->dram_gbps,
              cal->fp32_gflops);

  std::printf("\n### References, verified against themselves and timed\n\n");
  std::printf("| suite | task | status | median ms | p10 ms | p90 ms | trials | roofline floor ms "
              "| fraction of roofline | verify s | time s | compile cold s | compile cached ms "
              "| time again s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows)
    std::printf("| %s | %s | %s | %.4f | %.4f | %.4f | %d | %.4f | %.3f | %.2f | %.2f | %.2f | "
                "%.1f | %.3f |\n",
                r.suite.c_str(), r.name.c_str(), r.status.c_str(), r.timing.median_ms,
                r.timing.p10_ms, r.timing.p90_ms, r.timing.trials, r.floor_ms,
                r.timing.median_ms > 0 ? r.floor_ms / r.timing.median_ms : 0.0, r.verify_ms / 1e3,
                r.time_ms / 1e3, r.cold_ms / 1e3, r.cached_ms, r.time_again_ms / 1e3);

  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("\n### Overheads\n\n| what | measured | target |\n|---|---|---|\n");
  std::printf("| worker start, spawn to hello (median of 3) | %.0f ms | |\n", median(hello_ms));
  std::printf("| worker start, spawn to first answered job (median of 3) | %.0f ms | < 2000 ms |\n",
              median(first_job_ms));
  if (one_ms.status == "ok")
    std::printf("| verify (3 trials) + time a %.3f ms kernel, all told | %.0f ms (verify %.0f, "
                "time %.0f, %d trials) | < 1500 ms |\n",
                one_ms.timing.median_ms, one_ms.verify_ms + one_ms.time_ms, one_ms.verify_ms,
                one_ms.time_ms, one_ms.timing.trials);
  std::printf("| compile a reference, cold (median over the suites) | ");
  std::vector<double> cold, cached;
  for (const auto& r : rows)
    if (r.status == "ok") {
      cold.push_back(r.cold_ms);
      cached.push_back(r.cached_ms);
    }
  if (!cold.empty())
    std::printf("%.2f s | |\n| compile, cached (median) | %.2f ms | |\n", median(cold) / 1e3,
                median(cached));
  else
    std::printf("n/a | |\n");
  client.shutdown();
  fs::remove_all(copt.cache_dir);
  bool all_ok =
      std::all_of(rows.begin(), rows.end(), [](const row& r) { return r.status == "ok"; });
  return all_ok ? 0 : 4;
}
