// The channel_norm family's skills (batchnorm_split_stats, groupnorm_cluster_rows,
// channel_norm_cooperative) against a spread of tasks: batch, instance and group norms, with and
// without affine weights, 1-d (no spatial dims), 2-d and 3-d spatial extents, spatial sizes that
// are and are not multiples of 4, groups of 1 and of every channel, and KernelBench's shapes
// (BatchNorm2d(64) over [64, 64, 512, 512], InstanceNorm2d(64) and GroupNorm(8, 64) over
// [112, 64, 512, 512]). Each task is a family manifest loaded as the engine loads any. Checked:
// each skill applies exactly where it computes (batch statistics are not rows; grids past
// 2^31 - 1 CTAs are refused), every valid instantiation renders, the planner's first choice for
// the KernelBench tasks and the corners of each space for the first task compile for sm_90a with
// nvcc with no warning and no spill, and, for the small tasks, the kernels run on the CPU emulator
// (memops_cuda_emulator.hpp, which runs clusters, cooperative launches and cp.async) and match both
// the family's reference, rendered for the task and run on the same emulator, and a plain
// double-precision loop, at the task's float32 tolerance: the first choice (every small task) and
// variants that force the other paths (every third) (a cluster of 2-16 CTAs exchanging sums through
// distributed shared memory, slices and chunks only partly held in shared memory
// (KS_RESIDENT_QUADS), nothing held, several teams, channels split into many parts (KS_PART),
// walked plane by plane or flat (KS_FLAT)), twice in a row (workspaces, tickets and barrier
// counters must be left reset) and with every pointer one float off 16-byte alignment, on inputs
// centred at 0 and at 5 (the statistics' shift against cancellation). No GPU: nvcc and g++ run on
// the CPU.

#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
#include "engine/task_manifest.hpp"
#include "gpu/compiler.hpp"
#include "tests/skills/all_instantiations.hpp"
#include "tests/skills/emulated_kernel.hpp"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace ks;
using engine::param_values;
using test::all_instantiations;
namespace fs = std::filesystem;

