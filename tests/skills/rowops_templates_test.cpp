// The row-op skills (softmax, norm and reduce families, issue 10) against a spread of shapes
// in the [outer, axis, inner] view of docs/tasks.md: the suites' shapes, odd lengths, a dim of
// 1, lengths that are not a multiple of 4, tiny and huge axes, inner 1 and inner > 1, every op
// (l1 norms by the sum and by the mean, logsumexp) and lines over every dim (a Frobenius norm,
// reductions to a scalar). Each skill applies where its regime is (and not elsewhere), with
// the template meant for the case, every valid instantiation renders, the planner's first
// choice for the suites' big shapes is the one meant to be fastest, and the first choice for
// every shape (plus the corners of one shape's space per template) compiles with nvcc for
// sm_90a without a warning. No GPU: nvcc runs on the CPU. (The kernels that need neither
// clusters nor a cooperative launch also run on the CPU emulator: memops_skills_test.cpp.)
//
// The tasks are built here with the values the family loader derives (task.outer, task.axis,
// task.inner, task.op, task.eps, ...), so the test does not depend on how manifests spell them.

#include "engine/op_family.hpp"
#include "engine/skill_library.hpp"
#include "engine/skill_template.hpp"
#include "engine/task.hpp"
#include "gpu/compiler.hpp"
#include "tests/skills/all_instantiations.hpp"
#include "tests/test_compiler.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace ks;
using engine::param_values;
using test::all_instantiations;

