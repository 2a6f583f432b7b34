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

  std::string build(const std::string& source, const std::string& label,
                    std::vector<std::string> flags = {}) {
    gpu::compile_request req;
    req.source = source;
    req.label = label;
    req.extra_flags = std::move(flags);
    auto r = cc->compile(req);
    INFO(label << ": " << r.diagnostics);
    REQUIRE(r.ok);
    return r.shared_object.string();
  }
};

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
  for (const engine::task& t : suite("quickstart")) {
    fs::path handwritten = test::source_dir() / "tests/gpu/references" / (t.name + "_ref.cu");
    REQUIRE(fs::exists(handwritten));
    std::string judge = f.build(test::read_file(handwritten), handwritten.filename().string());
    std::string rendered = f.build(t.reference_source, t.name + " (rendered)");
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
  for (const engine::task& t : suite("families")) {
    std::string plain = f.build(t.reference_source, t.name);
    auto self = f.client.verify(t, plain, plain, {});
    INFO(t.name << ": " << (self ? std::string("ok") : self.error().message));
    REQUIRE(self);
    CHECK(self->norm_rel_err == 0.0);
    if (t.family != "softmax" && t.family != "norm" && t.family != "reduce" && t.family != "scan")
      continue;
    std::string by_block =
        f.build(t.reference_source, t.name + " (a block per line)", {"-DKS_THREAD_PER_LINE=0"});
    std::string by_thread =
        f.build(t.reference_source, t.name + " (a thread per line)", {"-DKS_THREAD_PER_LINE=1"});
    auto v = f.client.verify(t, by_block, by_thread, {});
    INFO(t.name << " schemes: " << (v ? std::string("ok") : v.error().message));
    REQUIRE(v);
    CHECK(v->passed);
  }
}