namespace {

const std::set<std::string> covered_skills = {"batchnorm_split_stats", "groupnorm_cluster_rows",
                                              "channel_norm_cooperative"};

struct norm_case {
  std::string name;
  std::string toml;
  bool batch;   ///< batch statistics (else instance or group)
  bool emulate; ///< small enough to run on the emulator
};

/// A channel_norm manifest of x `shape`, `op`, with `groups` (group norms) and affine weights.
norm_case norm_task(const std::string& name, const std::string& op,
                    const std::vector<int64_t>& shape, int64_t groups, bool affine,
                    bool emulate = true) {
  std::string dims = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    dims += (i ? ", " : "") + std::to_string(shape[i]);
  dims += "]";
  const std::string channels = "[" + std::to_string(shape[1]) + "]";
  std::string toml = "name = \"" + name + "\"\nfamily = \"channel_norm\"\ninputs = [";
  toml += "{ name = \"x\", dtype = \"f32\", shape = " + dims + " }";
  if (affine)
    toml += ", { name = \"weight\", dtype = \"f32\", shape = " + channels +
            " }, { name = \"bias\", dtype = \"f32\", shape = " + channels + " }";
  toml += "]\noutputs = [{ name = \"y\", dtype = \"f32\", shape = " + dims + " }]\n";
  toml += "params = { op = \"" + op + "\"" +
          (op == "group" ? ", groups = " + std::to_string(groups) : std::string()) +
          (affine ? ", affine = true" : "") + " }\n";
  toml += "tolerance = { atol = 1e-5, rtol = 1e-5, norm_rel = 1e-5 }\n";
  return {name, toml, op == "batch", emulate};
}

std::vector<norm_case> cases() {
  return {
      // KernelBench level 1 (rendered and compiled only)
      norm_task("batchnorm_kb", "batch", {64, 64, 512, 512}, 0, true, false),
      norm_task("instancenorm_kb", "instance", {112, 64, 512, 512}, 0, false, false),
      norm_task("instancenorm_kb_affine", "instance", {112, 64, 512, 512}, 0, true, false),
      norm_task("groupnorm_kb", "group", {112, 64, 512, 512}, 8, true, false),
      // batch statistics: odd planes, no spatial dims, 3-d, aligned planes, long channels
      norm_task("batch_odd", "batch", {3, 5, 7, 9}, 0, true),
      norm_task("batch_1d", "batch", {37, 6}, 0, false),
      norm_task("batch_3d", "batch", {2, 3, 4, 5, 6}, 0, true),
      norm_task("batch_aligned", "batch", {5, 4, 16, 16}, 0, false),
      norm_task("batch_long", "batch", {6, 3, 37, 29}, 0, true),
      // instance: odd and 1-d planes, 3-d, affine or not
      norm_task("instance_odd", "instance", {3, 4, 9, 7}, 0, true),
      norm_task("instance_1d", "instance", {2, 5, 130}, 0, false),
      norm_task("instance_3d", "instance", {2, 3, 4, 4, 4}, 0, true),
      // group: odd planes (the channel changes inside a quad), one group, a group a channel,
      // no affine, 3-d, rows of thousands
      norm_task("group_odd", "group", {2, 6, 5, 7}, 3, true),
      norm_task("group_one", "group", {3, 8, 12}, 1, true),
      norm_task("group_every_channel", "group", {2, 6, 11}, 6, true),
      norm_task("group_plain", "group", {2, 8, 4, 4}, 2, false),
      norm_task("group_3d", "group", {1, 4, 3, 5, 7}, 2, true),
      norm_task("group_long", "group", {2, 4, 33, 33}, 2, true),
  };
}

// -- the plain computation ------------------------------------------------------------------

int64_t integer(const engine::task& t, const std::string& name) {
  return std::get<int64_t>(t.derived.scalars.at(name));
}

/// y of the task for inputs `in`, in double: each statistics group's elements listed, their
/// mean, their mean squared deviation, then every element normalized.
std::vector<double> normalized(const engine::task& t, const std::vector<std::vector<double>>& in) {
  const int64_t batch = integer(t, "batch"), channels = integer(t, "channels");
  const int64_t spatial = integer(t, "spatial"), groups = integer(t, "groups");
  const int64_t per_group = integer(t, "channels_per_group");
  const bool across_batch = std::get<std::string>(t.derived.scalars.at("op")) == "batch";
  const bool affine = std::get<bool>(t.derived.scalars.at("affine"));
  const double eps = std::get<double>(t.derived.scalars.at("eps"));
  const std::vector<double>& x = in[0];
  std::vector<std::vector<size_t>> members(
      static_cast<size_t>(across_batch ? channels : batch * groups));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t g = across_batch ? c : n * groups + c / per_group;
      for (int64_t s = 0; s < spatial; ++s)
        members[static_cast<size_t>(g)].push_back(
            static_cast<size_t>((n * channels + c) * spatial + s));
    }
  std::vector<double> y(x.size());
  for (const std::vector<size_t>& m : members) {
    double mean = 0, var = 0;
    for (size_t i : m)
      mean += x[i];
    mean /= static_cast<double>(m.size());
    for (size_t i : m)
      var += (x[i] - mean) * (x[i] - mean);
    var /= static_cast<double>(m.size());
    for (size_t i : m) {
      const auto c = static_cast<size_t>(static_cast<int64_t>(i) / spatial % channels);
      y[i] = (x[i] - mean) / std::sqrt(var + eps);
      if (affine)
        y[i] = y[i] * in[1][c] + in[2][c];
    }
  }
  return y;
}

