#include "engine/skill_library.hpp"
#include "engine/skill_partials.hpp"
#include "engine/skill_template.hpp"
#include "engine/task_manifest.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

using namespace ks::engine;

namespace {

const char* good_toml = R"(id = "tiles"
title = "Tiles"
version = 2
families = ["elementwise"]
addresses = ["memory"]
requires = ["task.numel_in % 4 == 0"]
guidance = "tile it"
anti_patterns = ["half precision"]
[[templates]]
name = "grid"
file = "grid.cu.mustache"
params = [ { name = "threads", values = [128, 256], default = 256 } ]
constraints = ["threads % 32 == 0"]
)";

skill_files files_of(std::string toml, std::string templ = "int t = {{threads}};\n") {
  return skill_files{"skills/tiles",
                     {{"skill.toml", std::move(toml)}, {"grid.cu.mustache", std::move(templ)}}};
}

/// Returns the message of loading `files`, which must fail.
std::string error_of(const skill_files& files) {
  auto s = load_skill(files);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().code() == errc::invalid_input);
  return s.error().message();
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("a valid skill loads with its fields, files and content hash", "[engine][skills]") {
  auto s = load_skill(files_of(good_toml));
  REQUIRE(s.has_value());
  CHECK(s->id == "tiles");
  CHECK(s->version == 2);
  CHECK(s->families == std::vector<std::string>{"elementwise"});
  CHECK(s->addresses == std::vector<bound_kind>{bound_kind::memory});
  REQUIRE(s->templates.size() == 1);
  CHECK(s->templates[0].params[0].default_value == 256);
  CHECK(s->files.size() == 2);
  CHECK(s->content_hash.size() == 16);
  // Any change of any file changes the hash; equal files hash equal.
  CHECK(load_skill(files_of(good_toml))->content_hash == s->content_hash);
  CHECK(load_skill(files_of(good_toml, "int t = {{threads}}; \n"))->content_hash !=
        s->content_hash);
}

TEST_CASE("a TOML syntax error in a skill file is reported at FILE:LINE:COL", "[engine][skills]") {
  std::string message = error_of(files_of(replaced(good_toml, "version = 2", "version = = 2")));
  CHECK(message.rfind("skills/tiles/skill.toml:3:", 0) == 0);
}

TEST_CASE("a skill file toml++ would not survive is refused at FILE:LINE:COL", "[engine][skills]") {
  // From a model or `skills import`: a 600 KB header of 300,000 parts overflowed toml++'s stack,
  // and U+03DD in a header reached its __builtin_unreachable (config/toml_source.hpp).
  std::string deep = "[a" + ks::test::repeated(".a", 299999) + "]\n" + good_toml;
  CHECK(error_of(files_of(deep))
            .rfind("skills/tiles/skill.toml:1:2: a dotted key or table header "
                   "of more than 64 parts",
                   0) == 0);
  std::string header = std::string(good_toml) + "[t\xcf\x9d]\n";
  CHECK(error_of(files_of(header))
            .rfind("skills/tiles/skill.toml:14:3: a character outside ASCII", 0) == 0);
}

TEST_CASE("every problem of a skill file is reported at its FILE:LINE:COL, in source order",
          "[engine][skills]") {
  std::string toml = good_toml;
  toml = replaced(toml, "version = 2", "version = 0");
  toml = replaced(toml, "addresses = [\"memory\"]", "addresses = [\"memroy\"]");
  toml = replaced(toml, "guidance = ", "guidence = \"x\"\nguidance = ");
  toml = replaced(toml, "default = 256 }", "default = 512 }");
  std::string message = error_of(files_of(toml));
  INFO(message);
  CHECK_THAT(message,
             Catch::Contains("skills/tiles/skill.toml:3:11: 'version' must be an integer >= 1"));
  CHECK_THAT(message, Catch::Contains("skills/tiles/skill.toml:5:14: unknown bottleneck class "
                                      "'memroy' (did you mean 'memory'?)"));
  CHECK_THAT(message,
             Catch::Contains(
                 "skills/tiles/skill.toml:7:1: unknown key 'guidence' (did you mean 'guidance'?)"));
  CHECK_THAT(message,
             Catch::Contains("skills/tiles/skill.toml:13:63: templates[0].params[0].default 512 is "
                             "not one of its values"));
  CHECK(message.find(":3:11:") < message.find(":5:14:"));
}

