// The built-in skills against the shipped task suites: every instantiation of every template
// renders for every task of its family in both suites, and the instantiation the planner offers
// first (and each parameter's extreme values) compiles with nvcc for sm_90a without a warning.
// No GPU: nvcc runs on the CPU.

#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "tests/skills/all_instantiations.hpp"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

using namespace ks;
using engine::param_values;
using test::all_instantiations;

namespace {

struct case_t {
  std::string label;
  std::string source;
};

/// Walks every instantiation of every template of every skill for every task of its family in
/// both suites, and with `render_every` renders each valid one, checking it; returns what the
/// nvcc test compiles, rendered: the first instantiation the planner would offer and the first
/// and last valid ones (the corners of the space). The nvcc test leaves `render_every` off:
/// rendering every instantiation is the render test's, and most of its time.
std::vector<case_t> render_suites(bool render_every) {
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  std::vector<case_t> to_compile;
  std::set<std::string> covered_families;
  int64_t rendered = 0;
  for (const char* suite : {"quickstart", "kernelbench-l1"}) {
    auto tasks = engine::load_task_suite(test::source_dir() / "tasks" / suite);
    REQUIRE(tasks.has_value());
    for (const engine::task& t : *tasks) {
      std::string reference = engine::read_reference(t).value_or("");
      bool own_skill = false;
      for (const engine::skill& s : library->skills) {
        if (!s.applies_to(t.family))
          continue;
        INFO(suite << "/" << t.name << " with skill " << s.id);
        // A skill may be written for one regime of its family (a warp per short row, a
        // cluster per long one, inner > 1): it need not apply to every task of the suites, but
        // every task needs one (own_skill below); rowops_templates_test.cpp checks the regimes.
        engine::applicability a = engine::check_applies(s, t, nullptr, reference);
        if (!a.applies)
          continue;
        own_skill = own_skill || s.families != std::vector<std::string>{"*"};
        // A skill applies when some template has a valid instantiation (check_applies); a
        // template may be for another regime of the family (matvec_split_k's split_columns is
        // for a transposed A only: memops_skills_test.cpp renders it for such tasks). Every
        // template with a valid point renders at all of them, and the skill has one.
        int templates_with_points = 0;
        for (const engine::skill_template& tp : s.templates) {
          auto space = engine::space_of(tp, t, reference);
          REQUIRE(space.has_value());
          std::vector<param_values> valid;
          for (const param_values& v : all_instantiations(*space)) {
            auto why = engine::check_params(tp, *space, v, t);
            REQUIRE(why.has_value());
            if (*why)
              continue;
            if (render_every) {
              auto text = engine::render(s, tp, t, v, reference);
              INFO((text ? "" : text.error().message()));
              REQUIRE(text.has_value());
              ++rendered;
            }
            valid.push_back(v);
          }
          auto first = engine::first_valid(tp, *space, t);
          REQUIRE(first.has_value());
          // The planner's first choice exists exactly when some instantiation is valid.
          REQUIRE(first->has_value() == !valid.empty());
          if (valid.empty())
            continue;
          ++templates_with_points;
          // Compile the first instantiation the planner would offer and the first and last valid
          // ones (smallest and largest values): the corners of the space.
          std::vector<param_values> chosen{**first, valid.front(), valid.back()};
          std::sort(chosen.begin(), chosen.end());
          chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
          for (const param_values& v : chosen) {
            std::string label = std::string(suite) + "/" + t.name + " " + s.id + "/" + tp.name;
            for (const auto& [name, value] : v)
              label += " " + name + "=" + std::to_string(value);
            auto text = engine::render(s, tp, t, v, reference);
            INFO(label << ": " << (text ? "" : text.error().message()));
            REQUIRE(text.has_value());
            to_compile.push_back({label, *text});
          }
        }
        CHECK(templates_with_points > 0);
      }
      CHECK(own_skill); // each family of the suites has a skill beyond launch parameters
      covered_families.insert(t.family);
    }
  }
  if (render_every)
    CHECK(rendered > 100);
  CHECK(covered_families.size() == 8);
  return to_compile;
}

} // namespace

TEST_CASE("every template of every skill renders for every task of its family in both suites",
          "[skills]") {
  CHECK_FALSE(render_suites(true).empty());
}

TEST_CASE("the first instantiation and the corners of every skill template compile for the "
          "suites' tasks for sm_90a without warnings",
          "[skills][nvcc]") {
  auto compiler = test::shared_compiler();
  if (!compiler)
    KS_SKIP("no nvcc: " + compiler.error().message());
  std::vector<case_t> to_compile = render_suites(false);
  std::vector<gpu::compile_request> requests;
  for (const case_t& c : to_compile)
    requests.push_back({c.source, c.label, {"-Xcompiler=-Wall,-Wextra"}});
  std::vector<gpu::compile_result> results = compiler->compile_all(requests);
  REQUIRE(results.size() == to_compile.size());
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(to_compile[i].label << "\n" << results[i].diagnostics);
    CHECK(results[i].ok);
    // ptxas -v reports resources as "info" lines; a warning of nvcc, the host compiler or
    // ptxas (spills included) fails the template.
    std::string lower = results[i].diagnostics;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    CHECK(lower.find("warning") == std::string::npos);
  }
}