/// x ~ N(offset, 1), weight ~ N(1, 0.5), bias ~ N(0, 1), each rounded to float.
std::vector<std::vector<double>> draw(const engine::task& t, uint64_t seed, double offset) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    std::vector<double> v(static_cast<size_t>(t.inputs[i].numel()));
    for (double& e : v) {
      const double d = normal(rng);
      e = static_cast<float>(i == 0 ? offset + d : i == 1 ? 1.0 + 0.5 * d : d);
    }
    values.push_back(std::move(v));
  }
  return values;
}

/// A variant to run on the emulator: parameters and #defines put before the source.
struct variant {
  param_values values;
  std::string defines;
};

/// The variants of skill `id` that force the paths a small task's first choice does not take.
std::vector<variant> forcing_variants(const std::string& id) {
  if (id == "groupnorm_cluster_rows")
    return {
        // a cluster of 4, each slice 3 quads held and the rest streamed twice
        {{{"cluster", 4}, {"ctas_per_sm", 2}, {"threads", 128}, {"resident", 1}},
         "#define KS_RESIDENT_QUADS 3\n"},
        // a cluster of 2, slices held whole
        {{{"cluster", 2}, {"ctas_per_sm", 2}, {"threads", 256}, {"resident", 1}}, ""},
        // 16 CTAs, nothing held
        {{{"cluster", 16}, {"ctas_per_sm", 2}, {"threads", 128}, {"resident", 0}}, ""},
    };
  if (id == "channel_norm_cooperative")
    return {
        // three teams, chunks partly held
        {{{"ctas_per_sm", 2}, {"threads", 256}, {"teams", 3}}, "#define KS_RESIDENT_QUADS 5\n"},
        // one team, nothing held
        {{{"ctas_per_sm", 1}, {"threads", 256}, {"teams", 1}}, "#define KS_RESIDENT_QUADS 0\n"},
        // automatic teams where a chunk of 40 quads fits
        {{{"ctas_per_sm", 2}, {"threads", 256}, {"teams", 0}}, "#define KS_RESIDENT_QUADS 40\n"},
    };
  return {
      // parts of 8 values, many per channel and split across samples, walked plane by plane
      {{{"threads", 128}, {"unroll", 2}, {"part", 16384}},
       "#define KS_PART 8\n#define KS_FLAT 0\n"},
      // parts of 100 values walked flat (the first choice walks planes of 1024 or more so)
      {{{"threads", 128}, {"unroll", 8}, {"part", 16384}},
       "#define KS_PART 100\n#define KS_FLAT 1\n"},
  };
}

struct rendered_case {
  std::string label;
  std::string source;
  const engine::task* subject;
  bool compile;        ///< with nvcc
  std::string emulate; ///< empty: not emulated; else the #defines to put before the source
};

/// The source for the emulator: `defines`, the emulator, then the candidate.
std::string emulated_source(const rendered_case& c) {
  const fs::path header = test::source_dir() / "tests" / "skills" / "memops_cuda_emulator.hpp";
  // The header's content is part of the cache key: emulated_all() hashes the source as the
  // preprocessor expands it.
  return "#define KS_EMULATE 1\n" + c.emulate + "#include \"" + header.string() + "\"\n" + c.source;
}

/// The instantiations of the first template of skill `id` whose constraints hold for `t`.
std::vector<param_values> valid_points(const engine::skill& s, const engine::task& t) {
  return test::valid_instantiations(s.templates.front(), t, t.reference_source);
}

} // namespace