namespace {

const std::vector<std::string> row_op_skills = {
    "softmax_cluster_rows",       "softmax_cluster_stream", "softmax_warp_rows",
    "softmax_grid_rows",          "softmax_online_rows",    "softmax_inner_columns",
    "norm_cluster_rows",          "norm_warp_rows",         "norm_grid_rows",
    "rmsnorm_channels_registers", "reduce_split_columns",   "reduce_rows",
};

int64_t product(const std::vector<int64_t>& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= shape[i];
  return p;
}

engine::tensor_spec tensor(const std::string& name, std::vector<int64_t> shape,
                           engine::dtype type = engine::dtype::f32) {
  engine::tensor_spec t;
  t.name = name;
  t.type = type;
  t.shape = std::move(shape);
  return t;
}

/// Returns a task of `family` acting on dims [first, last] of `shape`, with the values the
/// family loader derives.
engine::task axis_task(const std::string& name, const std::string& family, const std::string& op,
                       const std::vector<int64_t>& shape, size_t first, size_t last) {
  engine::task t;
  t.name = name;
  t.family = family;
  t.inputs.push_back(tensor("x", shape));
  t.params["op"] = op;
  t.params["dim"] = static_cast<int64_t>(first);
  t.params["outer"] = product(shape, 0, first);
  t.params["axis"] = product(shape, first, last + 1);
  t.params["inner"] = product(shape, last + 1, shape.size());
  t.params["axis_is_last"] = last + 1 == shape.size();
  return t;
}

engine::task softmax_task(const std::string& name, const std::string& op,
                          const std::vector<int64_t>& shape, size_t dim) {
  engine::task t = axis_task(name, "softmax", op, shape, dim, dim);
  t.outputs.push_back(tensor("y", shape));
  return t;
}

engine::task norm_task(const std::string& name, const std::string& op,
                       const std::vector<int64_t>& shape, size_t first, size_t last, bool affine,
                       bool mean = false) {
  engine::task t = axis_task(name, "norm", op, shape, first, last);
  t.params["eps"] = op == "l2" || op == "l1" ? 1e-12 : 1e-5;
  t.params["affine"] = affine;
  t.params["mean"] = mean;
  int64_t axis = std::get<int64_t>(t.params["axis"]);
  if (affine)
    t.inputs.push_back(tensor("weight", {axis}));
  if (affine && op == "layer")
    t.inputs.push_back(tensor("bias", {axis}));
  t.outputs.push_back(tensor("y", shape));
  return t;
}

/// Returns a channel norm of `shape` [batch, channels, *spatial] in `groups` groups (instance:
/// one per channel), with the values the family loader derives: for instance and group, the
/// rows of a layer norm, [batch x groups, channels / groups x spatial].
engine::task channel_norm_task(const std::string& name, const std::string& op,
                               const std::vector<int64_t>& shape, int64_t groups, bool affine) {
  engine::task t;
  t.name = name;
  t.family = "channel_norm";
  t.inputs.push_back(tensor("x", shape));
  if (affine) {
    t.inputs.push_back(tensor("weight", {shape[1]}));
    t.inputs.push_back(tensor("bias", {shape[1]}));
  }
  t.outputs.push_back(tensor("y", shape));
  const int64_t spatial = product(shape, 2, shape.size());
  t.params["op"] = op;
  t.params["eps"] = 1e-5;
  t.params["affine"] = affine;
  t.params["groups"] = groups;
  if (op != "batch") {
    t.params["outer"] = shape[0] * groups;
    t.params["axis"] = shape[1] / groups * spatial;
    t.params["inner"] = int64_t{1};
  }
  return t;
}

/// Adds what every reduce template reads its input through (task.source, task.mapped, task.maps and
/// the input's offset), derived by the family itself from the task's own params.
void add_source(engine::task& t, size_t first, size_t last) {
  engine::task plain = t;
  std::vector<int64_t> dims;
  for (size_t d = first; d <= last; ++d)
    dims.push_back(static_cast<int64_t>(d));
  plain.params = {{"op", t.params.at("op")}, {"dims", dims}, {"keepdim", t.params.at("keepdim")}};
  engine::family_sources where;
  where.input_shapes.resize(t.inputs.size());
  where.input_types.resize(t.inputs.size());
  where.output_shapes.resize(t.outputs.size());
  where.output_types.resize(t.outputs.size());
  engine::family_analysis a = engine::analyze_family(plain, where);
  INFO(t.name << ": " << (a.problems.empty() ? "" : a.problems.front().message));
  REQUIRE(a.problems.empty());
  for (const char* name : {"source", "mapped", "maps"})
    t.derived.scalars[name] = a.derived.scalars.at(name);
  t.derived.lists["inputs"] = a.derived.lists.at("inputs");
}

/// Returns a reduction of dims [first, last] of `shape` (a scalar when they are all of them).
engine::task reduce_over(const std::string& name, const std::string& op,
                         const std::vector<int64_t>& shape, size_t first, size_t last,
                         bool keepdim) {
  engine::task t = axis_task(name, "reduce", op, shape, first, last);
  t.params["keepdim"] = keepdim;
  std::vector<int64_t> out(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(first));
  if (keepdim)
    out.insert(out.end(), last - first + 1, 1);
  out.insert(out.end(), shape.begin() + static_cast<std::ptrdiff_t>(last + 1), shape.end());
  bool index = op == "argmax" || op == "argmin";
  t.outputs.push_back(tensor("y", out, index ? engine::dtype::i64 : engine::dtype::f32));
  add_source(t, first, last);
  return t;
}

engine::task reduce_task(const std::string& name, const std::string& op,
                         const std::vector<int64_t>& shape, size_t dim, bool keepdim) {
  return reduce_over(name, op, shape, dim, dim, keepdim);
}

/// The shapes of the three families: the suites' (kernelbench-l1 and quickstart), KernelBench
/// level 1's other row ops at their real shapes, and odd corners.
std::vector<engine::task> spread() {
  return {
      // softmax
      softmax_task("softmax_kb", "softmax", {4096, 393216}, 1),
      softmax_task("softmax_quick", "softmax", {256, 4096}, 1),
      softmax_task("log_softmax_kb", "log_softmax", {4096, 393216}, 1),
      softmax_task("log_softmax_odd", "log_softmax", {32768, 65535}, 1),
      softmax_task("softmax_short_odd", "softmax", {100003, 7}, 1),
      softmax_task("softmax_axis_1", "softmax", {5, 1}, 1),
      softmax_task("softmax_1d", "log_softmax", {1000}, 0),
      softmax_task("softmax_2047", "softmax", {513, 2047}, 1),
      softmax_task("softmax_channels", "softmax", {8, 64, 32, 64}, 1),
      softmax_task("softmax_channels_odd", "log_softmax", {3, 1000, 5}, 1),
      softmax_task("softmax_channels_axis_1", "softmax", {7, 1, 3}, 1),
      softmax_task("softmax_channels_long", "softmax", {2, 2048, 4095}, 1),
      softmax_task("softmax_few_long_rows", "softmax", {4, 4194304}, 1),
      softmax_task("log_softmax_everything", "log_softmax", {1879048192}, 0),
      // norm
      norm_task("rmsnorm_kb", "rms", {112, 64, 512, 512}, 1, 1, false),
      norm_task("rmsnorm_quick", "rms", {8, 64, 32, 64}, 1, 1, false),
      norm_task("l2norm_kb", "l2", {32768, 65535}, 1, 1, false),
      norm_task("layernorm_kb", "layer", {16, 64, 256, 256}, 1, 3, true),
      norm_task("layernorm_hidden", "layer", {4096, 1024}, 1, 1, true),
      norm_task("rmsnorm_hidden_affine", "rms", {1000, 3000}, 1, 1, true),
      norm_task("rmsnorm_short_odd", "rms", {100003, 7}, 1, 1, false),
      norm_task("l2norm_axis_1", "l2", {5, 1}, 1, 1, false),
      norm_task("layernorm_channels_odd", "layer", {3, 1000, 5}, 1, 1, true),
      norm_task("l2norm_channels_long", "l2", {2, 2048, 4095}, 1, 1, false),
      norm_task("rmsnorm_one_long_row", "rms", {1, 7000001}, 1, 1, false),
      norm_task("rmsnorm_two_rows", "rms", {2, 300000}, 1, 1, true),
      norm_task("l2norm_everything", "l2", {112, 64, 512, 512}, 0, 3, false),
      // l1: KernelBench's x / mean(|x|, dim 1), the sum, short odd rows, channels, few long
      // rows, everything
      norm_task("l1norm_kb", "l1", {32768, 65535}, 1, 1, false, true),
      norm_task("l1norm_rows", "l1", {128, 4096}, 1, 1, false),
      norm_task("l1norm_short_odd", "l1", {100003, 7}, 1, 1, false, true),
      norm_task("l1norm_channels", "l1", {8, 64, 4096}, 1, 1, false, true),
      norm_task("l1norm_channels_sum", "l1", {3, 1000, 5}, 1, 1, false),
      norm_task("l1norm_one_long_row", "l1", {1, 7000001}, 1, 1, false, true),
      norm_task("l1norm_two_rows", "l1", {2, 300000}, 1, 1, false),
      norm_task("l1norm_everything", "l1", {112, 64, 512, 512}, 0, 3, false, true),
      // instance and group norms without affine weights: layer norms of rows
      channel_norm_task("instancenorm_kb", "instance", {112, 64, 256, 256}, 64, false),
      channel_norm_task("groupnorm_rows", "group", {16, 64, 32, 32}, 8, false),
      channel_norm_task("instancenorm_small", "instance", {8, 64, 7, 7}, 64, false),
      // reduce
      reduce_task("sum_kb", "sum", {128, 4096, 4095}, 1, true),
      reduce_task("sum_quick", "sum", {16, 256, 255}, 1, true),
      reduce_task("mean_kb", "mean", {128, 4096, 4095}, 1, false),
      reduce_task("max_kb", "max", {128, 4096, 4095}, 1, false),
      reduce_task("argmax_kb", "argmax", {128, 4096, 4095}, 1, false),
      reduce_task("argmin_kb", "argmin", {128, 4096, 4095}, 1, false),
      reduce_task("min_kb", "min", {128, 4096, 4095}, 1, false),
      reduce_task("prod_small", "prod", {16, 256, 256}, 1, false),
      reduce_task("sum_rows_odd", "sum", {4096, 4095}, 1, false),
      reduce_task("sum_everything", "sum", {1879048192}, 0, false),
      reduce_task("argmax_one_long_row", "argmax", {1, 100000001}, 1, true),
      reduce_task("argmin_short_odd", "argmin", {100003, 7}, 1, false),
      reduce_task("prod_tiny", "prod", {3, 5}, 1, false),
      reduce_task("max_axis_1", "max", {7, 1}, 1, true),
      reduce_task("argmax_tall_columns", "argmax", {1, 1000000, 64}, 1, false),
      reduce_task("mean_tall_columns", "mean", {2, 5000000, 3}, 1, true),
      // logsumexp: a cross-entropy's row term, short odd rows, columns (few, tall), everything
      reduce_task("logsumexp_ce", "logsumexp", {32768, 4096}, 1, false),
      reduce_task("logsumexp_short_odd", "logsumexp", {100003, 7}, 1, true),
      reduce_task("logsumexp_one_long_row", "logsumexp", {1, 100000001}, 1, false),
      reduce_task("logsumexp_columns", "logsumexp", {8, 4096, 64}, 1, true),
      reduce_task("logsumexp_tall_columns", "logsumexp", {2, 5000000, 3}, 1, false),
      reduce_over("logsumexp_everything", "logsumexp", {1879048192}, 0, 0, false),
      // several adjacent dims are one axis of the same view; all of them, one line
      reduce_over("sum_dims_rows", "sum", {16, 256, 255}, 1, 2, false),
      reduce_over("max_dims_columns", "max", {64, 64, 4095}, 0, 1, true),
      reduce_over("mean_to_scalar", "mean", {4096, 4096}, 0, 1, false),
      reduce_over("logsumexp_to_scalar", "logsumexp", {64, 64, 4095}, 0, 2, false),
      reduce_over("sum_everything_3d", "sum", {112, 64, 512, 512}, 0, 3, false),
  };
}

/// The skills of `library` (by id) that apply to `t`.
std::set<std::string> applicable(const engine::skill_library& library, const engine::task& t) {
  std::set<std::string> ids;
  for (const std::string& id : row_op_skills) {
    const engine::skill* s = library.find(id);
    REQUIRE(s != nullptr);
    if (engine::check_applies(*s, t, nullptr, "").applies)
      ids.insert(id);
  }
  return ids;
}

/// The planner's first instantiation of template `tp` for `t`, if it has a valid one.
std::optional<param_values> first_of(const engine::skill_template& tp, const engine::task& t) {
  auto space = engine::space_of(tp, t, "");
  REQUIRE(space.has_value());
  auto first = engine::first_valid(tp, *space, t);
  REQUIRE(first.has_value());
  return *first;
}

/// The template of skill `id` that serves `t` (the first with a valid instantiation: the
/// others are for other cases of the family) and its planner's first instantiation.
std::pair<std::string, param_values> first_template_choice(const engine::skill_library& library,
                                                           const std::string& id,
                                                           const engine::task& t) {
  const engine::skill* s = library.find(id);
  REQUIRE(s != nullptr);
  for (const engine::skill_template& tp : s->templates)
    if (std::optional<param_values> first = first_of(tp, t))
      return {tp.name, *first};
  FAIL("no template of " << id << " has a valid instantiation for " << t.name);
  return {};
}

/// The planner's first instantiation of the template of skill `id` that serves `t`.
param_values first_choice(const engine::skill_library& library, const std::string& id,
                          const engine::task& t) {
  return first_template_choice(library, id, t).second;
}

engine::task find_task(const std::vector<engine::task>& tasks, const std::string& name) {
  auto it = std::find_if(tasks.begin(), tasks.end(),
                         [&](const engine::task& t) { return t.name == name; });
  REQUIRE(it != tasks.end());
  return *it;
}

/// Checks whether ptxas's resource lines in `diagnostics` report a spill ("8 bytes spill
/// stores"); ptxas reports spills as information, not as warnings.
bool spills(const std::string& diagnostics) {
  const std::string marker = " bytes spill stores";
  for (size_t at = diagnostics.find(marker); at != std::string::npos;
       at = diagnostics.find(marker, at + 1)) {
    size_t start = at;
    while (start > 0 && std::isdigit(static_cast<unsigned char>(diagnostics[start - 1])))
      --start;
    if (diagnostics.substr(start, at - start) != "0")
      return true;
  }
  return false;
}

engine::skill_library load_library() {
  auto library = engine::load_skill_library(test::source_dir() / "skills");
  INFO((library ? "" : library.error().message()));
  REQUIRE(library.has_value());
  return *library;
}

} // namespace

