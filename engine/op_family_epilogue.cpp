// The epilogue of a matmul or a conv (params.epilogue): an elementwise expression of `acc`,
// the op's element (a product with alpha applied, a convolution with its bias), and of the
// inputs after the op's own (A and B; x, the weight and a bias), each broadcast to the output
// by numpy's rules: a linear layer's bias and activation, a residual add, a scale, computed where
// the product is stored instead of in a pass of its own over C. The templates read it through
// task.epilogue_source, one CUDA struct ks_epilogue (written here, so that every template
// applies the same code): kInputs, its pointers, operator()(acc, i) for C's flat index i,
// check(inputs) (the ABI's codes for an epilogue input that is not the task's) and
// of(inputs). Without an epilogue the struct is the identity with no inputs.

#include "engine/elementwise_expression.hpp"
#include "engine/graph_spec.hpp"
#include "engine/op_family_reader.hpp"

#include <algorithm>

namespace ks::engine::family_detail {

namespace {

constexpr std::string_view identity_epilogue = R"(// No epilogue: C is the product.
struct ks_epilogue {
  static constexpr int kInputs = 0;
  __device__ __forceinline__ float operator()(float v_acc, int64_t) const { return v_acc; }
  static int check(const ks_tensor*) { return 0; }
  static ks_epilogue of(const ks_tensor*) { return {}; }
};
)";

/// Returns the CUDA struct of an epilogue computing `expr` (over v_acc and v_<input>) with the
/// task's inputs from index `own` on, each read at its offset for C's flat index i.
std::string epilogue_source(const std::string& text, const std::string& expr,
                            const std::vector<tensor_spec>& inputs, size_t own,
                            const std::vector<int64_t>& c_shape) {
  std::string members, reads, checks, sets;
  for (size_t k = own; k < inputs.size(); ++k) {
    const tensor_spec& x = inputs[k];
    const std::string at = std::to_string(k);
    members += "  const " + std::string(c_type(x.type)) + "* in_" + x.name + ";\n";
    reads += "    const float v_" + x.name + " = (float)in_" + x.name + "[" +
             offset_of(x.shape, c_shape) + "];\n";
    checks += "    if (in[" + at + "].dtype != " + abi_name(x.type) + ") return 3;\n";
    checks += "    if (in[" + at + "].ndim != " + std::to_string(x.shape.size()) + ") return 5;\n";
    int64_t stride = 1;
    for (size_t d = x.shape.size(); d-- > 0;) {
      const std::string dim = "in[" + at + "].shape[" + std::to_string(d) + "]";
      checks += "    if (" + dim + " != " + std::to_string(x.shape[d]) + ") return 7;\n";
      if (x.shape[d] != 1)
        checks += "    if (in[" + at + "].stride[" + std::to_string(d) +
                  "] != " + std::to_string(stride) + ") return 8;\n";
      stride *= x.shape[d];
    }
    sets += "    e.in_" + x.name + " = (const " + c_type(x.type) + "*)in[" + at + "].data;\n";
  }
  return "// params.epilogue: the output = " + text +
         ", of acc (the op's element) and the inputs after the op's own.\n"
         "struct ks_epilogue {\n"
         "  static constexpr int kInputs = " +
         std::to_string(inputs.size() - own) + ";\n" + members +
         "  __device__ __forceinline__ float operator()(float v_acc, int64_t i) const {\n" + reads +
         "    return " + expr +
         ";\n  }\n"
         "  static int check(const ks_tensor* in) {\n" +
         checks +
         "    return 0;\n  }\n"
         "  static ks_epilogue of(const ks_tensor* in) {\n    ks_epilogue e;\n" +
         sets + "    return e;\n  }\n};\n";
}

/// Checks that every input from `own` on is of a type the epilogue reads and broadcasts to C.
bool extra_inputs_fit(family_reader& r, const std::vector<int64_t>& c_shape, size_t own) {
  bool ok = true;
  const std::vector<tensor_spec>& inputs = r.subject().inputs;
  for (size_t i = own; i < inputs.size(); ++i) {
    const tensor_spec& x = inputs[i];
    const std::string label = "inputs[" + std::to_string(i) + "] ('" + x.name + "')";
    if (x.type != dtype::f32 && x.type != dtype::u8 && x.type != dtype::i32 &&
        x.type != dtype::i64) {
      r.at_type(role::input, i,
                label + " must be f32, or u8, i32 or i64 (read as float) for an epilogue, got " +
                    to_string(x.type));
      ok = false;
    }
    bool fits = x.shape.size() <= c_shape.size();
    std::vector<int64_t> in = aligned(x.shape, c_shape.size());
    for (size_t d = 0; fits && d < in.size(); ++d)
      fits = in[d] == 1 || in[d] == c_shape[d];
    if (!fits) {
      r.at_shape(role::input, i,
                 label + " has shape " + shape_text(x.shape) + ", which does not broadcast to C " +
                     shape_text(c_shape) + " (aligned from the last dim, each extent equal or 1)");
      ok = false;
    }
    if (x.name == "acc") {
      r.at_shape(role::input, i,
                 label + ": 'acc' names the product in params.epilogue; " +
                     "give this input another name");
      ok = false;
    }
  }
  return ok;
}

} // namespace

std::optional<epilogue_analysis> analyze_epilogue(family_reader& r,
                                                  const std::vector<int64_t>& c_shape, size_t own,
                                                  const std::string& own_text, bool triangular,
                                                  const std::string& product_torch) {
  const std::vector<tensor_spec>& inputs = r.subject().inputs;
  if (!r.has("epilogue")) {
    if (inputs.size() > own) {
      r.at_shape(role::input, own,
                 "inputs[" + std::to_string(own) + "] ('" + inputs[own].name + "') comes after " +
                     own_text + ": the inputs after them are params.epilogue's, and there is none");
      return std::nullopt;
    }
    r.set("epilogue_source", std::string(identity_epilogue));
    r.set("has_epilogue", false);
    return epilogue_analysis{0.0, product_torch};
  }
  std::optional<std::string> text = r.text("epilogue");
  if (!text || !extra_inputs_fit(r, c_shape, own))
    return std::nullopt;
  if (triangular) {
    r.at_param("epilogue", "params.epilogue with params.triangle: torch.triu or tril comes "
                           "first and the epilogue sees its zeros; write the epilogue as a "
                           "node of its own");
    return std::nullopt;
  }
  std::vector<std::string> names{"acc"};
  for (size_t i = own; i < inputs.size(); ++i)
    names.push_back(inputs[i].name);
  expected<elementwise_expression> parsed = elementwise_expression::parse(*text, names);
  if (!parsed) {
    r.at_expression_error("epilogue", parsed.error());
    return std::nullopt;
  }
  const std::vector<std::string>& used = parsed->inputs_used();
  for (const std::string& name : names)
    if (std::find(used.begin(), used.end(), name) == used.end()) {
      r.at_param("epilogue", name == "acc" ? std::string("params.epilogue does not use acc, the "
                                                         "product")
                                           : "params.epilogue does not use input '" + name + "'");
      return std::nullopt;
    }
  r.set("epilogue_source", epilogue_source(*text, parsed->cuda(), inputs, own, c_shape));
  r.set("has_epilogue", true);
  return epilogue_analysis{static_cast<double>(parsed->operations()) *
                               static_cast<double>(product(c_shape)),
                           substitute_names(parsed->torch(), {{"acc", "(" + product_torch + ")"}})};
}

} // namespace ks::engine::family_detail
