// Composing a graph task's kernel from one source per node. Each node's source is a complete
// candidate of its family (a rendered reference, or a skill's template rendered for the node's
// task), so composition must keep what each file assumes of its own translation unit:
//
// - Includes move to the top, once each: an #include inside a namespace would put the CUDA
//   headers in it. A preprocessor conditional that holds nothing but includes moves whole (a
//   template's `#ifdef KS_EMULATE` choice of a header); any other conditional stays.
// - Everything else goes into `namespace ks_node_<i> { ... }`, so that two nodes' kernels,
//   helpers and constants (every reference has a `namespace ks_family` and a `kBlock`) do not
//   collide; the node's `extern "C" int ks_forward` becomes the plain function
//   ks_node_<i>::ks_forward, which the graph's own ks_forward calls.
// - A node whose reference is another's but for its comments (a network repeats a block at one
//   shape: ResNet-101's 314 nodes hold far fewer distinct kernels) calls the first one's
//   namespace instead of a copy: nvcc's time grows with the text, and the nodes run one after
//   another on one stream, so they can share a kernel's globals.
// - Macros are the one thing a namespace does not scope: `#pragma push_macro` before a node and
//   `pop_macro` after it, for every macro the node defines, make a node's
//   `#ifndef KS_BLOCK_THREADS` default (or a launch-parameter skill's `#define`) its own, while
//   a -D on nvcc's command line still reaches every node.
//
// The graph's ks_forward then does what a node cannot: it checks the graph's own arguments
// (families/common/abi_checks rendered for the graph, at global scope beside the nodes'
// namespaced copies), lays out every intermediate and every strided view's copy in one device
// workspace (256-byte aligned offsets), copies each strided view with one generic kernel
// (ks_graph::strided_copy, templated on the element's size) right before the first node that
// reads it, and calls the nodes in order on the caller's stream with contiguous ks_tensor
// descriptors (a shape view is the same pointer with its own shape). A node's failure code c
// comes back as 100 * (i + 1) + c, so the code names the node.
//
// The workspace is taken for each call from the device's default memory pool
// (cudaMallocAsync, given back with cudaFreeAsync on the same stream) rather than kept in a
// static of the library: the bench worker keeps every library it loaded, so a static workspace
// would hold one copy of the intermediates per candidate of the task (a few candidates of a
// graph with GiB-sized intermediates would fill the card). The pool's release threshold is
// raised to the largest workspace asked for, so after the first call the memory stays in the
// pool and every call, of this candidate or the next, reuses it: a few microseconds of host
// time per call, and at most one workspace held.

#include "engine/graph_reference.hpp"

#include "base/text.hpp"
#include "engine/graph_spec.hpp"
#include "engine/op_family.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace ks::engine {

namespace {

/// Returns CUDA text `source` without its // comments (none inside a string or character
/// literal is taken for one): two references that differ only there compile to the same code.
std::string without_comments(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  char quote = 0;
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    if (quote != 0) {
      out += c;
      if (c == '\\' && i + 1 < source.size())
        out += source[++i];
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
      out += c;
    } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
      while (i < source.size() && source[i] != '\n')
        ++i;
      out += '\n';
    } else {
      out += c;
    }
  }
  return out;
}

/// Every offset in the workspace is a multiple of this many bytes.
constexpr int64_t workspace_alignment = 256;

/// Returns the directive of a preprocessor line ("include", "ifdef", ...), or empty.
std::string_view directive_of(std::string_view line) {
  line = base::trim(line);
  if (line.empty() || line.front() != '#')
    return {};
  line = base::trim(line.substr(1));
  size_t length = 0;
  while (length < line.size() && std::isalpha(static_cast<unsigned char>(line[length])) != 0)
    ++length;
  return line.substr(0, length);
}

/// Returns `line` as a key for deduplication: trimmed, without a trailing // comment.
std::string include_key(std::string_view line) {
  size_t comment = line.find("//");
  return std::string(base::trim(line.substr(0, comment)));
}

