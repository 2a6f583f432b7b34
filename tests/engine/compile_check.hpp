#pragma once

// The check the reference tests share (family_reference_test.cpp, graph_reference_test.cpp):
// rendered or composed sources compile with nvcc for sm_90a without a warning of nvcc, the host
// compiler (-Wall -Wextra) or ptxas. No GPU: nvcc runs on the CPU.

#include "gpu/compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace ks::test {

/// A source to compile and how messages name it.
struct labelled_source {
  std::string label;
  std::string text;
};

/// Compiles `sources` (cached in the build tree's folder `cache`) and checks that each compiles
/// without a warning. Returns false, after a WARN saying why, when there is no nvcc to run.
inline bool check_compiles_clean(const std::vector<labelled_source>& sources,
                                 const std::string& cache) {
  gpu::compiler_options options;
  options.arch = "sm_90a";
  options.cache_dir = bin_dir().parent_path() / cache;
  options.include_dir = source_dir() / "gpu" / "include";
  auto compiler = gpu::compiler::create(options);
  if (!compiler) {
    WARN("skipped the nvcc half: " << compiler.error().message());
    return false;
  }
  std::vector<gpu::compile_request> requests;
  for (const labelled_source& s : sources) {
    gpu::compile_request request;
    request.source = s.text;
    request.label = s.label;
    request.extra_flags = {"-Xcompiler=-Wall,-Wextra"};
    requests.push_back(std::move(request));
  }
  std::vector<gpu::compile_result> results = compiler->compile_all(requests);
  REQUIRE(results.size() == sources.size());
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(sources[i].label << "\n" << results[i].diagnostics);
    CHECK(results[i].ok);
    std::string lower = results[i].diagnostics;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    CHECK(lower.find("warning") == std::string::npos);
  }
  return true;
}

} // namespace ks::test