TEST_CASE("the channel-norm skills refuse what they cannot compute: batch statistics are no "
          "rows, rows are no channels, grids past 2^31 - 1 CTAs",
          "[skills]") {
  test::test_context context;
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  auto load = [&](const norm_case& c) {
    auto loaded = engine::load_task_manifest(context.write(c.name + ".toml", c.toml));
    INFO(c.name << "\n" << c.toml << (loaded ? "" : loaded.error().message()));
    REQUIRE(loaded.has_value());
    return *loaded;
  };
  auto applies = [&](const std::string& id, const engine::task& t) {
    const engine::skill* s = library->find(id);
    REQUIRE(s != nullptr);
    engine::applicability a = engine::check_applies(*s, t, nullptr, t.reference_source);
    INFO(t.name << " with " << id << ": " << a.why_not);
    CHECK(a.applies == a.why_not.empty());
    return a.applies;
  };

  // The op: a batch norm's statistics span the batch (no contiguous rows for a cluster); the
  // split-statistics kernel sums channels over the batch, never (sample, group) rows.
  const engine::task batch = load(norm_task("batch", "batch", {4, 6, 5, 5}, 0, true));
  const engine::task instance = load(norm_task("instance", "instance", {4, 6, 5, 5}, 0, true));
  const engine::task group = load(norm_task("group", "group", {4, 6, 5, 5}, 3, false));
  CHECK(applies("batchnorm_split_stats", batch));
  CHECK_FALSE(applies("batchnorm_split_stats", instance));
  CHECK_FALSE(applies("batchnorm_split_stats", group));
  CHECK_FALSE(applies("groupnorm_cluster_rows", batch));
  CHECK(applies("groupnorm_cluster_rows", instance));
  CHECK(applies("groupnorm_cluster_rows", group));
  for (const engine::task* t : {&batch, &instance, &group})
    CHECK(applies("channel_norm_cooperative", *t));

  // Other families: none of the three.
  const std::string softmax = "name = \"softmax\"\nfamily = \"softmax\"\n"
                              "inputs = [{ name = \"x\", dtype = \"f32\", shape = [4, 64] }]\n"
                              "outputs = [{ name = \"y\", dtype = \"f32\", shape = [4, 64] }]\n"
                              "params = { op = \"softmax\", dim = 1 }\n"
                              "tolerance = { atol = 1e-6, rtol = 1e-5, norm_rel = 1e-6 }\n";
  auto other = engine::load_task_manifest(context.write("softmax.toml", softmax));
  REQUIRE(other.has_value());
  for (const std::string& id : covered_skills)
    CHECK_FALSE(applies(id, *other));

  // A cluster per (sample, group) row: 2^28 rows leave clusters of 1 to 4 CTAs within the grid
  // (8, 16 and the automatic size, which may be 16, are not); 2^31 rows none.
  const engine::task rows_2_28 =
      load(norm_task("rows_2_28", "instance", {int64_t{1} << 28, 1, 2}, 0, false, false));
  REQUIRE(applies("groupnorm_cluster_rows", rows_2_28));
  std::set<int64_t> clusters;
  for (const param_values& v : valid_points(*library->find("groupnorm_cluster_rows"), rows_2_28))
    clusters.insert(v.at("cluster"));
  CHECK(clusters == std::set<int64_t>{1, 2, 4});
  CHECK_FALSE(
      applies("groupnorm_cluster_rows",
              load(norm_task("rows_2_31", "instance", {int64_t{1} << 31, 1, 2}, 0, false, false))));

  // A CTA per (channel, part): 2^14 channels of 2^31 values take parts of 32K or more; 2^16
  // channels of 2^34 values none (at most 2^18 values a part).
  const engine::task channels_2_14 =
      load(norm_task("channels_2_14", "batch",
                     {int64_t{1} << 15, int64_t{1} << 14, int64_t{1} << 16}, 0, false, false));
  REQUIRE(applies("batchnorm_split_stats", channels_2_14));
  std::set<int64_t> parts;
  for (const param_values& v : valid_points(*library->find("batchnorm_split_stats"), channels_2_14))
    parts.insert(v.at("part"));
  CHECK(parts == std::set<int64_t>{32768, 65536, 131072, 262144});
  CHECK_FALSE(applies(
      "batchnorm_split_stats",
      load(norm_task("channels_2_16", "batch",
                     {int64_t{1} << 17, int64_t{1} << 16, int64_t{1} << 17}, 0, false, false))));

  // Teams of the cooperative grid: no more than statistics groups (2 channels; 3 rows).
  std::set<int64_t> teams;
  for (const param_values& v :
       valid_points(*library->find("channel_norm_cooperative"),
                    load(norm_task("two_channels", "batch", {3, 2, 8}, 0, false))))
    teams.insert(v.at("teams"));
  CHECK(teams == std::set<int64_t>{0, 1, 2});
  teams.clear();
  for (const param_values& v :
       valid_points(*library->find("channel_norm_cooperative"),
                    load(norm_task("three_rows", "group", {3, 4, 8}, 1, false))))
    teams.insert(v.at("teams"));
  CHECK(teams == std::set<int64_t>{0, 1, 2, 3});
}