TEST_CASE("each row-op skill applies in its regime: the row held on chip, a warp per short row, "
          "columns for inner > 1, a grid for few long rows",
          "[skills]") {
  engine::skill_library library = load_library();
  std::vector<engine::task> tasks = spread();
  auto skills_for = [&](const std::string& name) {
    return applicable(library, find_task(tasks, name));
  };

  CHECK(skills_for("softmax_kb") == std::set<std::string>{"softmax_cluster_rows",
                                                          "softmax_cluster_stream",
                                                          "softmax_online_rows"});
  CHECK(skills_for("log_softmax_odd") == std::set<std::string>{"softmax_cluster_rows",
                                                               "softmax_cluster_stream",
                                                               "softmax_online_rows"});
  CHECK(skills_for("softmax_quick") == std::set<std::string>{"softmax_cluster_rows",
                                                             "softmax_cluster_stream",
                                                             "softmax_online_rows"});
  CHECK(skills_for("softmax_short_odd") ==
        std::set<std::string>{"softmax_warp_rows", "softmax_online_rows"});
  CHECK(skills_for("softmax_2047") ==
        std::set<std::string>{"softmax_cluster_rows", "softmax_cluster_stream", "softmax_warp_rows",
                              "softmax_online_rows"});
  CHECK(skills_for("softmax_channels") == std::set<std::string>{"softmax_inner_columns"});
  CHECK(skills_for("softmax_channels_axis_1") == std::set<std::string>{"softmax_inner_columns"});
  CHECK(skills_for("softmax_few_long_rows") ==
        std::set<std::string>{"softmax_grid_rows", "softmax_online_rows"});
  CHECK(skills_for("log_softmax_everything") ==
        std::set<std::string>{"softmax_grid_rows", "softmax_online_rows"});

  CHECK(skills_for("rmsnorm_kb") == std::set<std::string>{"rmsnorm_channels_registers"});
  CHECK(skills_for("l2norm_kb") == std::set<std::string>{"norm_cluster_rows"});
  CHECK(skills_for("layernorm_kb") == std::set<std::string>{"norm_grid_rows"});
  CHECK(skills_for("layernorm_hidden") ==
        std::set<std::string>{"norm_cluster_rows", "norm_warp_rows"});
  CHECK(skills_for("rmsnorm_short_odd") == std::set<std::string>{"norm_warp_rows"});
  CHECK(skills_for("rmsnorm_one_long_row") == std::set<std::string>{"norm_grid_rows"});
  CHECK(skills_for("rmsnorm_two_rows") ==
        std::set<std::string>{"norm_cluster_rows", "norm_grid_rows"});
  CHECK(skills_for("l2norm_everything") == std::set<std::string>{"norm_grid_rows"});
  CHECK(skills_for("l2norm_channels_long") == std::set<std::string>{"rmsnorm_channels_registers"});

  CHECK(skills_for("sum_kb") == std::set<std::string>{"reduce_split_columns"});
  CHECK(skills_for("argmax_kb") == std::set<std::string>{"reduce_split_columns"});
  CHECK(skills_for("sum_rows_odd") == std::set<std::string>{"reduce_rows"});
  CHECK(skills_for("sum_everything") == std::set<std::string>{"reduce_rows"});
  CHECK(skills_for("max_axis_1") == std::set<std::string>{"reduce_rows"});
  CHECK(skills_for("sum_dims_rows") == std::set<std::string>{"reduce_rows"});
  CHECK(skills_for("max_dims_columns") == std::set<std::string>{"reduce_split_columns"});
  CHECK(skills_for("mean_to_scalar") == std::set<std::string>{"reduce_rows"});

  CHECK(skills_for("instancenorm_kb") == std::set<std::string>{"norm_cluster_rows"});
  CHECK(skills_for("groupnorm_rows") == std::set<std::string>{"norm_cluster_rows"});
  CHECK(skills_for("instancenorm_small") == std::set<std::string>{"norm_warp_rows"});

  // l1 norms where rms, layer and l2 go; logsumexp where the other reductions go.
  CHECK(skills_for("l1norm_kb") == std::set<std::string>{"norm_cluster_rows"});
  CHECK(skills_for("l1norm_rows") == std::set<std::string>{"norm_cluster_rows"});
  CHECK(skills_for("l1norm_short_odd") == std::set<std::string>{"norm_warp_rows"});
  CHECK(skills_for("l1norm_channels") == std::set<std::string>{"rmsnorm_channels_registers"});
  CHECK(skills_for("l1norm_channels_sum") == std::set<std::string>{"rmsnorm_channels_registers"});
  CHECK(skills_for("l1norm_one_long_row") == std::set<std::string>{"norm_grid_rows"});
  CHECK(skills_for("l1norm_two_rows") ==
        std::set<std::string>{"norm_cluster_rows", "norm_grid_rows"});
  CHECK(skills_for("l1norm_everything") == std::set<std::string>{"norm_grid_rows"});
  CHECK(skills_for("logsumexp_ce") == std::set<std::string>{"reduce_rows"});
  CHECK(skills_for("logsumexp_short_odd") == std::set<std::string>{"reduce_rows"});
  CHECK(skills_for("logsumexp_one_long_row") == std::set<std::string>{"reduce_rows"});
  CHECK(skills_for("logsumexp_everything") == std::set<std::string>{"reduce_rows"});
  CHECK(skills_for("logsumexp_to_scalar") == std::set<std::string>{"reduce_rows"});
  CHECK(skills_for("logsumexp_columns") == std::set<std::string>{"reduce_split_columns"});
  CHECK(skills_for("logsumexp_tall_columns") == std::set<std::string>{"reduce_split_columns"});
  CHECK(skills_for("sum_everything_3d") == std::set<std::string>{"reduce_rows"});

  // Ops no row-op skill computes yet: none applies (a channel norm's weights vary along a row,
  // or batch statistics are no rows).
  CHECK(
      applicable(library, channel_norm_task("groupnorm_affine", "group", {16, 64, 32, 32}, 8, true))
          .empty());
  CHECK(applicable(library, channel_norm_task("batchnorm", "batch", {16, 64, 32, 32}, 64, false))
            .empty());

  // Every shape of the spread has a row-op skill.
  for (const engine::task& t : tasks) {
    INFO(t.name);
    CHECK_FALSE(applicable(library, t).empty());
  }
}

