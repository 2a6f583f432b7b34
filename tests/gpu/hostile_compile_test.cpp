// The hostile-candidate suite's sources (tests/gpu/hostile/) compile for Hopper without a GPU,
// so CI keeps every planted candidate building; hostile_test.cpp runs them on a GPU.

#include "gpu/compiler.hpp"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

TEST_CASE("every hostile candidate compiles for sm_90a without a warning", "[compiler][nvcc]") {
  auto made = ks::test::shared_compiler();
  if (!made)
    KS_SKIP("no nvcc: " + made.error().message());

  std::vector<fs::path> sources;
  for (const auto& entry : fs::directory_iterator(ks::test::source_dir() / "tests/gpu/hostile"))
    if (entry.path().extension() == ".cu")
      sources.push_back(entry.path());
  std::sort(sources.begin(), sources.end());
  REQUIRE(sources.size() >= 20);

  std::vector<ks::gpu::compile_request> requests;
  for (const auto& source : sources) {
    ks::gpu::compile_request request;
    request.source = ks::test::read_file(source);
    request.label = source.filename().string();
    requests.push_back(std::move(request));
  }
  // The answer look-up's variant without an honest path, as hostile_test.cpp builds it.
  sources.push_back(ks::test::source_dir() / "tests/gpu/hostile/matmul_answer_lookup.cu");
  requests.push_back(requests[0]);
  requests.back().source = ks::test::read_file(sources.back());
  requests.back().label = "matmul_answer_lookup.cu -DKS_LOOKUP_ONLY";
  requests.back().extra_flags = {"-DKS_LOOKUP_ONLY"};
  // The cuBLAS candidate's linked variant, as hostile_test.cpp builds it (the toolkit's
  // libcublas, beside nvcc, links it).
  sources.push_back(ks::test::source_dir() / "tests/gpu/hostile/matmul_cublas.cu");
  requests.push_back(requests[0]);
  requests.back().source = ks::test::read_file(sources.back());
  requests.back().label = "matmul_cublas.cu -DKS_CUBLAS_LINKED -lcublas";
  requests.back().extra_flags = {"-DKS_CUBLAS_LINKED", "-lcublas"};
  auto results = made->compile_all(requests);
  REQUIRE(results.size() == sources.size());
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(sources[i].filename().string() << ":\n" << results[i].diagnostics);
    CHECK(results[i].ok);
    CHECK(results[i].diagnostics.find("warning") == std::string::npos);
  }
}
