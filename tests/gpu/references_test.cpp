// The rendered references on a real GPU. Every task of the quickstart suite, whose reference is
// now rendered from its family's template, agrees with the hand-written reference it replaced
// (tests/gpu/references/, kept for this test only) on the worker's random inputs, at the task's
// tolerance. On the families suite, where no hand-written reference exists, every reference
// verifies against itself (it runs, deterministically), and the two schemes of an axis
// family's reference (a block per line, a thread per line: independent code compiled from the
// same file with -DKS_THREAD_PER_LINE) agree with each other.

#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_client.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "test_context.hpp"

namespace fs = std::filesystem;
using namespace ks;

namespace {

struct references_fixture {
  gpu::worker_client client{[] {
    gpu::worker_options o;
    o.executable = test::bin_dir() / "ks-bench-worker";
    o.verify_timeout = std::chrono::milliseconds(60000);
    o.time_timeout = std::chrono::milliseconds(60000);
    return o;
  }()};
  std::optional<gpu::compiler> cc;

  references_fixture() {
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

  // Compiles every request at once (nvcc dominates this test on a fresh host), in order.
  std::vector<std::string> build_all(const std::vector<gpu::compile_request>& requests) {
    std::vector<std::string> objects;
    auto results = cc->compile_all(requests);
    for (std::size_t i = 0; i < results.size(); ++i) {
      INFO(requests[i].label << ": " << results[i].diagnostics);
      REQUIRE(results[i].ok);
      objects.push_back(results[i].shared_object.string());
    }
    return objects;
  }
};

gpu::compile_request request(const std::string& source, const std::string& label,
                             std::vector<std::string> flags = {}) {
  gpu::compile_request req;
  req.source = source;
  req.label = label;
  req.extra_flags = std::move(flags);
  return req;
}

bool has_two_schemes(const engine::task& t) {
  return t.family == "softmax" || t.family == "norm" || t.family == "reduce" || t.family == "scan";
}

references_fixture& fixture() {
  static references_fixture f;
  return f;
}

std::vector<engine::task> suite(const char* name) {
  auto tasks = engine::load_task_suite(test::source_dir() / "tasks" / name);
  INFO((tasks ? std::string() : tasks.error().message()));
  REQUIRE(tasks);
  return *tasks;
}

} // namespace

TEST_CASE("every rendered quickstart reference agrees with the hand-written one it replaced",
          "[gpu]") {
  auto& f = fixture();
  int count = 0;
  auto tasks = suite("quickstart");
  std::vector<gpu::compile_request> requests;
  for (const engine::task& t : tasks) {
    fs::path handwritten = test::source_dir() / "tests/gpu/references" / (t.name + "_ref.cu");
    REQUIRE(fs::exists(handwritten));
    requests.push_back(request(test::read_file(handwritten), handwritten.filename().string()));
    requests.push_back(request(t.reference_source, t.name + " (rendered)"));
  }
  auto objects = f.build_all(requests);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const engine::task& t = tasks[i];
    const std::string& judge = objects[2 * i];
    const std::string& rendered = objects[2 * i + 1];
    auto v = f.client.verify(t, judge, rendered, {});
    INFO(t.name << ": " << (v ? std::string("ok") : v.error().message));
    REQUIRE(v);
    CHECK(v->passed);
    CHECK(v->norm_rel_err <= t.tol.norm_rel);
    ++count;
  }
  CHECK(count == 8);
}

TEST_CASE("the two schemes of every axis reference of the families suite agree, and every "
          "reference there verifies against itself",
          "[gpu]") {
  auto& f = fixture();
  auto tasks = suite("families");
  std::vector<gpu::compile_request> requests;
  for (const engine::task& t : tasks) {
    requests.push_back(request(t.reference_source, t.name));
    if (has_two_schemes(t)) {
      requests.push_back(
          request(t.reference_source, t.name + " (a block per line)", {"-DKS_THREAD_PER_LINE=0"}));
      requests.push_back(
          request(t.reference_source, t.name + " (a thread per line)", {"-DKS_THREAD_PER_LINE=1"}));
    }
  }
  auto objects = f.build_all(requests);
  std::size_t next = 0;
  for (const engine::task& t : tasks) {
    const std::string& plain = objects[next++];
    auto self = f.client.verify(t, plain, plain, {});
    INFO(t.name << ": " << (self ? std::string("ok") : self.error().message));
    REQUIRE(self);
    CHECK(self->norm_rel_err == 0.0);
    if (!has_two_schemes(t))
      continue;
    const std::string& by_block = objects[next++];
    const std::string& by_thread = objects[next++];
    auto v = f.client.verify(t, by_block, by_thread, {});
    INFO(t.name << " schemes: " << (v ? std::string("ok") : v.error().message));
    REQUIRE(v);
    CHECK(v->passed);
  }
}