TEST_CASE("an l1 norm by the mean of |x| takes the _l1_mean templates of the skills shared with "
          "channel norms, every other norm (a channel norm's too) the plain ones",
          "[skills]") {
  engine::skill_library library = load_library();
  std::vector<engine::task> tasks = spread();
  tasks.push_back(channel_norm_task("instancenorm_rows", "instance", {4, 8, 64, 64}, 8, false));
  tasks.push_back(channel_norm_task("groupnorm_long", "group", {2, 64, 256, 256}, 4, false));
  tasks.push_back(channel_norm_task("groupnorm_short", "group", {8, 16, 7, 7}, 8, false));
  int64_t checked = 0;
  for (const engine::task& t : tasks) {
    if (t.family != "norm" && t.family != "channel_norm")
      continue;
    const bool by_mean = t.family == "norm" && std::get<std::string>(t.params.at("op")) == "l1" &&
                         std::get<bool>(t.params.at("mean"));
    for (const std::string& id : applicable(library, t)) {
      INFO(t.name << " with skill " << id);
      const engine::skill& s = *library.find(id);
      std::vector<std::string> serving;
      for (const engine::skill_template& tp : s.templates)
        if (first_of(tp, t))
          serving.push_back(tp.name);
      REQUIRE(serving.size() == 1);
      const bool mean_template = serving.front().size() > 8 &&
                                 serving.front().substr(serving.front().size() - 8) == "_l1_mean";
      // rmsnorm_channels_registers serves the norm family only: it reads task.mean itself.
      CHECK(mean_template == (by_mean && id != "rmsnorm_channels_registers"));
      // The rendered kernel divides by the mean exactly when the task says so.
      const engine::skill_template& tp =
          *std::find_if(s.templates.begin(), s.templates.end(),
                        [&](const engine::skill_template& x) { return x.name == serving.front(); });
      auto source = engine::render(s, tp, t, *first_of(tp, t), "");
      REQUIRE(source.has_value());
      if (id != "rmsnorm_channels_registers")
        CHECK(source->find("ends_with(\"" + serving.front() + "\", \"_l1_mean\")") !=
              std::string::npos);
      else
        CHECK(source->find(std::string("kMean = ") + (by_mean ? "true" : "false")) !=
              std::string::npos);
      ++checked;
    }
  }
  CHECK(checked > 20);
}