namespace {

/// The spread's tasks (loaded from manifests written in `context`) and what the nvcc and
/// emulator tests build of them.
struct spread {
  test::test_context context;
  std::vector<engine::task> tasks; ///< filled once, then never moved: rendered points into it
  std::vector<rendered_case> rendered;
  engine::skill_library library;
};

/// Loads every task of cases(), checks that each covered skill applies exactly where it
/// computes, and collects in `sp.rendered` the first choices, the corners and the forcing
/// variants (rendered); with `render_every`, renders every valid instantiation too, checking
/// each (the render test's: most of its time, which the nvcc and emulator tests leave out).
void render_spread(spread& sp, bool render_every) {
  auto loaded_library = engine::load_skill_library(test::source_dir() / "skills");
  INFO((loaded_library ? "" : loaded_library.error().message()));
  REQUIRE(loaded_library.has_value());
  sp.library = std::move(*loaded_library);
  const engine::skill_library* library = &sp.library;
  for (const std::string& id : covered_skills)
    REQUIRE(library->find(id) != nullptr);

  const std::vector<norm_case> all = cases();
  for (const norm_case& c : all) {
    auto loaded = engine::load_task_manifest(sp.context.write(c.name + ".toml", c.toml));
    INFO(c.name << "\n" << c.toml << (loaded ? "" : loaded.error().message()));
    REQUIRE(loaded.has_value());
    sp.tasks.push_back(std::move(*loaded));
  }

  std::set<std::string> corners_done;
  int64_t renders = 0;
  for (size_t n = 0; n < sp.tasks.size(); ++n) {
    const engine::task& t = sp.tasks[n];
    auto reference = engine::read_reference(t);
    REQUIRE(reference.has_value());
    std::set<std::string> applied;
    for (const engine::skill& s : library->skills) {
      if (covered_skills.count(s.id) == 0)
        continue;
      engine::applicability a = engine::check_applies(s, t, nullptr, *reference);
      INFO(t.name << " with skill " << s.id << ": " << a.why_not);
      CHECK(a.why_not.find("has no") == std::string::npos);
      if (!a.applies)
        continue;
      applied.insert(s.id);
      for (const engine::skill_template& tp : s.templates) {
        auto space = engine::space_of(tp, t, *reference);
        REQUIRE(space.has_value());
        std::vector<param_values> valid;
        for (const param_values& v : all_instantiations(*space)) {
          auto why = engine::check_params(tp, *space, v, t);
          REQUIRE(why.has_value());
          if (*why)
            continue;
          if (render_every) {
            auto text = engine::render(s, tp, t, v, *reference);
            INFO((text ? "" : text.error().message()));
            REQUIRE(text.has_value());
            CHECK(text->find("{{") == std::string::npos);
            ++renders;
          }
          valid.push_back(v);
        }
        REQUIRE_FALSE(valid.empty());
        auto first = engine::first_valid(tp, *space, t);
        REQUIRE(first.has_value());
        REQUIRE(first->has_value());
        // The first choice for every task, the corners for the first task of a template.
        std::vector<variant> chosen{{**first, ""}};
        if (corners_done.insert(s.id + "/" + tp.name).second) {
          chosen.push_back({valid.front(), ""});
          chosen.push_back({valid.back(), ""});
        }
        const size_t compiled = chosen.size();
        // The forcing variants on every third small task (each skill meets at least one): a
        // fresh build compiles every emulated source, and the test must stay well within its
        // ctest timeout on a 2-core machine.
        if (all[n].emulate && n % 3 == 0)
          for (const variant& v : forcing_variants(s.id)) {
            auto why = engine::check_params(tp, *space, v.values, t);
            REQUIRE(why.has_value());
            if (!*why)
              chosen.push_back(v);
          }
        std::set<std::pair<param_values, std::string>> seen;
        for (size_t i = 0; i < chosen.size(); ++i) {
          const variant& v = chosen[i];
          if (!seen.insert({v.values, v.defines}).second)
            continue;
          auto text = engine::render(s, tp, t, v.values, *reference);
          REQUIRE(text.has_value());
          std::string label = t.name + " " + s.id + "/" + tp.name;
          for (const auto& [name, value] : v.values)
            label += " " + name + "=" + std::to_string(value);
          if (!v.defines.empty())
            label += " with " + v.defines.substr(0, v.defines.size() - 1);
          const bool emulate = all[n].emulate && (i == 0 || i >= compiled);
          // nvcc compiles the corners and the KernelBench tasks' first choices; a small task's
          // first choice is checked by running it on the emulator instead.
          const bool compile = i < compiled && (i > 0 || !all[n].emulate);
          sp.rendered.push_back({label, *text, &t, compile, emulate ? v.defines + "\n" : ""});
        }
      }
    }
    INFO(t.name);
    if (all[n].batch)
      CHECK(applied == std::set<std::string>{"batchnorm_split_stats", "channel_norm_cooperative"});
    else
      CHECK(applied == std::set<std::string>{"groupnorm_cluster_rows", "channel_norm_cooperative"});
  }
  if (render_every)
    CHECK(renders > 300);
}

} // namespace