bool opens_conditional(std::string_view d) {
  return d == "if" || d == "ifdef" || d == "ifndef";
}

/// Whether directive `d` opens, continues or closes a preprocessor conditional.
bool is_conditional(std::string_view d) {
  return opens_conditional(d) || d == "else" || d == "elif" || d == "endif";
}

/// Returns the position just past `extern "C"` before `int ks_forward(` in `text` from `from`,
/// and where `extern` starts; npos when there is none.
std::pair<size_t, size_t> find_extern_forward(const std::string& text, size_t from) {
  constexpr std::string_view marker = "extern \"C\"";
  for (size_t at = text.find(marker, from); at != std::string::npos;
       at = text.find(marker, at + 1)) {
    size_t i = at + marker.size();
    auto skip_space = [&] {
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0)
        ++i;
    };
    auto word = [&](std::string_view w) {
      skip_space();
      if (text.compare(i, w.size(), w) != 0)
        return false;
      i += w.size();
      return true;
    };
    skip_space();
    size_t end = i;
    (void)word("__host__");
    if (word("int") && word("ks_forward") && word("("))
      return {at, end};
  }
  return {std::string::npos, std::string::npos};
}

std::string shape_list(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t e : shape)
    text += (text.empty() ? "" : ", ") + std::to_string(e);
  return "{" + text + "}";
}

/// Returns the unsigned integer type of `t`'s size: what the strided copy moves.
const char* word_type(dtype t) {
  switch (size_of(t)) {
  case 1:
    return "uint8_t";
  case 2:
    return "uint16_t";
  case 8:
    return "uint64_t";
  default:
    return "uint32_t";
  }
}

std::string node_lines(const graph_spec& g) {
  std::string text;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph_node& n = g.nodes[i];
    std::string ins;
    std::string outs;
    for (const std::string& name : n.inputs)
      ins += (ins.empty() ? "" : ", ") + name;
    for (const std::string& name : n.outputs)
      outs += (outs.empty() ? "" : ", ") + name;
    text += "//   " + std::to_string(i) + ". " + n.name + " (" + n.op.family + "): " + outs +
            " = " + n.name + "(" + ins + ")" + (i == g.main ? ", the main node" : "") + "\n";
  }
  return text;
}

/// Where the graph's ks_forward finds each name's data: a C++ expression of a pointer, in
/// parentheses when it is a sum (a cast before it must apply to the whole: `(uint32_t*)(ws +
/// 512)`, not to ws).
class data_plan {
public:
  data_plan(const task& subject, const graph_spec& g) {
    for (size_t i = 0; i < subject.inputs.size(); ++i)
      pointer_[subject.inputs[i].name] = "inputs[" + std::to_string(i) + "].data";
    for (size_t i = 0; i < subject.outputs.size(); ++i)
      pointer_[subject.outputs[i].name] = "outputs[" + std::to_string(i) + "].data";
    for (const tensor_spec& t : g.intermediates)
      pointer_[t.name] = "(ws + " + std::to_string(allocate(t.bytes())) + ")";
    for (const graph_view& v : g.views)
      pointer_[v.name] = v.strided ? "(ws + " + std::to_string(allocate(v.tensor.bytes())) + ")"
                                   : pointer_.at(v.root);
  }

  const std::string& pointer(const std::string& name) const { return pointer_.at(name); }
  int64_t bytes() const noexcept { return bytes_; }

private:
  int64_t allocate(int64_t bytes) {
    int64_t at = bytes_;
    bytes_ += (bytes + workspace_alignment - 1) / workspace_alignment * workspace_alignment;
    return at;
  }

  std::map<std::string, std::string> pointer_;
  int64_t bytes_ = 0;
};

constexpr std::string_view graph_helpers = R"(namespace ks_graph {

/// Where each element of a strided view lies in the tensor under it (in elements).
struct view_layout {
  int32_t rank;
  int64_t offset;
  int64_t shape[8];
  int64_t stride[8];
};

