// What a reduce or a scan reads: its one input x, or, with params.map, an elementwise expression
// over several inputs computed as it is read (a loss's (p - t) ** 2 summed, a mask applied
// before a cumsum), so that the values are never written to memory and read back.
//
// Templates do not see the inputs one by one: they get task.source, the CUDA text of one struct
// `ks_source` whose operator[] gives element i of the acted-on shape (row-major, as the
// [outer, axis, inner] view numbers it), whose quad(i) gives elements i..i+3 with 16-byte loads,
// and whose host functions read the kernel's arguments and check them (each a template, so that
// nvcc does not warn of the ones a kernel leaves unused: #177). The text is written
// here once for the family reference and every skill of the two families, so that a template
// that works for x works for any map.

#include "engine/elementwise_expression.hpp"
#include "engine/op_family_reader.hpp"

#include <algorithm>
#include <limits>
#include <set>

namespace ks::engine::family_detail {

std::vector<int64_t> aligned(const std::vector<int64_t>& shape, size_t rank) {
  std::vector<int64_t> out(rank - shape.size(), 1);
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

std::string offset_of(const std::vector<int64_t>& input, const std::vector<int64_t>& output) {
  if (input == output)
    return "i";
  std::vector<int64_t> in = aligned(input, output.size());
  if (product(in) == 1)
    return "0";
  std::string text;
  int64_t out_stride = 1;
  int64_t in_stride = 1;
  std::vector<std::string> terms;
  for (size_t d = output.size(); d-- > 0;) {
    if (in[d] > 1) {
      std::span<const int64_t> before(output.data(), d);
      std::string term = "i";
      if (out_stride > 1)
        term += " / " + std::to_string(out_stride);
      if (product(before) > 1) // a dim after the outermost one that is not 1 wraps
        term += " % " + std::to_string(output[d]);
      if (in_stride > 1)
        term = "(" + term + ") * " + std::to_string(in_stride);
      else if (term != "i")
        term = "(" + term + ")";
      terms.insert(terms.begin(), term);
    }
    out_stride *= output[d];
    in_stride *= in[d];
  }
  for (const std::string& term : terms)
    text += (text.empty() ? "" : " + ") + term;
  return text;
}

namespace {

/// One input as ks_source reads it.
struct source_operand {
  std::string name;  ///< the tensor's name: in_NAME is its pointer, v_NAME its value
  dtype type;        ///< read as float
  std::string index; ///< its flat index for element i (offset_of)
  bool whole;        ///< of the acted-on shape: read once, streamed, 16 bytes at a time
  int64_t numel;     ///< its element count
  /// A broadcast operand's four elements of a quad (i % 4 == 0, the last dim a multiple of 4):
  /// consecutive (its last dim is the acted-on one's: one 16-byte load), one element (its last
  /// dim is 1: one load), or neither (four loads).
  enum class quad_reach { four_loads, consecutive, one_element } reach = quad_reach::four_loads;
};

/// Returns how a broadcast operand of shape `in` (aligned to the acted-on `shape`) reaches a
/// quad's four elements.
source_operand::quad_reach reach_of(const std::vector<int64_t>& in,
                                    const std::vector<int64_t>& shape, dtype type) {
  if (shape.empty() || shape.back() % 4 != 0 || type != dtype::f32)
    return source_operand::quad_reach::four_loads;
  if (in.back() == 1)
    return source_operand::quad_reach::one_element;
  return in.back() == shape.back() ? source_operand::quad_reach::consecutive
                                   : source_operand::quad_reach::four_loads;
}

/// Returns `o`'s element at flat index expression `at`, as a float, in CUDA.
std::string scalar_load(const source_operand& o, const std::string& at) {
  std::string pointer = "in_" + o.name + " + (" + at + ")";
  // Streamed once (evict first); a broadcast operand is read again and again, so it stays cached.
  if (o.type == dtype::f32)
    return o.whole ? "__ldcs(" + pointer + ")" : "__ldg(" + pointer + ")";
  return "(float)in_" + o.name + "[" + at + "]";
}

/// Returns the CUDA that declares float4 q_NAME for elements i..i+3 of `o`.
std::string quad_load(const source_operand& o) {
  std::string q = "    const float4 q_" + o.name + " = ";
  if (o.whole && o.type == dtype::f32)
    return q + "__ldcs(reinterpret_cast<const float4*>(in_" + o.name + " + i));\n";
  if (!o.whole && o.reach == source_operand::quad_reach::consecutive)
    return q + "__ldg(reinterpret_cast<const float4*>(in_" + o.name + " + (" + o.index + ")));\n";
  if (!o.whole && o.reach == source_operand::quad_reach::one_element)
    return "    const float s_" + o.name + " = " + scalar_load(o, o.index) + ";\n" + q +
           "make_float4(s_" + o.name + ", s_" + o.name + ", s_" + o.name + ", s_" + o.name + ");\n";
  if (o.whole && o.type == dtype::u8)
    return "    const uchar4 u_" + o.name + " = *reinterpret_cast<const uchar4*>(in_" + o.name +
           " + i);\n" + q + "make_float4(u_" + o.name + ".x, u_" + o.name + ".y, u_" + o.name +
           ".z, u_" + o.name + ".w);\n";
  std::string text = q + "make_float4(";
  for (int k = 0; k < 4; ++k) {
    std::string at = k == 0 ? "i" : "i + " + std::to_string(k);
    std::string index = o.whole ? at : o.index;
    if (!o.whole) // the operand's own index of element at: offset_of's text over a renamed i
      index = "[](int64_t i) { return (int64_t)(" + o.index + "); }(" + at + ")";
    text += (k == 0 ? "" : ", ") + scalar_load(o, index);
  }
  return text + ");\n";
}

/// The per-operand pieces of struct ks_source's text.
struct operand_texts {
  std::string members, values, params, args, quads, of, aligned_checks, checks, scalar_args;
};

operand_texts texts_of(const std::vector<source_operand>& operands) {
  operand_texts t;
  for (size_t k = 0; k < operands.size(); ++k) {
    const source_operand& o = operands[k];
    std::string K = std::to_string(k);
    std::string ctype = c_type(o.type);
    std::string comma = k == 0 ? "" : ", ";
    t.members += "  const " + ctype + "* __restrict__ in_" + o.name + ";\n";
    t.values += "    const float v_" + o.name + " = " + scalar_load(o, o.index) + ";\n";
    t.params += comma + "float v_" + o.name;
    t.args += comma + "q_" + o.name + ".@";
    t.quads += quad_load(o);
    t.of += comma + "(const " + ctype + "*)inputs[" + K + "].data";
    if (o.whole || o.reach == source_operand::quad_reach::consecutive) {
      int64_t bytes = o.type == dtype::u8 ? 4 : 16;
      t.aligned_checks +=
          " && (uintptr_t)inputs[" + K + "].data % " + std::to_string(bytes) + " == 0";
    }
    t.checks += "    if (inputs[" + K + "].dtype != " + abi_name(o.type) + ") return 3;\n";
    t.scalar_args += comma + "v_" + o.name;
  }
  return t;
}

/// Returns map_k<k>() and map(): map(...) is the one operator[] and quad() use, the only map
/// or map `which`.
std::string maps_text(const std::vector<std::string>& exprs, const operand_texts& t) {
  const size_t n_maps = exprs.size();
  std::string text =
      "  template <int k> static __device__ __forceinline__ float map_k(" + t.params + ") {\n";
  for (size_t m = 0; m < n_maps; ++m)
    text += std::string(m == 0 ? "    if" : "    else if") +
            " constexpr (k == " + std::to_string(m) + ") return " + exprs[m] + ";\n";
  text += "    else return 0.0f;\n  }\n";
  if (n_maps == 1)
    return text + "  template <int = 0> static __device__ __forceinline__ float map(" + t.params +
           ") { return " + exprs[0] + "; }\n\n";
  text += "  template <int = 0> __device__ __forceinline__ float map(" + t.params + ") const {\n";
  text += "    switch (which) {\n";
  for (size_t m = 0; m + 1 < n_maps; ++m)
    text += "      case " + std::to_string(m) + ": return map_k<" + std::to_string(m) + ">(" +
            t.scalar_args + ");\n";
  return text + "      default: return map_k<" + std::to_string(n_maps - 1) + ">(" + t.scalar_args +
         ");\n    }\n  }\n\n";
}

/// Returns operator[], quad(), values() and quads().
std::string accessors_text(size_t n_maps, const operand_texts& t) {
  const std::string maps = std::to_string(n_maps);
  auto component = [&](char c, const std::string& target, const std::string& callee) {
    std::string call = t.args;
    std::replace(call.begin(), call.end(), '@', c);
    return "    " + target + "." + c + " = " + callee + "(" + call + ");\n";
  };
  auto all_four = [&](const std::string& target, const std::string& callee) {
    return component('x', target, callee) + component('y', target, callee) +
           component('z', target, callee) + component('w', target, callee);
  };
  std::string text = "  /// Element i.\n  template <int = 0> __device__ __forceinline__ float "
                     "operator[](int64_t i) "
                     "const {\n" +
                     t.values + "    return map(" + t.scalar_args + ");\n  }\n\n";
  text += "  /// Elements i .. i + 3 (i % 4 == 0, where aligned() holds: 16-byte loads).\n";
  text +=
      "  template <int = 0> __device__ __forceinline__ float4 quad(int64_t i) const {\n" + t.quads;
  text += "    float4 r;\n" + all_four("r", "map");
  text += "    return r;\n  }\n\n";
  text += "  /// Element i of every map, each input loaded once.\n";
  text += "  template <int = 0> __device__ __forceinline__ void values(int64_t i, float (&r)[" +
          maps + "]) const {\n" + t.values;
  for (size_t m = 0; m < n_maps; ++m)
    text += "    r[" + std::to_string(m) + "] = map_k<" + std::to_string(m) + ">(" + t.scalar_args +
            ");\n";
  text += "  }\n\n";
  text += "  /// Elements i .. i + 3 of every map (as quad()), each input loaded once.\n";
  text += "  template <int = 0> __device__ __forceinline__ void quads(int64_t i, float4 (&r)[" +
          maps + "]) const {\n" + t.quads;
  for (size_t m = 0; m < n_maps; ++m)
    text += all_four("r[" + std::to_string(m) + "]", "map_k<" + std::to_string(m) + ">");
  return text + "  }\n\n";
}

/// Returns select(), of(), aligned() and check(): what the host and a kernel's entry call.
std::string host_text(const std::vector<source_operand>& operands, bool several,
                      const operand_texts& t) {
  std::string text = "  /// Returns this source reading map k (a source of one map: itself).\n";
  text += "  template <int = 0> __host__ __device__ ks_source select(int k) const {\n";
  text += several ? "    ks_source s = *this;\n    s.which = k;\n    return s;\n  }\n\n"
                  : "    (void)k;\n    return *this;\n  }\n\n";
  text += "  /// Returns the source of the kernel's inputs.\n";
  text += "  template <int = 0> static ks_source of(const ks_tensor* inputs) { return {" + t.of +
          (several ? ", 0" : "") + "}; }\n\n";
  text += "  /// Checks whether quad() may load 16 bytes at a time: every input it reads with a "
          "vector load is aligned.\n";
  text += "  template <int = 0> static bool aligned(const ks_tensor* inputs) { return true" +
          t.aligned_checks + "; }\n\n";
  text += "  /// Checks the inputs: 0 ok; 1 their count is not the task's; 3 a dtype is not; 5 "
          "an input's\n  /// element count is not; 8 one is not contiguous.\n";
  text += "  template <int = 0> static int check(const ks_tensor* inputs, int32_t n_inputs) {\n";
  text += "    if (n_inputs != " + std::to_string(operands.size()) + ") return 1;\n" + t.checks;
  text += "    for (int32_t k = 0; k < n_inputs; ++k) {\n";
  text += "      int64_t expect = 1;\n";
  text += "      for (int32_t d = inputs[k].ndim - 1; d >= 0; --d) {\n";
  text += "        if (inputs[k].shape[d] != 1 && inputs[k].stride[d] != expect) return 8;\n";
  text += "        expect *= inputs[k].shape[d];\n      }\n    }\n";
  for (size_t k = 0; k < operands.size(); ++k)
    text += "    if (ks_numel(&inputs[" + std::to_string(k) +
            "]) != " + std::to_string(operands[k].numel) + ") return 5;\n";
  return text + "    return 0;\n  }\n};\n";
}

/// Returns the text of struct ks_source over `operands` computing `exprs` (CUDA over v_NAME):
/// one expression, or several (maps): then `which` picks the one operator[] and quad() give,
/// and values() and quads() give them all from one load of each input.
std::string source_struct(const std::vector<source_operand>& operands,
                          const std::vector<std::string>& exprs, bool mapped) {
  const operand_texts t = texts_of(operands);
  const bool several = exprs.size() > 1;
  const std::string maps = std::to_string(exprs.size());
  std::string text = "/// What the op reads: element i (flat, row-major in the task's shape) is ";
  text += mapped ? (several ? "map `which` of params.map's " + maps +
                                  " expressions of the inputs, computed as it is read"
                            : std::string("params.map of the inputs, computed as it is read"))
                 : "input x itself";
  text += ".\nstruct ks_source {\n" + t.members;
  if (several)
    text += "  int which; ///< the map that operator[] and quad() give: 0 to maps - 1\n";
  text += "\n  /// The maps (params.map's expressions; without one, the input itself).\n";
  // An enumerator: nvcc warns (#177) of a static data member a kernel leaves unused.
  text += "  enum : int { maps = " + maps + " };\n";
  return text + maps_text(exprs, t) + accessors_text(exprs.size(), t) +
         host_text(operands, several, t);
}

} // namespace

namespace {

/// The source of an op without params.map: its one f32 input x itself.
std::optional<acted_on> unmapped_source(family_reader& r) {
  const std::vector<tensor_spec>& inputs = r.subject().inputs;
  if (inputs.size() != 1)
    return std::nullopt; // counts() reported it
  r.require_type(role::input, 0, dtype::f32);
  const tensor_spec& x = inputs[0];
  if (x.type != dtype::f32)
    return std::nullopt;
  r.set("mapped", false);
  r.set("maps", int64_t{1});
  r.set("source", source_struct({{x.name, x.type, "i", true, x.numel()}}, {"v_" + x.name}, false));
  r.out().derived.lists["inputs"] = {{{"broadcast", false}, {"offset", std::string("i")}}};
  return acted_on{x.shape, x.name, 0, {}};
}

/// Returns the shape the inputs broadcast to (numpy's rules, aligned from the last dim, as the
/// elementwise family's output), reporting each input of a type params.map cannot read or of
/// a shape that does not broadcast; nullopt when one was reported.
std::optional<std::vector<int64_t>> broadcast_shape(family_reader& r) {
  const std::vector<tensor_spec>& inputs = r.subject().inputs;
  size_t rank = 0;
  for (const tensor_spec& x : inputs)
    rank = std::max(rank, x.shape.size());
  std::vector<int64_t> shape(rank, 1);
  bool ok = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const tensor_spec& x = inputs[i];
    if (x.type != dtype::f32 && x.type != dtype::u8 && x.type != dtype::i32 &&
        x.type != dtype::i64) {
      r.at_type(role::input, i,
                "inputs[" + std::to_string(i) + "] ('" + x.name + "') must be f32, or u8, i32 " +
                    "or i64 (read as float by params.map) for family " + r.subject().family +
                    ", got " + to_string(x.type));
      ok = false;
    }
    std::vector<int64_t> in = aligned(x.shape, rank);
    for (size_t d = 0; d < rank; ++d) {
      if (in[d] != 1 && shape[d] != 1 && in[d] != shape[d]) {
        r.at_shape(role::input, i,
                   "inputs[" + std::to_string(i) + "] ('" + x.name + "') has shape " +
                       shape_text(x.shape) + ", which does not broadcast with the other inputs " +
                       "of params.map (aligned from the last dim, each extent equal or 1)");
        ok = false;
        break;
      }
      shape[d] = std::max(shape[d], in[d]);
    }
  }
  if (!ok)
    return std::nullopt;
  return shape;
}

/// Returns params.map's expressions parsed over the inputs' names, reporting a parse error at
/// its column in the whole of params.map and an input no expression uses; nullopt when one
/// was reported.
std::optional<std::vector<elementwise_expression>> parse_maps(family_reader& r,
                                                              const std::string& map) {
  std::vector<std::string> names;
  for (const tensor_spec& x : r.subject().inputs)
    names.push_back(x.name);
  std::vector<elementwise_expression> parsed;
  std::set<std::string> used;
  size_t offset = 0; // of each expression in params.map, for a parse error's column
  for (const std::string& text : split_maps(map)) {
    expected<elementwise_expression> one = elementwise_expression::parse(text, names);
    if (!one) {
      // The parser's "OFFSET: message", its offset made one in the whole of params.map.
      const std::string& message = one.error().message();
      size_t colon = message.find(": ");
      size_t at = offset + std::stoul(message.substr(0, colon));
      r.at_expression_error(
          "map", engine::error(one.error().code(), std::to_string(at) + message.substr(colon)));
      return std::nullopt;
    }
    used.insert(one->inputs_used().begin(), one->inputs_used().end());
    parsed.push_back(std::move(*one));
    offset += text.size() + 1;
  }
  bool ok = true;
  for (const std::string& name : names)
    if (used.count(name) == 0) {
      r.at_param("map", "params.map does not use input '" + name + "'");
      ok = false;
    }
  if (!ok)
    return std::nullopt;
  return parsed;
}

} // namespace

std::optional<acted_on> analyze_source(family_reader& r, const std::optional<std::string>& map) {
  if (!map)
    return unmapped_source(r);
  std::optional<std::vector<int64_t>> shape = broadcast_shape(r);
  std::optional<std::vector<elementwise_expression>> parsed = parse_maps(r, *map);
  if (!shape || !parsed)
    return std::nullopt;
  const size_t rank = shape->size();
  std::vector<source_operand> operands;
  std::vector<template_record> records;
  for (const tensor_spec& x : r.subject().inputs) {
    bool whole = x.shape == *shape || aligned(x.shape, rank) == *shape;
    std::string index = offset_of(x.shape, *shape);
    operands.push_back({x.name, x.type, index, whole, x.numel(),
                        reach_of(aligned(x.shape, rank), *shape, x.type)});
    records.push_back({{"broadcast", !whole}, {"offset", index}});
  }
  std::vector<std::string> cuda;
  acted_on result{*shape, "", 0, {}};
  for (const elementwise_expression& e : *parsed) {
    cuda.push_back(e.cuda());
    result.operations += static_cast<double>(e.operations());
    if (parsed->size() > 1)
      result.torch_each.push_back("(" + e.torch() + ")");
  }
  result.torch = "(" + parsed->front().torch() + ")";
  r.set("mapped", true);
  r.set("maps", static_cast<int64_t>(parsed->size()));
  r.set("source", source_struct(operands, cuda, true));
  r.out().derived.lists["inputs"] = std::move(records);
  return result;
}

std::vector<std::string> split_maps(const std::string& map) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (;;) {
    size_t at = map.find(';', from);
    parts.push_back(map.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos)
      return parts;
    from = at + 1;
  }
}

} // namespace ks::engine::family_detail