TEST_CASE("the channel-norm skills apply where they compute, every valid instantiation renders, "
          "and the planner's first choices for KernelBench's shapes are the fast ones",
          "[skills]") {
  spread sp;
  render_spread(sp, true);
  // The planner's first choices for KernelBench's shapes: the configurations meant to be fastest.
  auto first_choice = [&](const std::string& id, const std::string& task) {
    const engine::skill& s = *sp.library.find(id);
    const auto t = std::find_if(sp.tasks.begin(), sp.tasks.end(),
                                [&](const engine::task& e) { return e.name == task; });
    REQUIRE(t != sp.tasks.end());
    auto space = engine::space_of(s.templates.front(), *t, "");
    REQUIRE(space.has_value());
    auto first = engine::first_valid(s.templates.front(), *space, *t);
    REQUIRE(first.has_value());
    REQUIRE(first->has_value());
    return **first;
  };
  // 1 MB rows: 16 CTAs of 64 KB at two per SM, the row held whole.
  CHECK(first_choice("groupnorm_cluster_rows", "instancenorm_kb") ==
        param_values{{"cluster", 0}, {"ctas_per_sm", 2}, {"threads", 512}, {"resident", 1}});
  // Teams sized to hold an 8 MB row (3 of 44 CTAs on 132 SMs), 1024 threads.
  CHECK(first_choice("channel_norm_cooperative", "groupnorm_kb") ==
        param_values{{"ctas_per_sm", 1}, {"threads", 1024}, {"teams", 0}});
  CHECK(first_choice("batchnorm_split_stats", "batchnorm_kb") ==
        param_values{{"threads", 256}, {"unroll", 4}, {"part", 65536}});
}