/// Copies the view `layout` of `src` into the contiguous `dst` of `n` elements; T is an
/// unsigned integer of the element's size.
template <typename T>
__global__ void strided_copy(const T* __restrict__ src, T* __restrict__ dst, int64_t n,
                             view_layout layout) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t rest = i;
    int64_t at = layout.offset;
    for (int32_t d = layout.rank - 1; d >= 0; --d) {
      at += rest % layout.shape[d] * layout.stride[d];
      rest /= layout.shape[d];
    }
    dst[i] = src[at];
  }
}

/// Returns a contiguous row-major descriptor of `data`.
inline ks_tensor contiguous(void* data, int32_t dtype, std::initializer_list<int64_t> shape) {
  ks_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = (int32_t)shape.size();
  int32_t d = 0;
  for (int64_t extent : shape) t.shape[d++] = extent;
  int64_t stride = 1;
  for (d = t.ndim - 1; d >= 0; --d) {
    t.stride[d] = stride;
    stride *= t.shape[d];
  }
  return t;
}

/// Takes `bytes` of device memory for one call, stream-ordered on `stream`, from the device's
/// default memory pool; ks_forward gives it back with cudaFreeAsync before it returns. The
/// pool keeps up to the largest workspace any graph asked for (its release threshold raised to
/// that on a library's first call), so later calls, and the other candidates of the task,
/// reuse that memory. Returns false when the memory cannot be had.
inline bool take_workspace(char** ws, size_t bytes, cudaStream_t stream) {
  static bool pooled = false;
  if (!pooled) {
    int device = 0;
    cudaMemPool_t pool;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess)
      return false;
    uint64_t keep = 0;
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess)
      return false;
    if (keep < bytes) {
      keep = bytes;
      if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess)
        return false;
    }
    pooled = true;
  }
  return cudaMallocAsync((void**)ws, bytes, stream) == cudaSuccess;
}

} // namespace ks_graph
)";

class composer {
public:
  composer(const task& subject, const graph_spec& g)
    : subject_(subject), g_(g), data_(subject, g) {}

  expected<std::string> compose(const std::map<size_t, std::string>& replacements) {
    for (const auto& [index, source] : replacements)
      if (index >= g_.nodes.size())
        return fail(errc::invalid_input, "graph task '" + subject_.name + "' has no node " +
                                             std::to_string(index) + " to replace");
    for (std::string_view line : {"#include \"kernelskill/abi.h\"", "#include <cuda_runtime.h>",
                                  "#include <stdint.h>", "#include <initializer_list>"})
      add_include(std::string(line));
    std::string nodes;
    std::map<std::string, size_t> first_with_code; // a reference without comments -> its node
    callee_.assign(g_.nodes.size(), 0);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      callee_[i] = i;
      auto replaced = replacements.find(i);
      const std::string& source =
          replaced != replacements.end() ? replaced->second : g_.nodes[i].op.reference_source;
      if (replaced == replacements.end()) {
        auto [first, added] = first_with_code.emplace(without_comments(source), i);
        if (!added) {
          callee_[i] = first->second;
          nodes += "// -- node " + std::to_string(i) + ": " + g_.nodes[i].name + " calls node " +
                   std::to_string(first->second) + "'s reference (the same code)\n\n";
          continue;
        }
      }
      expected<std::string> wrapped = wrap_node(i, source, replaced != replacements.end());
      if (!wrapped)
        return tl::unexpected(wrapped.error());
      nodes += *wrapped;
    }
    std::string out = header(replacements);
    for (const std::string& include : includes_)
      out += include + "\n";
    out += "\n" + nodes;
    out += "// -- the graph (engine/graph_reference.cpp) "
           "------------------------------------------------\n\n";
    out += g_.checks_source + "\n" + std::string(graph_helpers) + "\n" + forward();
    return out;
  }

