// Graph tasks without nvcc: a graph manifest loads into its nodes (each a family task), views
// and main node with its derived cost and torch expression; every problem of its graph is a
// FILE:LINE:COL line that names the node; the `module` table is read and checked; the composed
// source hoists includes once, wraps each node in its namespace and returns the documented
// codes; and the offline backend plans and codes a graph task through its main node.
// graph_reference_test.cpp compiles and runs what is composed here.

#include "engine/graph_reference.hpp"
#include "engine/graph_spec.hpp"
#include "engine/offline_backend.hpp"
#include "engine/retrieval.hpp"
#include "engine/skill_library.hpp"
#include "engine/task_manifest.hpp"
#include "tests/engine/graph_cases.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace ks::engine;
namespace fs = std::filesystem;

namespace {

task load_graph(const ks::test::test_context& ctx, const std::string& manifest) {
  fs::path path = ctx.write("g.toml", manifest);
  expected<task> loaded = load_task_manifest(path);
  INFO(manifest << "\n" << (loaded ? std::string() : loaded.error().message()));
  REQUIRE(loaded.has_value());
  return std::move(*loaded);
}

/// Returns the problems of loading `manifest` (written as g.toml), failing if it loaded.
std::string problems_of(const ks::test::test_context& ctx, const std::string& manifest) {
  fs::path path = ctx.write("g.toml", manifest);
  expected<task> loaded = load_task_manifest(path);
  REQUIRE_FALSE(loaded.has_value());
  CHECK(loaded.error().code() == errc::invalid_input);
  return loaded.error().message();
}

/// Returns "g.toml:LINE:COL: " as a problem of the file written by problems_of starts.
std::string at(const ks::test::test_context& ctx, int line, int column) {
  return (ctx.dir() / "g.toml").string() + ":" + std::to_string(line) + ":" +
         std::to_string(column) + ": ";
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++count;
  return count;
}

const std::string graph_inputs = R"toml(name = "g"
family = "graph"
inputs = [ { name = "x", dtype = "f32", shape = [8, 16] },
           { name = "w", dtype = "f32", shape = [16] } ]
outputs = [ { name = "y", dtype = "f32", shape = [8, 16] } ]
)toml";

} // namespace

TEST_CASE("a graph manifest loads as its nodes' family tasks, with its cost, torch and main node",
          "[engine][graph]") {
  ks::test::test_context ctx;
  task t = load_graph(ctx, ks::test::masked_cumsum_manifest());
  CHECK(t.family == "graph");
  REQUIRE(t.graph != nullptr);
  const graph_spec& g = *t.graph;
  REQUIRE(g.nodes.size() == 2);
  const task& mul = g.nodes[0].op;
  const task& scan = g.nodes[1].op;
  CHECK(mul.name == "masked_cumsum__mul");
  CHECK(mul.family == "elementwise");
  REQUIRE(mul.inputs.size() == 2);
  CHECK(mul.inputs[1].name == "mask");
  CHECK(mul.inputs[1].init == init_kind::randint); // a graph input keeps how it is drawn
  CHECK(mul.outputs[0].name == "t");
  CHECK(std::get<std::string>(mul.derived.scalars.at("expr")).find("v_x * v_mask") !=
        std::string::npos);
  CHECK(scan.inputs[0].name == "t");
  CHECK(scan.outputs[0].name == "y");
  CHECK(std::get<int64_t>(scan.derived.scalars.at("axis")) == 1000);
  REQUIRE(g.intermediates.size() == 1);
  CHECK(g.intermediates[0].name == "t");
  // Every node's reference is rendered; the graph's is their composition, named by the manifest.
  CHECK(mul.reference_source.find("// Reference of task masked_cumsum__mul") == 0);
  CHECK(t.reference_path == t.manifest_path);
  CHECK(t.reference_source.find("// Reference of graph task masked_cumsum") == 0);
  CHECK(reference_name(t).find("composed from the references of its 2 nodes") != std::string::npos);
  // The multiply reads two tensors and would take longer at the nominal peaks, but it is
  // elementwise: the scan is the node a search works on when `main` is not given.
  CHECK(g.main == 1);
  CHECK(&search_target(t) == &g.nodes[1].op);
  // flops: one multiply and one add per element; bytes: the fused minimum.
  CHECK(t.cost.flops == 2.0 * 64 * 1000);
  CHECK(t.cost.bytes == 3.0 * 64 * 1000 * 4);
  CHECK(t.torch == "torch.cumsum((x * mask), dim=1)");
  // A tunable stays on the nodes whose reference reads it.
  CHECK(scan.tunables.count("KS_BLOCK_THREADS") == 1);

  std::string chosen = ks::test::masked_cumsum_manifest();
  chosen.insert(chosen.find("\n[[nodes]]"), "main = \"mul\"\n");
  task with_main = load_graph(ctx, chosen);
  CHECK(with_main.graph->main == 0);
  CHECK(search_target(with_main).name == "masked_cumsum__mul");
  task plain = load_graph(ctx, R"toml(name = "plain"
family = "scan"
inputs = [ { name = "x", dtype = "f32", shape = [4, 5] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4, 5] } ]
params = { op = "cumsum", dim = 1 }
)toml");
  CHECK(&search_target(plain) == &plain);
}