TEST_CASE("an expression's syntax error points at the character in the skill file",
          "[engine][skills]") {
  std::string message =
      error_of(files_of(replaced(good_toml, "\"threads % 32 == 0\"", "\"threads % % 32\"")));
  // The string starts at column 16 of line 13; its tenth character is the second '%'.
  CHECK_THAT(message,
             Catch::Contains(
                 "skills/tiles/skill.toml:13:27: templates[0].constraints[0]: unexpected '%'"));
}

TEST_CASE("an expression may name only parameters, task facts and diagnosis facts",
          "[engine][skills]") {
  std::string message =
      error_of(files_of(replaced(good_toml, "\"threads % 32 == 0\"", "\"thread % 32 == 0\"")));
  CHECK_THAT(
      message,
      Catch::Contains("skills/tiles/skill.toml:13:16: templates[0].constraints[0] names 'thread'"));
  message = error_of(
      files_of(replaced(good_toml, "\"task.numel_in % 4 == 0\"", "\"diagnosis.speed > 1\"")));
  CHECK_THAT(message,
             Catch::Contains("skills/tiles/skill.toml:6:13: requires[0] names 'diagnosis.speed'"));
}

TEST_CASE("a template's Mustache error is reported at its line and column", "[engine][skills]") {
  std::string message = error_of(files_of(good_toml, "// a kernel\nint t = {{threads;\n"));
  CHECK_THAT(message,
             Catch::Contains("skills/tiles/grid.cu.mustache:2:9: template error: Unclosed tag"));
  message = error_of(files_of(good_toml, "{{#flag.x}}\nint t;\n"));
  CHECK_THAT(message, Catch::Contains(
                          "skills/tiles/grid.cu.mustache:1:1: template error: Unclosed section"));
}

TEST_CASE("a missing template file and missing required keys are reported", "[engine][skills]") {
  std::string message = error_of(skill_files{"skills/tiles", {{"skill.toml", good_toml}}});
  CHECK_THAT(
      message,
      Catch::Contains("skills/tiles/skill.toml:11:8: template file 'grid.cu.mustache' not found"));
  message = error_of(files_of(replaced(good_toml, "title = \"Tiles\"\n", "")));
  CHECK_THAT(message, Catch::Contains("skills/tiles/skill.toml:1:1: missing required key 'title'"));
}

TEST_CASE("rendering fails on a name that nothing provides", "[engine][skills]") {
  auto s = load_skill(files_of(good_toml, "int t = {{threads}}, c = {{task.colums}};\n"));
  REQUIRE(s.has_value());
  task t;
  t.name = "relu";
  t.family = "elementwise";
  t.params = {{"cols", int64_t{64}}};
  auto text = render(*s, s->templates[0], t, {{"threads", 128}}, "");
  REQUIRE_FALSE(text.has_value());
  CHECK_THAT(text.error().message(), Catch::Contains("{{task.colums}}"));
  auto ok = load_skill(files_of(good_toml, "int t = {{threads}}, c = {{task.cols}};\n"));
  REQUIRE(ok.has_value());
  CHECK(render(*ok, ok->templates[0], t, {{"threads", 128}}, "").value() ==
        "int t = 128, c = 64;\n");
}

TEST_CASE("preconditions decide applicability; an undiagnosed parent passes diagnosis ones",
          "[engine][skills]") {
  auto s = load_skill(files_of(replaced(good_toml, "requires = [\"task.numel_in % 4 == 0\"]",
                                        "requires = [\"task.cols % 4 == 0\", "
                                        "\"diagnosis.fraction_of_roofline < 0.9\"]")));
  REQUIRE(s.has_value());
  task t;
  t.name = "relu";
  t.family = "elementwise";
  t.params = {{"cols", int64_t{64}}};
  CHECK(check_applies(*s, t, nullptr, "").applies);
  diagnosis d;
  d.diagnosed = true;
  d.bound = bound_kind::memory;
  d.fraction_of_roofline = 0.95;
  CHECK_FALSE(check_applies(*s, t, &d, "").applies);
  d.fraction_of_roofline = 0.5;
  CHECK(check_applies(*s, t, &d, "").applies);
  d.bound = bound_kind::compute; // the skill addresses memory-bound kernels only
  CHECK_THAT(check_applies(*s, t, &d, "").why_not, Catch::Contains("compute-bound"));
  CHECK_FALSE(addresses_bottleneck(*s, &d));
  CHECK(check_applies(*s, t, &d, "", /*by_bottleneck=*/false).applies);
  t.params = {{"cols", int64_t{63}}};
  CHECK_FALSE(check_applies(*s, t, nullptr, "").applies);
  t.params.clear(); // a task without the param: not applicable, never "unknown passes"
  CHECK_THAT(check_applies(*s, t, nullptr, "").why_not, Catch::Contains("has no cols"));
  t.family = "softmax";
  CHECK_FALSE(check_applies(*s, t, nullptr, "").applies);
}

