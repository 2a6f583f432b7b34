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

/// Compiles `sources` with `compiler` (test::shared_compiler(): cached by content, one nvcc per
/// core) and checks that each compiles without a warning. A test without nvcc skips before it
/// gets here (KS_SKIP).
inline void check_compiles_clean(const gpu::compiler& compiler,
                                 const std::vector<labelled_source>& sources) {
  std::vector<gpu::compile_request> requests;
  for (const labelled_source& s : sources) {
    gpu::compile_request request;
    request.source = s.text;
    request.label = s.label;
    request.extra_flags = {"-Xcompiler=-Wall,-Wextra"};
    requests.push_back(std::move(request));
  }
  std::vector<gpu::compile_result> results = compiler.compile_all(requests);
  REQUIRE(results.size() == sources.size());
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(sources[i].label << "\n" << results[i].diagnostics);
    CHECK(results[i].ok);
    std::string lower = results[i].diagnostics;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    CHECK(lower.find("warning") == std::string::npos);
  }
}

} // namespace ks::test