private:
  void add_include(const std::string& text) {
    if (seen_.insert(include_key(text)).second)
      includes_.push_back(text);
  }

  std::string header(const std::map<size_t, std::string>& replacements) const {
    std::string text;
    if (replacements.empty())
      text = "// Reference of graph task " + subject_.name +
             ", composed by engine/graph_reference.cpp from the\n// references of its nodes:\n";
    else
      text = "// Graph task " + subject_.name +
             ", composed by engine/graph_reference.cpp: a candidate's source for\n// node(s) " +
             replaced_names(replacements) + ", the references of the other nodes:\n";
    text += node_lines(g_);
    text += "// Return codes: 0 ok; 1 to 8 the graph's own arguments, as every reference's (1 "
            "n_inputs, 2\n// n_outputs, 3 an input's dtype, 4 an output's dtype, 5 an input's "
            "rank, 6 an output's rank,\n// 7 an extent, 8 a tensor that is not contiguous); 11 "
            "the workspace cannot be allocated;\n// 100 * (i + 1) + c: node i returned c (10: "
            "a CUDA error at the launch of its view copy).\n";
    return text;
  }

  std::string replaced_names(const std::map<size_t, std::string>& replacements) const {
    std::string names;
    for (const auto& [index, source] : replacements)
      names +=
          (names.empty() ? "" : ", ") + std::to_string(index) + " (" + g_.nodes[index].name + ")";
    return names;
  }

  expected<std::string> wrap_node(size_t i, const std::string& source, bool replaced) {
    const graph_node& n = g_.nodes[i];
    hoisted_source split = hoist_includes(source);
    for (const std::string& include : split.includes)
      add_include(include);
    std::string body = std::move(split.body);
    size_t count = 0;
    for (size_t from = 0;;) {
      auto [at, end] = find_extern_forward(body, from);
      if (at == std::string::npos)
        break;
      body.erase(at, end - at);
      from = at;
      ++count;
    }
    if (count == 0)
      return fail(errc::invalid_input, "graph task '" + subject_.name + "', node '" + n.name +
                                           "': its " +
                                           (replaced ? "candidate source" : "reference") +
                                           " has no extern \"C\" int ks_forward( to call");
    std::string ns = "ks_node_" + std::to_string(i);
    std::string text = "// -- node " + std::to_string(i) + ": " + n.name + " (" + n.op.family +
                       (replaced ? "), a candidate" : "), its reference") + " --\n";
    for (const std::string& macro : split.macros)
      text += "#pragma push_macro(\"" + macro + "\")\n";
    text += "namespace " + ns + " {\n\n" + body;
    if (!body.empty() && body.back() != '\n')
      text += "\n";
    text += "\n} // namespace " + ns + "\n";
    for (auto it = split.macros.rbegin(); it != split.macros.rend(); ++it)
      text += "#pragma pop_macro(\"" + *it + "\")\n";
    return text + "\n";
  }

  /// Returns a contiguous descriptor of `name` as `record` (op_family.hpp's tensor_records)
  /// describes it.
  std::string descriptor(const std::string& name, const template_record& record) const {
    return "ks_graph::contiguous(" + data_.pointer(name) + ", " +
           std::get<std::string>(record.at("abi_dtype")) + ", " +
           shape_list(std::get<std::vector<int64_t>>(record.at("extents"))) + ")";
  }

  std::string copy_view(const graph_view& v, size_t node) const {
    std::string type = word_type(v.tensor.type);
    std::string text = "  { // view " + v.name + ": " + to_string(v.kind) + " of " + v.of +
                       ", copied\n    const ks_graph::view_layout layout{" +
                       std::to_string(v.tensor.shape.size()) + ", " + std::to_string(v.offset) +
                       ", " + shape_list(v.tensor.shape) + ", " + shape_list(v.strides) + "};\n";
    text += "    const int64_t n = " + std::to_string(v.tensor.numel()) + ";\n";
    text += "    ks_graph::strided_copy<" + type +
            "><<<ks_family::blocks_for(n, 256, 1 << 20), 256, 0, stream>>>((const " + type + "*)" +
            data_.pointer(v.root) + ", (" + type + "*)" + data_.pointer(v.name) + ", n, layout);\n";
    text += "    if (cudaGetLastError() != cudaSuccess) return " +
            std::to_string(100 * (node + 1) + 10) + ";\n  }\n";
    return text;
  }

  /// Returns ks_graph::run_nodes, which copies the views and calls the nodes in order, and the
  /// graph's ks_forward around it.
  std::string forward() const {
    bool copies = std::any_of(g_.views.begin(), g_.views.end(),
                              [](const graph_view& v) { return v.strided; });
    bool workspace = data_.bytes() > 0;
    std::string text = "namespace ks_graph {\n\n/// Copies the strided views and calls the nodes "
                       "in order; returns the first failure's code.\n";
    text += std::string("inline int run_nodes(const ks_tensor* inputs, ks_tensor* outputs, ") +
            (workspace ? "char* ws, " : "") + "void* cuda_stream) {\n";
    if (copies)
      text += "  cudaStream_t stream = (cudaStream_t)cuda_stream;\n";
    std::set<std::string> copied;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const graph_node& n = g_.nodes[i];
      text += "  // node " + std::to_string(i) + ": " + n.name + " (" + n.op.family + ")\n";
      for (const std::string& name : n.inputs)
        if (const graph_view* v = g_.find_view(name); v && v->strided && copied.insert(name).second)
          text += copy_view(*v, i);
      text += "  {\n";
      auto list = [&](const char* array, const std::vector<std::string>& names, const char* which) {
        std::vector<template_record> records = tensor_records(n.op, which);
        text +=
            "    ks_tensor " + std::string(array) + "[" + std::to_string(names.size()) + "] = {";
        for (size_t k = 0; k < names.size(); ++k)
          text += std::string(k == 0 ? "" : ",") + "\n        " + descriptor(names[k], records[k]);
        text += "};\n";
      };
      list("in", n.inputs, "inputs");
      list("out", n.outputs, "outputs");
      text += "    if (const int code = ks_node_" + std::to_string(callee_[i]) +
              "::ks_forward(in, " + std::to_string(n.inputs.size()) + ", out, " +
              std::to_string(n.outputs.size()) + ", cuda_stream))\n      return " +
              std::to_string(100 * (i + 1)) + " + code;\n  }\n";
    }
    text += "  return 0;\n}\n\n} // namespace ks_graph\n\n";
    text += "extern \"C\" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, "
            "ks_tensor* outputs,\n                          int32_t n_outputs, void* "
            "cuda_stream) {\n";
    text += "  if (const int code = ks_family::check_arguments(inputs, n_inputs, outputs, "
            "n_outputs)) return code;\n";
    if (!workspace)
      return text + "  return ks_graph::run_nodes(inputs, outputs, cuda_stream);\n}\n";
    text += "  cudaStream_t stream = (cudaStream_t)cuda_stream;\n";
    text += "  char* ws = nullptr; // every intermediate and view copy\n";
    text += "  if (!ks_graph::take_workspace(&ws, " + std::to_string(data_.bytes()) +
            ", stream)) return 11;\n";
    text += "  const int code = ks_graph::run_nodes(inputs, outputs, ws, cuda_stream);\n";
    text += "  cudaFreeAsync(ws, stream);\n";
    return text + "  return code;\n}\n";
  }

  const task& subject_;
  const graph_spec& g_;
  data_plan data_;
  std::vector<std::string> includes_;
  std::vector<size_t> callee_; ///< per node, the node whose namespace it calls
  std::set<std::string> seen_;
};

} // namespace