TEST_CASE("views resolve to a layout over the tensor under them, and the torch expression "
          "composes through them",
          "[engine][graph]") {
  ks::test::test_context ctx;
  task t = load_graph(ctx, ks::test::emulated_manifest());
  const graph_spec& g = *t.graph;
  REQUIRE(g.views.size() == 3);
  const graph_view& part = g.views[0]; // A[5, 9].narrow(1, 1, 7)
  CHECK(part.root == "A");
  CHECK(part.tensor.shape == std::vector<int64_t>{5, 7});
  CHECK(part.offset == 1);
  CHECK(part.strides == std::vector<int64_t>{9, 1});
  CHECK(part.strided);
  const graph_view& flipped = g.views[1]; // .flip(0): row 4 first
  CHECK(flipped.root == "A");
  CHECK(flipped.offset == 1 + 4 * 9);
  CHECK(flipped.strides == std::vector<int64_t>{-9, 1});
  const graph_view& b = g.views[2]; // Bt[6, 7].permute(1, 0)
  CHECK(b.tensor.shape == std::vector<int64_t>{7, 6});
  CHECK(b.strides == std::vector<int64_t>{1, 7});
  CHECK(t.torch ==
        "torch.relu((torch.matmul(A.narrow(1, 1, 7).flip(0), Bt.permute(1, 0)) + bias))");

  task flat = load_graph(ctx, ks::test::sum_of_squares_manifest());
  const graph_view& v = flat.graph->views[0];
  CHECK_FALSE(v.strided); // a shape view of a contiguous tensor is an alias
  CHECK(v.root == "sq");
  CHECK(flat.torch == "torch.sum((x * x).reshape(8192), dim=0)");
  CHECK(flat.outputs[0].shape.empty());
}

TEST_CASE("a node writes a graph output through a shape view of it, never a strided one",
          "[engine][graph]") {
  ks::test::test_context ctx;
  // Batched matmul over [2, 3, 4, 5] tensors as the family's [6, 4, 5] ones.
  const std::string head = R"toml(name = "bmm4"
family = "graph"
inputs = [ { name = "a", dtype = "f32", shape = [2, 3, 4, 5] },
           { name = "b", dtype = "f32", shape = [2, 3, 5, 4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [2, 3, 4, 4] } ]

[[views]]
name = "a3"
of = "a"
shape = [6, 4, 5]

[[views]]
name = "b3"
of = "b"
shape = [6, 5, 4]

[[views]]
name = "y3"
of = "y"
)toml";
  const std::string node = R"toml(
[[nodes]]
name = "mm"
family = "matmul"
inputs = ["a3", "b3"]
outputs = ["y3"]
)toml";
  task t = load_graph(ctx, head + "shape = [6, 4, 4]\n" + node);
  const graph_spec& g = *t.graph;
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].op.outputs[0].name == "y3");
  CHECK(g.nodes[0].op.outputs[0].shape == std::vector<int64_t>{6, 4, 4});
  CHECK(t.torch == "torch.matmul(a.reshape(6, 4, 5), b.reshape(6, 5, 4)).reshape(2, 3, 4, 4)");
  // The composed reference hands the node the output's own memory.
  CHECK(t.reference_source.find("outputs[0].data") != std::string::npos);

  // A permuted view is not the output's memory in the order the node writes.
  std::string permuted = head + "permute = [0, 1, 3, 2]\n" + node;
  std::string message = problems_of(ctx, permuted);
  CHECK_THAT(message, Catch::Contains("nodes[0].outputs[0] 'y3' is a view of outputs[0] 'y' "
                                      "with a permute, flip or narrow on the way"));
  // A view of an input is no output.
  std::string of_input = head + "shape = [6, 4, 4]\n" + node;
  of_input.replace(of_input.find("of = \"y\""), 8, "of = \"a\"");
  of_input.replace(of_input.find("shape = [6, 4, 4]"), 17, "shape = [6, 4, 5]");
  CHECK_THAT(problems_of(ctx, of_input), Catch::Contains("'y3' is a view of inputs[0] 'a'"));
}