TEST_CASE("the built-in skills load, each with guidance and a template", "[engine][skills]") {
  auto library = load_skill_library(ks::test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  CHECK(library->skills.size() >= 9);
  REQUIRE(library->find("launch_params") != nullptr);
  CHECK(library->find("launch_params")->templates.front().params_from_tunables);
  for (const skill& s : library->skills) {
    INFO(s.id);
    CHECK_FALSE(s.guidance.empty());
    CHECK_FALSE(s.templates.empty());
  }
}

TEST_CASE("a library refuses two skills with one id", "[engine][skills]") {
  auto a = load_skill(files_of(good_toml));
  REQUIRE(a.has_value());
  auto library = make_library({*a, *a});
  REQUIRE_FALSE(library.has_value());
  CHECK_THAT(library.error().message(), Catch::Contains("'tiles'"));
}

// -- prefer: a parameter's default that depends on the task ---------------------------------

namespace {

/// The tiles skill with a second parameter; `threads_prefer` and `items_prefer` (when not
/// empty) are the two parameters' prefer expressions.
std::string prefer_toml(const std::string& threads_prefer, const std::string& items_prefer) {
  auto prefer = [](const std::string& text) {
    return text.empty() ? std::string() : ", prefer = \"" + text + "\"";
  };
  std::string toml = replaced(good_toml,
                              "params = [ { name = \"threads\", values = [128, 256], default = "
                              "256 } ]",
                              "params = [\n  { name = \"threads\", values = [128, 256, 512], "
                              "default = 256" +
                                  prefer(threads_prefer) +
                                  " },\n  { name = \"items\", values = [1, 2, 4], default = 1" +
                                  prefer(items_prefer) + " },\n]");
  return replaced(toml, "constraints = [\"threads % 32 == 0\"]",
                  "constraints = [\"threads % 32 == 0\", \"threads * items <= 1024\"]");
}

task cols_task(int64_t cols) {
  task t;
  t.name = "relu";
  t.family = "elementwise";
  t.params = {{"cols", cols}};
  return t;
}

/// Returns the preferred defaults of the first template of the skill `toml` for `subject`.
param_values preferred_of(const std::string& toml, const task& subject) {
  auto s = load_skill(files_of(toml, "int t = {{threads}} * {{items}};\n"));
  INFO((s ? "" : s.error().message()));
  REQUIRE(s.has_value());
  const skill_template& t = s->templates.front();
  return preferred_defaults(t, t.params, subject);
}

/// Returns a matmul task C = A @ B, A [m, k], B [k, n], loaded from its manifest.
task matmul_task(const ks::test::test_context& context, int64_t m, int64_t n, int64_t k) {
  auto dims = [](int64_t a, int64_t b) {
    return "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
  };
  std::string manifest =
      "name = \"matmul\"\nfamily = \"matmul\"\n"
      "inputs = [ { name = \"A\", dtype = \"f32\", shape = " +
      dims(m, k) + " }, { name = \"B\", dtype = \"f32\", shape = " + dims(k, n) +
      " } ]\noutputs = [ { name = \"C\", dtype = \"f32\", shape = " + dims(m, n) +
      " } ]\ntolerance = { atol = 1e-3, rtol = 1e-4, norm_rel = 1e-5 }\n";
  auto t = load_task_manifest(context.write("matmul.toml", manifest));
  INFO(manifest << (t ? "" : t.error().message()));
  REQUIRE(t.has_value());
  return std::move(*t);
}

} // namespace

TEST_CASE("a param's prefer is its default for the task, snapped to the nearest value",
          "[engine][skills]") {
  std::string toml = prefer_toml("task.cols / 4", "");
  CHECK(preferred_of(toml, cols_task(1000)) == param_values{{"threads", 256}, {"items", 1}});
  CHECK(preferred_of(toml, cols_task(4000)) == param_values{{"threads", 512}, {"items", 1}});
  // 800 / 4 = 200: 128 is 72 away, 256 56; far below the smallest value: the smallest.
  CHECK(preferred_of(toml, cols_task(800))["threads"] == 256);
  CHECK(preferred_of(toml, cols_task(4))["threads"] == 128);
  // 768 / 4 = 192, as far from 128 as from 256: a tie goes to the smaller value.
  CHECK(preferred_of(toml, cols_task(768))["threads"] == 128);
  // A real is snapped alike; 190.0 is nearer 128 (62) than 256 (66).
  CHECK(preferred_of(prefer_toml("task.cols * 0.25", ""), cols_task(760))["threads"] == 128);
  CHECK(preferred_of(prefer_toml("task.cols * 0.25", ""), cols_task(776))["threads"] == 256);
  // The fixed default is what defaults_of still gives, for every task.
  auto s = load_skill(files_of(toml, "int t = {{threads}} * {{items}};\n"));
  REQUIRE(s.has_value());
  CHECK(defaults_of(s->templates.front().params) == param_values{{"threads", 256}, {"items", 1}});
  // And the first valid instantiation, the planner's start, is the preferred one.
  auto first = first_valid(s->templates.front(), s->templates.front().params, cols_task(4000));
  REQUIRE(first.has_value());
  REQUIRE(first->has_value());
  CHECK(**first == param_values{{"threads", 512}, {"items", 1}});
}

TEST_CASE("a prefer sees the params before it as preferred, and skips values that break a "
          "constraint for the next nearest",
          "[engine][skills]") {
  // items wants 2048 / threads; threads * items <= 1024 holds the nearest back.
  std::string toml = prefer_toml("task.cols / 4", "2048 / threads");
  // threads 128: items wants 16, nearest 4 (512 <= 1024).
  CHECK(preferred_of(toml, cols_task(400)) == param_values{{"threads", 128}, {"items", 4}});
  // threads 256: items wants 8; 4 gives 1024, which holds.
  CHECK(preferred_of(toml, cols_task(1000)) == param_values{{"threads", 256}, {"items", 4}});
  // threads 512: items wants 4, which breaks 512 * 4 <= 1024; the next nearest, 2, holds.
  CHECK(preferred_of(toml, cols_task(4000)) == param_values{{"threads", 512}, {"items", 2}});
}

TEST_CASE("a prefer that cannot be evaluated for a task falls back to the fixed default",
          "[engine][skills]") {
  const param_values fixed{{"threads", 256}, {"items", 1}};
  // A division by zero, for this task only: another task gets its preference.
  std::string by_zero = prefer_toml("4096 / (task.cols - 1000)", "");
  CHECK(preferred_of(by_zero, cols_task(1000)) == fixed);
  CHECK(preferred_of(by_zero, cols_task(1008))["threads"] == 512);
  // A fact the task lacks, a string, an overflow, a real division by zero (not finite).
  CHECK(preferred_of(prefer_toml("task.rows * 2", ""), cols_task(1000)) == fixed);
  CHECK(preferred_of(prefer_toml("'wide'", ""), cols_task(1000)) == fixed);
  CHECK(preferred_of(prefer_toml("task.cols * 9223372036854775807", ""), cols_task(1000)) == fixed);
  CHECK(preferred_of(prefer_toml("task.cols / 0.0", ""), cols_task(1000)) == fixed);
  // The first valid instantiation is then the fixed defaults, as without a prefer.
  auto s = load_skill(files_of(by_zero, "int t = {{threads}} * {{items}};\n"));
  REQUIRE(s.has_value());
  auto first = first_valid(s->templates.front(), s->templates.front().params, cols_task(1000));
  REQUIRE(first.has_value());
  REQUIRE(first->has_value());
  CHECK(**first == fixed);
}

TEST_CASE("a malformed prefer is a load error naming the file, the line and the param",
          "[engine][skills]") {
  std::string message = error_of(files_of(prefer_toml("", "threads / / 2")));
  INFO(message);
  // The string starts at column 63 of line 14; its eleventh character is the second '/'.
  CHECK_THAT(message, Catch::Contains("skills/tiles/skill.toml:14:74: templates[0].params[1] "
                                      "('items').prefer: unexpected '/' in 'threads / / 2'"));
  // Only task facts and the params listed before it: not itself, a later one, a diagnosis.
  message = error_of(files_of(prefer_toml("items * 256", "")));
  CHECK_THAT(message, Catch::Contains("skills/tiles/skill.toml:13:73: templates[0].params[0] "
                                      "('threads').prefer names 'items', which is not a task fact "
                                      "(task.NAME) or a parameter listed before 'threads'"));
  message = error_of(files_of(prefer_toml("", "items + diagnosis.registers")));
  CHECK_THAT(message, Catch::Contains("('items').prefer names 'items'"));
  CHECK_THAT(message, Catch::Contains("('items').prefer names 'diagnosis.registers'"));
  // Not a string.
  message = error_of(
      files_of(replaced(prefer_toml("", ""), "default = 1 }", "default = 1, prefer = 2 }")));
  CHECK_THAT(message,
             Catch::Contains("'templates[0].params[1] ('items').prefer' must be a string"));
}

TEST_CASE("matmul_split_k prefers the split that fills one to two waves, each slice two k-tiles",
          "[engine][skills]") {
  ks::test::test_context context;
  auto library = load_skill_library(ks::test::source_dir() / "skills");
  REQUIRE(library.has_value());
  const skill* s = library->find("matmul_split_k");
  REQUIRE(s != nullptr);
  const skill_template& t = s->templates.front();
  auto split_for = [&](int64_t m, int64_t n, int64_t k) {
    task subject = matmul_task(context, m, n, k);
    auto first = first_valid(t, t.params, subject);
    REQUIRE(first.has_value());
    REQUIRE(first->has_value());
    CHECK(**first == preferred_defaults(t, t.params, subject));
    return (**first).at("split_k");
  };
  // KernelBench level 1 problem 6: 4 tiles of 128 x 128, 1 block an SM by shared memory:
  // 1.5 * 132 / 4 = 49.5, between 33 (one whole wave of 132 blocks) and 66, the smaller.
  CHECK(split_for(256, 256, 524288) == 33);
  // A square 4096 product has 1024 tiles: the smallest split.
  CHECK(split_for(4096, 4096, 4096) == 2);
  // 512 x 512: 16 tiles, 12.4, nearest 16.
  CHECK(split_for(512, 512, 65536) == 16);
  // Below 128 rows, 64 x 64 tiles: 2 x 4 = 8 of them, 2 blocks an SM: 49.5, 33 again (264
  // blocks, one wave of two an SM).
  CHECK(split_for(100, 256, 524288) == 33);
  // A short K: 32 and 16 slices of 1024 would leave fewer than two 32-deep k-tiles (16 x 64
  // = 1024 is just enough).
  CHECK(split_for(256, 256, 1024) == 16);
  CHECK(split_for(256, 256, 1023) == 8);
  // The fixed default is unchanged.
  CHECK(defaults_of(t.params).at("split_k") == 4);
  // The tile: 128 x 128 on 2 x 4 warps where M and N reach 128, else 64 x 64 on 2 x 2.
  auto first_for = [&](int64_t m, int64_t n) {
    task subject = matmul_task(context, m, n, 524288);
    return preferred_defaults(t, t.params, subject);
  };
  const param_values big = first_for(256, 256);
  CHECK(big.at("bm") == 128);
  CHECK(big.at("bn") == 128);
  CHECK(big.at("warps_m") == 2);
  CHECK(big.at("warps_n") == 4);
  const param_values thin = first_for(256, 100);
  CHECK(thin.at("bm") == 64);
  CHECK(thin.at("bn") == 64);
  CHECK(thin.at("warps_n") == 2);
}

TEST_CASE("a partial alone on its line becomes the line, indented, one inside a line stays in it, "
          "and partials nest",
          "[engine][skills]") {
  std::map<std::string, std::string> files{
      {partial_key("ops"), "int a;\n{{> inner}}\n"},
      {partial_key("inner"), "int b;\n"},
      {partial_key("word"), "ks"},
  };
  expanded_template out = expand_partials("x\n  {{> ops}}\ny = {{> word}}_sum;\n", files);
  REQUIRE_FALSE(out.problem.has_value());
  CHECK(out.text == "x\n  int a;\n  int b;\ny = ks_sum;\n");
  CHECK(partial_names("{{> ops}} {{>word}} {{> ops}}") == std::vector<std::string>{"ops", "word"});
}

TEST_CASE("a missing partial, a name with a path and a partial that includes itself are refused "
          "at the tag",
          "[engine][skills]") {
  std::map<std::string, std::string> files{{partial_key("loop"), "{{> loop}}\n"}};
  expanded_template missing = expand_partials("int x;\n{{> nowhere}}\n", files);
  REQUIRE(missing.problem.has_value());
  CHECK(missing.problem->first == 7);
  CHECK_THAT(missing.problem->second, Catch::Contains("no partial 'nowhere'"));
  expanded_template path = expand_partials("{{> ../secret}}\n", files);
  REQUIRE(path.problem.has_value());
  CHECK_THAT(path.problem->second, Catch::Contains("letters, digits and underscores"));
  // A partial that includes another 16 times, six deep, stops at the limits.
  std::map<std::string, std::string> fan;
  for (int i = 0; i < 6; ++i)
    fan[partial_key("p" + std::to_string(i))] = std::string(64, 'x') + "\n" + [&] {
      std::string tags;
      for (int k = 0; k < 16; ++k)
        tags += "{{> p" + std::to_string(i + 1) + "}}\n";
      return tags;
    }();
  fan[partial_key("p6")] = std::string(4096, 'y') + "\n";
  expanded_template wide = expand_partials("{{> p0}}\n", fan);
  REQUIRE(wide.problem.has_value());
  CHECK_THAT(wide.problem->second, Catch::Contains("partials expanded"));
  expanded_template loop = expand_partials("{{> loop}}\n", files);
  REQUIRE(loop.problem.has_value());
  CHECK_THAT(loop.problem->second, Catch::Contains("nest deeper than"));
  CHECK_THAT(loop.problem->second, Catch::Contains("in partial 'loop'"));
}

TEST_CASE("a skill's folder brings the partials it includes from common/ beside it: its template "
          "loads expanded, its hash follows them, a missing one is reported at FILE:LINE:COL",
          "[engine][skills]") {
  ks::test::test_context context;
  namespace fs = std::filesystem;
  fs::create_directories("lib/common");
  fs::create_directories("lib/tiles");
  auto write = [](const fs::path& path, const std::string& text) { std::ofstream(path) << text; };
  write("lib/tiles/skill.toml", good_toml);
  write("lib/tiles/grid.cu.mustache", "// tiles\n{{> body}}\n");
  write("lib/common/body.cu.mustache", "int t = {{threads}};\n{{> tail}}\n");
  write("lib/common/tail.cu.mustache", "int u;\n");
  write("lib/common/unused.cu.mustache", "int v;\n");
  auto files = read_skill_folder("lib/tiles/");
  REQUIRE(files.has_value());
  CHECK(files->files.count(partial_key("body")) == 1);
  CHECK(files->files.count(partial_key("tail")) == 1);
  CHECK(files->files.count(partial_key("unused")) == 0);
  auto s = load_skill(*files);
  REQUIRE(s.has_value());
  CHECK(s->templates[0].text == "// tiles\nint t = {{threads}};\nint u;\n");
  write("lib/common/tail.cu.mustache", "int w;\n");
  auto changed = load_skill(*read_skill_folder("lib/tiles"));
  REQUIRE(changed.has_value());
  CHECK(changed->content_hash != s->content_hash);
  write("lib/tiles/grid.cu.mustache", "// tiles\n{{> absent}}\n");
  auto broken = read_skill_folder("lib/tiles");
  REQUIRE(broken.has_value());
  CHECK_THAT(error_of(*broken), Catch::Contains("grid.cu.mustache:2:1: template error: no "
                                                "partial 'absent'"));
}