namespace {

/// Walks a source line by line, moving its includes (and the conditionals around them) up
/// out of the body; see hoist_includes.
class include_hoister {
public:
  void line(std::string_view line) {
    std::string_view d = code_line(line) ? directive_of(line) : std::string_view{};
    if (depth_ == 0)
      top_level(line, d);
    else
      in_conditional(line, d);
  }

  hoisted_source finish() {
    for (std::string_view l : group_) // an unclosed conditional: left as it was
      body_line(l);
    return std::move(out_);
  }

private:
  /// Returns whether `line` starts outside a block comment (a line inside one is text,
  /// whatever it looks like), and follows the comments it opens and closes.
  bool code_line(std::string_view line) {
    bool code = !in_comment_;
    for (size_t at = 0; at + 1 < line.size(); ++at) {
      if (!in_comment_ && line.compare(at, 2, "//") == 0)
        break;
      if (!in_comment_ && line.compare(at, 2, "/*") == 0) {
        in_comment_ = true;
        ++at;
      } else if (in_comment_ && line.compare(at, 2, "*/") == 0) {
        in_comment_ = false;
        ++at;
      }
    }
    return code;
  }

  void top_level(std::string_view line, std::string_view d) {
    if (d == "include") {
      out_.includes.emplace_back(base::trim(line));
    } else if (opens_conditional(d)) {
      depth_ = 1;
      group_ = {line};
      group_only_includes_ = true;
      group_has_include_ = false;
    } else {
      body_line(line);
    }
  }