TEST_CASE("substitute_names replaces whole names only", "[engine][graph]") {
  std::vector<std::pair<std::string, std::string>> names = {{"t", "(x * m)"}, {"dim", "(z)"}};
  CHECK(substitute_names("torch.cumsum(t, dim=1)", names) == "torch.cumsum((x * m), dim=1)");
  CHECK(substitute_names("t.mT + tt + t_1 + f(t)", names) == "(x * m).mT + tt + t_1 + f((x * m))");
  CHECK(substitute_names("x.t + 't' + dim == 1", names) == "x.t + 't' + (z) == 1");
}

TEST_CASE("every problem of a graph is reported at its FILE:LINE:COL, naming its node",
          "[engine][graph]") {
  ks::test::test_context ctx;
  // Lines: 1-5 graph_inputs, then the views and nodes below.
  std::string errors = problems_of(ctx, graph_inputs + R"toml(params = { op = "x" }
[[views]]
name = "xt"
of = "x"
permute = [1, 1]
[[views]]
name = "big"
of = "x"
shape = [8, 17]
[[nodes]]
name = "first"
family = "elementwse"
inputs = ["x"]
outputs = [ { name = "t", dtype = "f32", shape = [8, 16] } ]
params = { op = "x * 2" }
[[nodes]]
name = "second"
family = "scan"
inputs = ["t", "later"]
outputs = ["y", "x"]
params = { op = "cumsum", dim = 5 }
[[nodes]]
name = "third"
family = "elementwise"
inputs = ["t"]
outputs = ["y", { name = "later", dtype = "f32", shape = [8, 16] }]
params = { op = "t + 1" }
)toml");
  INFO(errors);
  CHECK(errors.find(at(ctx, 6, 10) + "a graph task has no params of its own") != std::string::npos);
  CHECK(errors.find(at(ctx, 10, 15) + "views[0].permute[1] repeats dim 1") != std::string::npos);
  CHECK(errors.find(at(ctx, 14, 9) + "views[1].shape [8, 17] holds 136 elements, but 'x' [8, 16] "
                                     "holds 128") != std::string::npos);
  CHECK(errors.find(at(ctx, 17, 10) + "nodes[0].family 'elementwse' is none of docs/tasks.md's "
                                      "(did you mean 'elementwise'?)") != std::string::npos);
  CHECK(errors.find(at(ctx, 24, 16) +
                    "nodes[1].inputs[1]: 'later' nodes[2] writes: a node reads graph inputs, "
                    "views and outputs of EARLIER nodes") != std::string::npos);
  CHECK(errors.find(at(ctx, 25, 17) + "nodes[1].outputs[1] 'x' is inputs[0], not a graph output") !=
        std::string::npos);
  CHECK(errors.find(at(ctx, 31, 12) + "nodes[2].outputs[0]: graph output 'y' is already written "
                                      "by nodes[1]") != std::string::npos);
  // w is read by no node; the intermediate 'later' neither.
  CHECK(errors.find(at(ctx, 4, 12) + "inputs[1] 'w' is read by no node") != std::string::npos);
  CHECK(errors.find("'later' is read by no node") != std::string::npos);

  // A node's family checks point into the graph's manifest and name the node.
  std::string family = problems_of(ctx, graph_inputs + R"toml([[nodes]]
name = "scale"
family = "elementwise"
inputs = ["x", "w"]
outputs = [ { name = "t", dtype = "f32", shape = [8, 16] } ]
params = { op = "x * w" }
[[nodes]]
name = "sum"
family = "scan"
inputs = ["t"]
outputs = ["y"]
params = { op = "cumsum", dim = 2, revers = true }
)toml");
  INFO(family);
  CHECK(family.find(at(ctx, 17, 33) + "nodes[1] ('sum'): params.dim: dim 2 is out") !=
        std::string::npos);
  CHECK(family.find(at(ctx, 17, 45) + "nodes[1] ('sum'): unknown param 'revers'") !=
        std::string::npos);

  std::string shapes = problems_of(ctx, graph_inputs + R"toml(main = "scael"
[[views]]
name = "xt"
of = "x"
permute = [1, 0]
[[views]]
name = "flat"
of = "xt"
shape = [128]
[[nodes]]
name = "scale"
family = "elementwise"
inputs = ["x", "w", "x"]
outputs = ["y"]
params = { op = "x * w" }
[[nodes]]
name = "again"
family = "elementwise"
inputs = ["xt"]
outputs = [ { name = "z", dtype = "f32", shape = [8, 16] } ]
params = { op = "xt" }
)toml");
  INFO(shapes);
  CHECK(shapes.find(at(ctx, 14, 9) + "views[1].shape: 'xt' is a permute, flip or narrow view") !=
        std::string::npos);
  CHECK(shapes.find(at(ctx, 18, 21) + "nodes[0].inputs[2] reads 'x' again") != std::string::npos);
  CHECK(shapes.find(at(ctx, 24, 11) + "nodes[1] ('again'): inputs[0] ('xt') has shape [16, 8], "
                                      "which does not broadcast") != std::string::npos);
  CHECK(shapes.find(at(ctx, 6, 8) + "main 'scael' names no node (did you mean 'scale'?)") !=
        std::string::npos);
  CHECK(shapes.find("'z' is read by no node") != std::string::npos);
}

