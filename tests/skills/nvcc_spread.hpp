#pragma once

// Compiling a spread of rendered skill templates with nvcc, for the skill tests: every source
// must compile without a warning (of nvcc, the host compiler or ptxas) and without a spill.

#include "gpu/compiler.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace ks::test {

/// A rendered template: what it is, for messages, and its CUDA source.
struct rendered_case {
  std::string label;
  std::string source;
};

/// Compiles every one of `rendered` (each with a `label` and a `source`, as rendered_case) with
/// `compiler` (-Wall -Wextra for the host side) and checks each compiled, with no warning and
/// no kernel that spills.
template <typename Case>
void check_compiles_clean(gpu::compiler& compiler, const std::vector<Case>& rendered) {
  std::vector<gpu::compile_request> requests;
  for (const Case& c : rendered)
    requests.push_back({c.source, c.label, {"-Xcompiler=-Wall,-Wextra"}, ""});
  std::vector<gpu::compile_result> results = compiler.compile_all(requests);
  REQUIRE(results.size() == rendered.size());
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(rendered[i].label << "\n" << results[i].diagnostics);
    CHECK(results[i].ok);
    std::string lower = results[i].diagnostics;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    CHECK(lower.find("warning") == std::string::npos);
    for (const gpu::kernel_resources& k : results[i].kernels) {
      INFO(k.name << ": " << k.registers << " registers");
      CHECK(k.spill_stores == 0);
      CHECK(k.spill_loads == 0);
    }
  }
}

} // namespace ks::test