TEST_CASE("the channel-norm skills' first choices and corners compile for sm_90a without "
          "warnings or spills",
          "[skills][nvcc]") {
  auto compiler = test::shared_compiler();
  if (!compiler)
    KS_SKIP("no nvcc: " + compiler.error().message());
  spread sp;
  render_spread(sp, false);
  std::vector<const rendered_case*> compiled;
  std::vector<gpu::compile_request> requests;
  for (const rendered_case& c : sp.rendered)
    if (c.compile) {
      compiled.push_back(&c);
      requests.push_back({c.source, c.label, {"-Xcompiler=-Wall,-Wextra"}, ""});
    }
  CHECK(requests.size() > 8);
  std::vector<gpu::compile_result> results = compiler->compile_all(requests);
  REQUIRE(results.size() == requests.size());
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(compiled[i]->label << "\n" << results[i].diagnostics);
    CHECK(results[i].ok);
    std::string lower = results[i].diagnostics;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    CHECK(lower.find("warning") == std::string::npos);
    CHECK_FALSE(results[i].kernels.empty());
    for (const gpu::kernel_resources& k : results[i].kernels) {
      INFO(k.name << ": " << k.registers << " registers");
      CHECK(k.spill_stores == 0);
      CHECK(k.spill_loads == 0);
    }
  }
}

TEST_CASE("the channel-norm skills match the family reference and a double loop on the CPU "
          "emulator, twice in a row and from unaligned pointers",
          "[skills][emulation]") {
  spread sp;
  render_spread(sp, false);
  std::vector<const rendered_case*> runs;
  for (const rendered_case& c : sp.rendered)
    if (!c.emulate.empty())
      runs.push_back(&c);
  CHECK(runs.size() > 45);
  // The candidates, then the family's reference of each task, rendered as the engine renders it
  // and run on the same emulator (what a skill's kernel is judged against on the GPU): compiled
  // first, one host compiler per core.
  std::vector<std::string> sources;
  for (const rendered_case* c : runs)
    sources.push_back(emulated_source(*c));
  std::map<const engine::task*, fs::path> references;
  for (const rendered_case* c : runs)
    references.emplace(c->subject, fs::path{});
  for (const auto& [t, so] : references)
    sources.push_back(t->reference_source);
  std::vector<fs::path> objects;
  std::vector<std::string> logs;
  for (test::host_build& b : test::emulated_all(sources)) {
    objects.push_back(b.shared_object);
    logs.push_back(std::move(b.log));
  }
  size_t next = runs.size();
  for (auto& [t, so] : references) {
    INFO(t->name << ": the family reference\n" << logs[next]);
    so = objects[next++];
    REQUIRE_FALSE(so.empty());
  }
  for (size_t r = 0; r < runs.size(); ++r) {
    const rendered_case& c = *runs[r];
    const engine::task& t = *c.subject;
    INFO(c.label << "\n" << logs[r]);
    REQUIRE_FALSE(objects[r].empty());
    for (int shift : {0, 1}) {
      const double offset = shift == 0 ? 0.0 : 5.0;
      std::vector<std::vector<double>> inputs = draw(t, 17 + r, offset);
      INFO("pointers shifted by " << shift << " float(s), x centred at " << offset);
      test::emulated_run want = test::run_emulated(references.at(&t), t, inputs, shift, 1, 5);
      REQUIRE(want.error == "");
      const std::vector<double> plain = normalized(t, inputs);
      CHECK(test::mismatch(t, want.output, plain) == "");
      // 8 SMs of 2 blocks: a cluster of 16 CTAs fits, as on an H100.
      test::emulated_run got = test::run_emulated(objects[r], t, inputs, shift, 2,
                                                  3 + static_cast<uint64_t>(r), {8, 2, 3});
      CHECK(got.error == "");
      if (!got.error.empty())
        continue;
      INFO("against the family reference");
      CHECK(test::mismatch(t, got.output, want.output) == "");
      INFO("against the double loop");
      CHECK(test::mismatch(t, got.output, plain) == "");
    }
  }
}