  void in_conditional(std::string_view line, std::string_view d) {
    group_.push_back(line);
    std::string_view trimmed = base::trim(line);
    if (opens_conditional(d))
      ++depth_;
    else if (d == "endif")
      --depth_;
    else if (d == "include")
      group_has_include_ = true;
    else if (!(d == "else" || d == "elif" || trimmed.empty() || trimmed.starts_with("//")))
      group_only_includes_ = false;
    if (depth_ == 0)
      close_group();
  }

  /// The outermost conditional closed: its includes go up under the same conditionals;
  /// whatever else it holds (`namespace cg = cooperative_groups;` beside its header) stays,
  /// under them too.
  void close_group() {
    if (!group_has_include_) {
      for (std::string_view l : group_)
        body_line(l);
      group_.clear();
      return;
    }
    std::string text;
    for (std::string_view l : group_) {
      std::string_view ld = directive_of(l);
      if (group_only_includes_ || ld == "include" || is_conditional(ld))
        text.append(l).append("\n");
      if (!group_only_includes_ && ld != "include")
        body_line(l);
    }
    text.pop_back();
    out_.includes.push_back(std::move(text));
    group_.clear();
  }

  /// Appends `line` to the body, noting the macro it defines.
  void body_line(std::string_view line) {
    out_.body.append(line);
    out_.body += '\n';
    std::string_view d = directive_of(line);
    if (d != "define")
      return;
    std::string_view rest = base::trim(base::trim(line).substr(1));
    rest = base::trim(rest.substr(d.size()));
    size_t length = 0;
    while (length < rest.size() &&
           (std::isalnum(static_cast<unsigned char>(rest[length])) != 0 || rest[length] == '_'))
      ++length;
    std::string name(rest.substr(0, length));
    if (!name.empty() && macros_.insert(name).second)
      out_.macros.push_back(name);
  }

  hoisted_source out_;
  std::vector<std::string_view> group_; // the outermost open conditional's lines
  int depth_ = 0;
  bool group_only_includes_ = true;
  bool group_has_include_ = false;
  bool in_comment_ = false;
  std::set<std::string> macros_;
};

} // namespace

hoisted_source hoist_includes(std::string_view source) {
  include_hoister hoister;
  size_t start = 0;
  while (start < source.size()) {
    size_t end = source.find('\n', start);
    hoister.line(
        source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    start = end == std::string_view::npos ? source.size() : end + 1;
  }
  return hoister.finish();
}

expected<std::string> compose_graph(const task& subject,
                                    const std::map<size_t, std::string>& replacements) {
  if (subject.graph == nullptr)
    return fail(errc::invalid_input, "task '" + subject.name + "' is no graph task");
  return composer(subject, *subject.graph).compose(replacements);
}

} // namespace ks::engine