TEST_CASE("graph keys belong to graph tasks; a graph needs its nodes", "[engine][graph]") {
  ks::test::test_context ctx;
  std::string errors = problems_of(ctx, R"toml(name = "s"
family = "scan"
inputs = [ { name = "x", dtype = "f32", shape = [4, 5] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4, 5] } ]
params = { op = "cumsum", dim = 1 }
main = "x"
)toml");
  CHECK(errors == at(ctx, 6, 8) + "'main' is only for a graph task (family = \"graph\"), not for "
                                  "family 'scan'");
  std::string missing = problems_of(ctx, graph_inputs);
  CHECK(missing.find(at(ctx, 1, 1) + "missing required key 'nodes'") != std::string::npos);
}

TEST_CASE("the module table is kept as it is and its form checked", "[engine][graph][module]") {
  ks::test::test_context ctx;
  const std::string family = R"toml(name = "m"
family = "elementwise"
inputs = [ { name = "x", dtype = "f32", shape = [4, 5] },
           { name = "gn_weight", dtype = "f32", shape = [5] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4, 5] } ]
params = { op = "x * gn_weight" }
)toml";
  task t = load_graph(ctx, family + R"toml([module]
file = "/src/35_GroupNorm_.py"
sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
source = '''
class Model: pass
'''
entry = "Model"
init = "[64, 8]"
arguments = [ { input = "x" }, { value = "3.14" }, { input = "x", dtype = "bool" },
              { unused = "f32", shape = [2, 3] } ]
parameters = { "gn.weight" = "gn_weight" }
outputs = 1
eval = true
)toml");
  REQUIRE(t.module.has_value());
  const module_spec& m = *t.module;
  CHECK(m.file == "/src/35_GroupNorm_.py");
  CHECK(m.source == "class Model: pass\n");
  CHECK(m.entry == "Model");
  CHECK(m.init == "[64, 8]");
  REQUIRE(m.arguments.size() == 4);
  CHECK(m.arguments[0].input == "x");
  CHECK(m.arguments[1].value == "3.14");
  CHECK(m.arguments[2].dtype == "bool");
  // What the importer writes for a tensor forward takes and never reads, and for a module
  // whose constructor put it in eval mode.
  CHECK(m.arguments[3].unused == "f32");
  CHECK(m.arguments[3].shape == std::vector<int64_t>{2, 3});
  CHECK(m.parameters.at("gn.weight") == "gn_weight");
  CHECK(m.outputs == 1);
  CHECK(m.eval);

  std::string errors = problems_of(ctx, family + R"toml([module]
sha256 = "abc"
entry = 3
arguments = [ { input = "z" }, { value = "1", dtype = "f32" }, { input = "x", value = "2" } ]
parameters = { "gn.weight" = "gn_weigth" }
outputs = 0
extra = true
eval = "yes"
)toml");
  INFO(errors);
  CHECK(errors.find(at(ctx, 7, 1) + "missing required key 'source' in module") !=
        std::string::npos);
  CHECK(errors.find(at(ctx, 8, 10) + "module.sha256 must be 64 hexadecimal digits") !=
        std::string::npos);
  CHECK(errors.find(at(ctx, 9, 9) + "'module.entry' must be a string") != std::string::npos);
  CHECK(errors.find(at(ctx, 10, 25) + "module.arguments[0].input 'z' is no input of the task") !=
        std::string::npos);
  CHECK(errors.find(at(ctx, 10, 55) + "module.arguments[1].dtype is only for an input") !=
        std::string::npos);
  CHECK(errors.find(at(ctx, 10, 64) + "module.arguments[2] needs exactly one of input") !=
        std::string::npos);
  CHECK(errors.find(at(ctx, 11, 30) + "module.parameters.\"gn.weight\" 'gn_weigth' is no input of "
                                      "the task (did you mean 'gn_weight'?)") != std::string::npos);
  CHECK(errors.find(at(ctx, 12, 11) + "module.outputs must be at least 1") != std::string::npos);
  CHECK(errors.find(at(ctx, 13, 1) + "unknown key 'extra' in module") != std::string::npos);
  CHECK(errors.find(at(ctx, 14, 8) + "'module.eval' must be true or false") != std::string::npos);
  std::string unused_errors = problems_of(ctx, family + R"toml([module]
source = "class Model: pass"
entry = "Model"
arguments = [ { unused = "f33", shape = [2] }, { unused = "f32" }, { input = "x", shape = [1] } ]
)toml");
  INFO(unused_errors);
  CHECK(unused_errors.find("module.arguments[0].unused 'f33' is no dtype") != std::string::npos);
  CHECK(unused_errors.find("module.arguments[1] needs shape = [...] beside unused") !=
        std::string::npos);
  CHECK(unused_errors.find("module.arguments[2].shape is only for an unused tensor") !=
        std::string::npos);
}