TEST_CASE("the planner's first choice for the suites' big shapes is the configuration meant to "
          "be fastest",
          "[skills]") {
  engine::skill_library library = load_library();
  std::vector<engine::task> tasks = spread();
  // 16 CTAs per row, two per SM (96 KB of the row each), 512 threads.
  CHECK(first_choice(library, "softmax_cluster_rows", find_task(tasks, "softmax_kb")) ==
        param_values{{"ctas_per_sm", 2}, {"threads", 512}});
  // The persistent clusters: 8 CTAs per row at one per SM, 1024 threads, 4 copy groups.
  CHECK(first_choice(library, "softmax_cluster_stream", find_task(tasks, "softmax_kb")) ==
        param_values{{"ctas_per_sm", 1}, {"groups", 4}, {"threads", 1024}});
  // 64 channels of one position per thread, in registers.
  CHECK(first_choice(library, "rmsnorm_channels_registers", find_task(tasks, "rmsnorm_kb")) ==
        param_values{{"threads", 256}, {"ty", 1}, {"vec", 1}});
  // A warp across 32 columns, 16 warps down the axis (as torch's reduction), 8 loads in flight
  // per thread.
  CHECK(first_choice(library, "reduce_split_columns", find_task(tasks, "sum_kb")) ==
        param_values{{"tx", 32}, {"ty", 16}, {"unroll", 8}});
  // 65535 columns: no 16-byte row loads for a warp... but 4 CTAs of a cluster at two per SM.
  CHECK(first_choice(library, "norm_cluster_rows", find_task(tasks, "l2norm_kb")) ==
        param_values{{"ctas_per_sm", 2}, {"threads", 512}});
  CHECK(first_choice(library, "norm_grid_rows", find_task(tasks, "layernorm_kb")) ==
        param_values{{"ctas_per_sm", 1}, {"threads", 1024}});
  // A row length that is not a multiple of 4 turns the 16-byte loads off, the rest stays.
  CHECK(first_choice(library, "softmax_warp_rows", find_task(tasks, "softmax_short_odd")) ==
        param_values{{"lanes", 32}, {"threads", 128}, {"vec", 0}});
  // 1000 channels: split over 16 threads along the axis (63 values each).
  CHECK(first_choice(library, "softmax_inner_columns", find_task(tasks, "softmax_channels_odd")) ==
        param_values{{"threads", 256}, {"ty", 16}, {"vec", 1}});
  // KernelBench's l1 norm by the mean of |x| at 32768 x 65535: as its l2 norm, in its own
  // template.
  CHECK(first_template_choice(library, "norm_cluster_rows", find_task(tasks, "l1norm_kb")) ==
        std::pair<std::string, param_values>{"cluster_smem_l1_mean",
                                             {{"ctas_per_sm", 2}, {"threads", 512}}});
  // The Frobenius norm (one line of 1.9e9 floats): the whole GPU, streamed twice.
  CHECK(first_choice(library, "norm_grid_rows", find_task(tasks, "l2norm_everything")) ==
        param_values{{"ctas_per_sm", 1}, {"threads", 1024}});
  // A cross-entropy's logsumexp over 4096 classes: 64 lanes a row, 4 loads in flight each.
  CHECK(first_choice(library, "reduce_rows", find_task(tasks, "logsumexp_ce")) ==
        param_values{{"blocks", 1024}, {"per_lane", 64}, {"threads", 256}, {"unroll", 4}});
  CHECK(first_choice(library, "reduce_split_columns", find_task(tasks, "logsumexp_columns")) ==
        param_values{{"tx", 32}, {"ty", 16}, {"unroll", 8}});
  // Reductions over every dim: one row split across many blocks of 512 threads, one float4 a
  // thread per step (as Triton's; the losses ran 1-2.4% faster so on an H100).
  CHECK(first_choice(library, "reduce_rows", find_task(tasks, "sum_everything_3d")) ==
        param_values{{"blocks", 16384}, {"per_lane", 16}, {"threads", 512}, {"unroll", 1}});
}

