#pragma once

// Graph task manifests shared by the graph tests (graph_task_test.cpp: loading, composition
// text, the offline backend; graph_reference_test.cpp: nvcc and the CPU emulator): one per
// shape of graph the composition must handle, each small.

#include <string>
#include <vector>

namespace ks::test {

/// A graph manifest and what it exercises.
struct graph_case {
  std::string label;
  std::string manifest;
};

/// elementwise -> scan: a masked cumsum, the mask a second input.
inline std::string masked_cumsum_manifest() {
  return R"toml(name = "masked_cumsum"
family = "graph"
inputs = [ { name = "x", dtype = "f32", shape = [64, 1000] },
           { name = "mask", dtype = "f32", shape = [64, 1000], init = "randint", low = 0, high = 2 } ]
outputs = [ { name = "y", dtype = "f32", shape = [64, 1000] } ]
tunables = { KS_BLOCK_THREADS = [128, 256, 512] }

[[nodes]]
name = "mul"
family = "elementwise"
inputs = ["x", "mask"]
outputs = [ { name = "t", dtype = "f32", shape = [64, 1000] } ]
params = { op = "x * mask" }

[[nodes]]
name = "scan"
family = "scan"
inputs = ["t"]
outputs = ["y"]
params = { op = "cumsum", dim = 1 }
)toml";
}

/// matmul -> elementwise epilogue: relu(A @ B + bias), the bias broadcast over the rows.
inline std::string matmul_bias_relu_manifest() {
  return R"toml(name = "matmul_bias_relu"
family = "graph"
inputs = [ { name = "A", dtype = "f32", shape = [33, 40] },
           { name = "B", dtype = "f32", shape = [40, 65] },
           { name = "bias", dtype = "f32", shape = [65] } ]
outputs = [ { name = "y", dtype = "f32", shape = [33, 65] } ]

[[nodes]]
name = "mm"
family = "matmul"
inputs = ["A", "B"]
outputs = [ { name = "C", dtype = "f32", shape = [33, 65] } ]

[[nodes]]
name = "epilogue"
family = "elementwise"
inputs = ["C", "bias"]
outputs = ["y"]
params = { op = "relu(C + bias)" }
)toml";
}

/// elementwise -> reduce to a scalar: the sum of x * x, through a shape view that flattens.
inline std::string sum_of_squares_manifest() {
  return R"toml(name = "sum_of_squares"
family = "graph"
inputs = [ { name = "x", dtype = "f32", shape = [64, 128] } ]
outputs = [ { name = "y", dtype = "f32", shape = [] } ]

[[views]]
name = "flat"
of = "sq"
shape = [8192]

[[nodes]]
name = "square"
family = "elementwise"
inputs = ["x"]
outputs = [ { name = "sq", dtype = "f32", shape = [64, 128] } ]
params = { op = "x * x" }

[[nodes]]
name = "total"
family = "reduce"
inputs = ["flat"]
outputs = ["y"]
params = { op = "sum", dim = 0 }
)toml";
}

/// A permute view into elementwise: y = x.permute(1, 0) * 2 + b.
inline std::string transposed_axpb_manifest() {
  return R"toml(name = "transposed_axpb"
family = "graph"
inputs = [ { name = "x", dtype = "f32", shape = [32, 48] },
           { name = "b", dtype = "f32", shape = [32] } ]
outputs = [ { name = "y", dtype = "f32", shape = [48, 32] } ]

[[views]]
name = "xt"
of = "x"
permute = [1, 0]

[[nodes]]
name = "axpb"
family = "elementwise"
inputs = ["xt", "b"]
outputs = ["y"]
params = { op = "xt * 2.0 + b" }
)toml";
}

/// The emulated graph: a flipped and narrowed view into a matmul whose B is a transposed
/// view, then a broadcast bias and relu; small enough to emulate in a moment.
inline std::string emulated_manifest() {
  return R"toml(name = "emulated"
family = "graph"
inputs = [ { name = "A", dtype = "f32", shape = [5, 9] },
           { name = "Bt", dtype = "f32", shape = [6, 7] },
           { name = "bias", dtype = "f32", shape = [6] } ]
outputs = [ { name = "y", dtype = "f32", shape = [5, 6] } ]

[[views]]
name = "A_part"
of = "A"
narrow = [1, 1, 7]

[[views]]
name = "A_flip"
of = "A_part"
flip = [0]

[[views]]
name = "B"
of = "Bt"
permute = [1, 0]

[[nodes]]
name = "mm"
family = "matmul"
inputs = ["A_flip", "B"]
outputs = [ { name = "C", dtype = "f32", shape = [5, 6] } ]

[[nodes]]
name = "epilogue"
family = "elementwise"
inputs = ["C", "bias"]
outputs = ["y"]
params = { op = "relu(C + bias)" }
)toml";
}

/// matmul -> softmax -> matmul: attention, whose softmax and second matmul are heavy nodes the
/// search does not tune (the first matmul is its main node).
inline std::string attention_manifest() {
  return R"toml(name = "attention"
family = "graph"
inputs = [ { name = "q", dtype = "f32", shape = [4, 64, 32] },
           { name = "k", dtype = "f32", shape = [4, 32, 64] },
           { name = "v", dtype = "f32", shape = [4, 64, 32] } ]
outputs = [ { name = "y", dtype = "f32", shape = [4, 64, 32] } ]
main = "scores"

[[nodes]]
name = "scores"
family = "matmul"
inputs = ["q", "k"]
outputs = [ { name = "s", dtype = "f32", shape = [4, 64, 64] } ]

[[nodes]]
name = "probs"
family = "softmax"
inputs = ["s"]
outputs = [ { name = "p", dtype = "f32", shape = [4, 64, 64] } ]
params = { op = "softmax", dim = 2 }

[[nodes]]
name = "mix"
family = "matmul"
inputs = ["p", "v"]
outputs = ["y"]
)toml";
}

/// matmul -> group norm: a companion node whose skill includes a header under a conditional
/// beside other lines (cooperative_groups and its namespace alias).
inline std::string matmul_group_norm_manifest() {
  return R"toml(name = "matmul_group_norm"
family = "graph"
inputs = [ { name = "x", dtype = "f32", shape = [64, 128] },
           { name = "w", dtype = "f32", shape = [256, 128] },
           { name = "gamma", dtype = "f32", shape = [256] },
           { name = "beta", dtype = "f32", shape = [256] } ]
outputs = [ { name = "y", dtype = "f32", shape = [64, 256] } ]

[[nodes]]
name = "linear"
family = "matmul"
inputs = ["x", "w"]
outputs = [ { name = "c", dtype = "f32", shape = [64, 256] } ]
params = { transpose_b = true }

[[nodes]]
name = "group_norm"
family = "channel_norm"
inputs = ["c", "gamma", "beta"]
outputs = ["y"]
params = { op = "group", eps = 1e-05, groups = 16, affine = true }
)toml";
}

/// Returns the four graphs every composed reference must compile for.
inline std::vector<graph_case> graph_cases() {
  return {{"elementwise -> scan", masked_cumsum_manifest()},
          {"matmul -> elementwise epilogue, broadcast bias", matmul_bias_relu_manifest()},
          {"elementwise -> reduce to a scalar through a shape view", sum_of_squares_manifest()},
          {"a permute view into elementwise", transposed_axpb_manifest()},
          {"narrow, flip and permute views into matmul, then an epilogue", emulated_manifest()}};
}

} // namespace ks::test