TEST_CASE("hoisting takes includes and include-only conditionals, leaving the rest",
          "[engine][graph]") {
  hoisted_source h = hoist_includes(R"(// a source
#include "kernelskill/abi.h"
#ifdef KS_EMULATE
#include "emulator.hpp"  // tests only
#else
#include <cuda_runtime.h>
#endif
/* a comment
#include <not_this.h>
*/
#ifndef KS_BLOCK_THREADS
#define KS_BLOCK_THREADS 256
#endif
  #  define KS_OTHER(x) x
int f();
)");
  REQUIRE(h.includes.size() == 2);
  CHECK(h.includes[0] == "#include \"kernelskill/abi.h\"");
  CHECK(h.includes[1] == "#ifdef KS_EMULATE\n#include \"emulator.hpp\"  // tests only\n#else\n"
                         "#include <cuda_runtime.h>\n#endif");
  CHECK(h.body.find("#include <not_this.h>") != std::string::npos);
  CHECK(h.body.find("#ifndef KS_BLOCK_THREADS\n#define KS_BLOCK_THREADS 256\n#endif") !=
        std::string::npos);
  CHECK(h.macros == std::vector<std::string>{"KS_BLOCK_THREADS", "KS_OTHER"});

  // A conditional with includes and other lines: its includes go up under its directives, the
  // rest stays under them (a header in a node's namespace would not compile).
  hoisted_source mixed = hoist_includes(R"(#ifdef KS_EMULATE
#include <cuda_runtime.h>
#else
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#endif
int g();
)");
  REQUIRE(mixed.includes.size() == 1);
  CHECK(mixed.includes[0] ==
        "#ifdef KS_EMULATE\n#include <cuda_runtime.h>\n#else\n#include <cooperative_groups.h>\n"
        "#endif");
  CHECK(mixed.body ==
        "#ifdef KS_EMULATE\n#else\nnamespace cg = cooperative_groups;\n#endif\nint g();\n");
}