namespace {

struct case_t {
  std::string label;
  std::string source;
};

/// Renders every valid instantiation of every row-op skill for every shape of the spread it
/// applies to, checking each; returns what the nvcc test compiles: the first choice for every
/// shape and the corners of the space for the first shape a skill meets.
std::vector<case_t> render_spread() {
  engine::skill_library library = load_library();
  std::vector<case_t> to_compile;
  std::set<std::string> corners_done;
  int64_t rendered = 0;
  for (const engine::task& t : spread()) {
    for (const std::string& id : row_op_skills) {
      const engine::skill& s = *library.find(id);
      if (!s.applies_to(t.family) || !engine::check_applies(s, t, nullptr, "").applies)
        continue;
      INFO(t.name << " with skill " << id);
      int64_t serving = 0;
      for (const engine::skill_template& tp : s.templates) {
        auto space = engine::space_of(tp, t, "");
        REQUIRE(space.has_value());
        std::vector<param_values> valid;
        for (const param_values& v : all_instantiations(*space)) {
          auto why = engine::check_params(tp, *space, v, t);
          REQUIRE(why.has_value());
          if (*why)
            continue;
          auto text = engine::render(s, tp, t, v, "");
          INFO((text ? "" : text.error().message()));
          REQUIRE(text.has_value());
          CHECK(text->find("{{") == std::string::npos);
          ++rendered;
          valid.push_back(v);
        }
        if (valid.empty())
          continue; // a template for another case of the family (an l1 norm by the mean)
        ++serving;
        // The first choice for every shape; the corners of the space for the first shape a
        // template meets (the suites' big shapes come first in the spread).
        std::vector<param_values> chosen{*first_of(tp, t)};
        if (corners_done.insert(id + "/" + tp.name).second) {
          chosen.push_back(valid.front());
          chosen.push_back(valid.back());
        }
        std::sort(chosen.begin(), chosen.end());
        chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
        for (const param_values& v : chosen) {
          std::string label = t.name + " " + id + "/" + tp.name;
          for (const auto& [name, value] : v)
            label += " " + name + "=" + std::to_string(value);
          to_compile.push_back({label, *engine::render(s, tp, t, v, "")});
        }
      }
      CHECK(serving == 1);
    }
  }
  CHECK(rendered > 300);
  // Every template of every row-op skill met a shape of the spread.
  size_t templates = 0;
  for (const std::string& id : row_op_skills)
    templates += library.find(id)->templates.size();
  CHECK(corners_done.size() == templates);
  return to_compile;
}

} // namespace

TEST_CASE("every instantiation of every row-op skill renders for every shape it applies to",
          "[skills]") {
  CHECK_FALSE(render_spread().empty());
}

TEST_CASE("the row-op skills' first choices and corners compile for sm_90a without warnings",
          "[skills][nvcc]") {
  auto compiler = test::shared_compiler();
  if (!compiler)
    KS_SKIP("no nvcc: " + compiler.error().message());
  std::vector<case_t> to_compile = render_spread();
  std::vector<gpu::compile_request> requests;
  for (const case_t& c : to_compile)
    requests.push_back({c.source, c.label, {"-Xcompiler=-Wall,-Wextra"}});
  std::vector<gpu::compile_result> results = compiler->compile_all(requests);
  REQUIRE(results.size() == to_compile.size());
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(to_compile[i].label << "\n" << results[i].diagnostics);
    CHECK(results[i].ok);
    // A warning of nvcc, the host compiler or ptxas fails the template; so does a spill, which
    // ptxas reports as information ("bytes spill stores").
    std::string lower = results[i].diagnostics;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    CHECK(lower.find("warning") == std::string::npos);
    CHECK_FALSE(spills(lower));
  }
}