TEST_CASE("a composed graph hoists each include once, wraps each node in its namespace and "
          "returns each node's code as its own",
          "[engine][graph]") {
  ks::test::test_context ctx;
  task t = load_graph(ctx, ks::test::masked_cumsum_manifest());
  const std::string& text = t.reference_source;
  INFO(text);
  CHECK(occurrences(text, "#include <cub/cub.cuh>") == 1);
  CHECK(occurrences(text, "#include \"kernelskill/abi.h\"") == 1);
  CHECK(occurrences(text, "#include <stdint.h>") == 1);
  CHECK(text.find("#include <cub/cub.cuh>") < text.find("namespace ks_node_0 {"));
  CHECK(text.find("namespace ks_node_0 {") < text.find("namespace ks_node_1 {"));
  CHECK(occurrences(text, "extern \"C\"") == 1); // the graph's own ks_forward only
  CHECK(occurrences(text, "#pragma push_macro(\"KS_BLOCK_THREADS\")") == 2);
  CHECK(occurrences(text, "#pragma pop_macro(\"KS_BLOCK_THREADS\")") == 2);
  CHECK(text.find("if (const int code = ks_family::check_arguments(inputs, n_inputs, outputs, "
                  "n_outputs)) return code;") != std::string::npos);
  CHECK(text.find("if (!ks_graph::take_workspace(&ws, 256000, stream)) return 11;") !=
        std::string::npos);
  CHECK(text.find("  cudaFreeAsync(ws, stream);\n  return code;\n}") != std::string::npos);
  CHECK(text.find("ks_node_0::ks_forward(in, 2, out, 1, cuda_stream))\n      return 100 + code;") !=
        std::string::npos);
  CHECK(text.find("ks_node_1::ks_forward(in, 1, out, 1, cuda_stream))\n      return 200 + code;") !=
        std::string::npos);
  CHECK(text.find("ks_graph::contiguous(outputs[0].data, KS_F32, {64, 1000})") !=
        std::string::npos);
  CHECK(text.find("ks_graph::contiguous((ws + 0), KS_F32, {64, 1000})") != std::string::npos);
  CHECK(text.find("strided_copy<") == std::string::npos); // no view, no copy launched

  // A strided view is copied once, before the first node that reads it, into the workspace.
  task e = load_graph(ctx, ks::test::emulated_manifest());
  const std::string& emulated = e.reference_source;
  INFO(emulated);
  CHECK(occurrences(emulated, "ks_graph::strided_copy<uint32_t><<<") == 2);
  CHECK(emulated.find("const ks_graph::view_layout layout{2, 37, {5, 7}, {-9, 1}};") !=
        std::string::npos);
  CHECK(emulated.find("if (cudaGetLastError() != cudaSuccess) return 110;") != std::string::npos);

  // A candidate replaces one node's source; a source without ks_forward is refused.
  std::string candidate = "#include <cub/cub.cuh>\n#include <stdint.h>\n// CANDIDATE\n"
                          "extern \"C\"  int  ks_forward (const ks_tensor*, int32_t, ks_tensor*, "
                          "int32_t, void*) { return 0; }\n";
  expected<std::string> composed = compose_graph(t, {{1, candidate}});
  REQUIRE(composed.has_value());
  CHECK(occurrences(*composed, "#include <cub/cub.cuh>") == 1);
  CHECK(composed->find("// CANDIDATE") > composed->find("namespace ks_node_1 {"));
  CHECK(composed->find("int  ks_forward (const ks_tensor*") != std::string::npos);
  CHECK(occurrences(*composed, "extern \"C\"") == 1);
  CHECK(composed->find("a candidate's source for\n// node(s) 1 (scan)") != std::string::npos);
  expected<std::string> refused = compose_graph(t, {{0, "int f();\n"}});
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message() ==
        "graph task 'masked_cumsum', node 'mul': its candidate source has no extern \"C\" int "
        "ks_forward( to call");
  CHECK_FALSE(compose_graph(t, {{2, candidate}}).has_value());
}

TEST_CASE("the offline backend plans a graph task through its main node and composes its code",
          "[engine][graph][backend]") {
  ks::test::test_context ctx;
  std::string manifest = ks::test::masked_cumsum_manifest();
  manifest.insert(manifest.find("\n[[nodes]]"), "main = \"scan\"\n");
  task t = load_graph(ctx, manifest);
  auto library = load_skill_library(ks::test::source_dir() / "skills");
  REQUIRE(library.has_value());
  auto skills = std::make_shared<const skill_library>(std::move(*library));
  planning_request request;
  request.subject = &t;
  request.parent = 0;
  request.parent_lineage = {reference_plan()};
  request.parent_source = t.reference_source;
  request.reference_source = t.reference_source;
  request.skills = retrieve(*skills, t, nullptr, t.reference_source, {}, retrieval_rules{});
  request.count = 4;
  std::vector<std::string> retrieved;
  for (const retrieved_skill& r : request.skills)
    retrieved.push_back(r.id);
  INFO("retrieved: " << retrieved.size());
  // The scan's skills, and the launch parameters of its reference; no elementwise skill.
  CHECK(std::find(retrieved.begin(), retrieved.end(), "scan_warp_rows") != retrieved.end());
  CHECK(std::find(retrieved.begin(), retrieved.end(), "launch_params") != retrieved.end());
  CHECK(std::find(retrieved.begin(), retrieved.end(), "elementwise_vectorized") == retrieved.end());
  offline_backend backend(skills);
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  REQUIRE(plans->size() == 4);
  for (const plan& p : *plans) {
    INFO(plan_key(p));
    coding_request code;
    code.subject = &t;
    code.plan = p;
    code.reference_source = t.reference_source;
    expected<std::string> source = backend.write_code(code);
    REQUIRE(source.has_value());
    CHECK(source->find("a candidate's source for\n// node(s) 1 (scan)") != std::string::npos);
    CHECK(occurrences(*source, "extern \"C\"") == 1);
    // The multiply stays the reference's.
    CHECK(source->find(t.graph->nodes[0].op.reference_source.substr(0, 60)) != std::string::npos);
  }
  coding_request reference;
  reference.subject = &t;
  reference.plan = reference_plan();
  reference.reference_source = t.reference_source;
  CHECK(backend.write_code(reference).value() == t.reference_source);
}

TEST_CASE("the offline coder gives a graph's other heavy nodes a skill's first choice",
          "[engine][graph][backend]") {
  ks::test::test_context ctx;
  task t = load_graph(ctx, ks::test::attention_manifest());
  auto library = load_skill_library(ks::test::source_dir() / "skills");
  REQUIRE(library.has_value());
  auto skills = std::make_shared<const skill_library>(std::move(*library));
  planning_request request;
  request.subject = &t;
  request.parent_lineage = {reference_plan()};
  request.reference_source = t.reference_source;
  request.skills = retrieve(*skills, t, nullptr, t.reference_source, {}, retrieval_rules{});
  request.count = 1;
  offline_backend backend(skills);
  expected<std::vector<plan>> plans = backend.propose(request);
  REQUIRE(plans.has_value());
  REQUIRE(plans->size() == 1);
  coding_request code;
  code.subject = &t;
  code.plan = plans->front();
  code.reference_source = t.reference_source;
  expected<std::string> source = backend.write_code(code);
  REQUIRE(source.has_value());
  // The searched matmul, and both companions that are not elementwise: the softmax and the
  // second matmul; none keeps its reference.
  CHECK(source->find("a candidate's source for\n// node(s) 0 (scores), 1 (probs), 2 (mix)") !=
        std::string::npos);
  for (size_t i = 1; i < 3; ++i)
    CHECK(source->find(t.graph->nodes[i].op.reference_source.substr(0, 60)) == std::string::npos);
}

TEST_CASE("a deep graph whose inlined torch expression would double at every node has none, "
          "and loads at once",
          "[engine][graph]") {
  // Each node reads the previous one twice, as a residual add does: inlined, the expression
  // would double 40 times (a ResNet-101's import died of it).
  std::string manifest = "name = \"deep\"\nfamily = \"graph\"\ninputs = [ { name = \"x\", "
                         "dtype = \"f32\", shape = [64] } ]\noutputs = [ { name = \"y\", dtype = "
                         "\"f32\", shape = [64] } ]\n";
  std::string previous = "x";
  for (int i = 0; i < 40; ++i) {
    std::string out =
        i == 39 ? "\"y\""
                : "{ name = \"t" + std::to_string(i) + "\", dtype = \"f32\", shape = [64] }";
    manifest += "\n[[nodes]]\nname = \"n" + std::to_string(i) +
                "\"\nfamily = \"elementwise\"\ninputs = [\"" + previous + "\"]\noutputs = [" + out +
                "]\nparams = { op = \"" + previous + " + " + previous + " * 0.5\" }\n";
    previous = "t" + std::to_string(i);
  }
  ks::test::test_context ctx;
  task t = load_graph(ctx, manifest);
  CHECK(t.torch.empty());
  REQUIRE(t.graph != nullptr);
  CHECK(t.graph->nodes.size() == 40);
  // A shallow graph keeps its expression.
  CHECK_FALSE(load_graph(ctx, ks::test::masked_cumsum_manifest()).torch.empty());
}

TEST_CASE("nodes whose references differ only in comments share one namespace", "[engine][graph]") {
  // The same op at the same shape twice, then another op: the second node calls the first's
  // kernel (a ResNet-101 repeats its blocks: 314 nodes, 138 distinct kernels).
  std::string manifest =
      "name = \"repeated\"\nfamily = \"graph\"\ninputs = [ { name = \"x\", "
      "dtype = \"f32\", shape = [8, 64] } ]\noutputs = [ { name = \"y\", dtype = "
      "\"f32\", shape = [8, 64] } ]\n";
  const char* families[] = {"softmax", "softmax", "elementwise"};
  const char* params[] = {"{ op = \"softmax\", dim = 1 }", "{ op = \"softmax\", dim = 1 }",
                          "{ op = \"t1 * 2.0\" }"};
  const char* outs[] = {"{ name = \"t0\", dtype = \"f32\", shape = [8, 64] }",
                        "{ name = \"t1\", dtype = \"f32\", shape = [8, 64] }", "\"y\""};
  const char* ins[] = {"x", "t0", "t1"};
  for (int i = 0; i < 3; ++i)
    manifest += "\n[[nodes]]\nname = \"n" + std::to_string(i) + "\"\nfamily = \"" + families[i] +
                "\"\ninputs = [\"" + ins[i] + "\"]\noutputs = [" + outs[i] +
                "]\nparams = " + params[i] + "\n";
  ks::test::test_context ctx;
  task t = load_graph(ctx, manifest);
  const std::string& text = t.reference_source;
  INFO(text);
  CHECK(occurrences(text, "namespace ks_node_0 {") == 1);
  CHECK(occurrences(text, "namespace ks_node_1 {") == 0);
  CHECK(occurrences(text, "namespace ks_node_2 {") == 1);
  CHECK(text.find("// -- node 1: n1 calls node 0's reference (the same code)") !=
        std::string::npos);
  CHECK(text.find("ks_node_0::ks_forward(in, 1, out, 1, cuda_stream))\n      return 200 + code;") !=
        std::string::npos);
  // A candidate for node 1 is its own code, never shared.
  expected<std::string> composed = compose_graph(
      t, {{1, "// CANDIDATE\nextern \"C\" int ks_forward(const ks_tensor*, int32_t, ks_tensor*, "
              "int32_t, void*) { return 0; }\n"}});
  REQUIRE(composed.has_value());
  CHECK(occurrences(*composed, "namespace ks_node_1 {") == 1);
}
