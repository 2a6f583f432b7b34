#pragma once

// Private to the op-family files (engine/op_family*.cpp): reading a family task's params one
// by one, each problem reported at the value (or at the params table when a required one is
// missing), the derived values set as they are computed, and the unknown params reported at
// the end with a suggestion. One family is one function over a family_reader.

#include "engine/op_family.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ks::engine::family_detail {

/// Which tensors a check is about.
enum class role { input, output };

/// Reads one family task; the family functions below fill its analysis.
class family_reader {
public:
  family_reader(const task& subject, const family_sources& sources, family_analysis& out)
    : subject_(subject), sources_(sources), out_(out) {}

  const task& subject() const noexcept { return subject_; }
  family_analysis& out() noexcept { return out_; }

  // -- params ----------------------------------------------------------------------------------

  /// Returns integer param `name`; `fallback` when absent (reported missing when there is none).
  std::optional<int64_t> integer(std::string_view name, std::optional<int64_t> fallback);

  /// Returns real param `name` (an integer is accepted); `fallback` when absent.
  std::optional<double> real(std::string_view name, std::optional<double> fallback);

  /// Returns boolean param `name`; `fallback` when absent.
  bool flag(std::string_view name, bool fallback);

  /// Returns string param `name`, which must be one of `choices`; `fallback` when absent.
  std::optional<std::string> choice(std::string_view name,
                                    std::span<const std::string_view> choices,
                                    std::optional<std::string_view> fallback);

  /// Returns string param `name` (any text); reported missing when absent.
  std::optional<std::string> text(std::string_view name);

  /// Returns param `name` as a list of integers: an integer is a list of one, an array must
  /// hold 1 to `most` integers. nullopt when absent (not reported) or wrong.
  std::optional<std::vector<int64_t>> integers(std::string_view name, size_t most);

  /// Checks whether the manifest gives param `name` (and marks it known).
  bool has(std::string_view name);

  /// Reports every param that no read above asked for, with a suggestion among those asked.
  void report_unknown_params();

  // -- problems --------------------------------------------------------------------------------

  /// Reports `message` at param `name`'s value (at the params table when it is absent).
  void at_param(std::string_view name, std::string message);

  /// Reports `message` at character `offset` of string param `name` (exact when the string is
  /// on one line and holds no escapes, as an expression does).
  void at_param_text(std::string_view name, size_t offset, std::string message);

  /// Reports `message` at the params table.
  void at_params(std::string message);

  /// Reports `problem`, a failure of elementwise_expression::parse of string param `name`
  /// ("OFFSET: what"), at that character of the param's text.
  void at_expression_error(std::string_view name, const engine::error& problem);

  /// Reports `message` at the shape of input or output `index`.
  void at_shape(role which, size_t index, std::string message);

  /// Reports `message` at the dtype of input or output `index`.
  void at_type(role which, size_t index, std::string message);

  /// Counts problems so far: a family stops deriving once its inputs are known to be wrong.
  size_t problems() const noexcept { return out_.problems.size(); }

  // -- tensors ---------------------------------------------------------------------------------

  /// Checks that the task has `inputs` inputs (one of them when given as a range [least,
  /// most]) and `outputs` outputs; reports and returns false otherwise.
  bool counts(size_t least_inputs, size_t most_inputs, size_t outputs, std::string_view why);

  /// Checks that every tensor of `which` from `first` on (up to `end`, exclusive) has dtype
  /// `type`.
  void require_type(role which, size_t first, dtype type,
                    size_t end = std::numeric_limits<size_t>::max());

  /// Checks that output `index` has `shape`, saying `why` (how the op makes that shape).
  bool require_shape(role which, size_t index, const std::vector<int64_t>& shape,
                     const std::string& why);

  /// Returns tensor `index` of `which`.
  const tensor_spec& tensor(role which, size_t index) const;

  // -- derived values --------------------------------------------------------------------------

  /// Sets derived value `name` (templates see task.NAME).
  void set(const std::string& name, param_value value) {
    out_.derived.scalars[name] = std::move(value);
  }

  /// Sets task.op_<choice> for every choice of op, true for `chosen` only: sections for templates.
  void set_op_flags(std::span<const std::string_view> choices, const std::string& chosen);

private:
  const param_value* find(std::string_view name);
  config::position param_position(std::string_view name) const;
  std::string kind_of(const param_value& value) const;

  const task& subject_;
  const family_sources& sources_;
  family_analysis& out_;
  std::vector<std::string> asked_;
};

/// Returns `shape` as "[a, b, c]".
std::string shape_text(const std::vector<int64_t>& shape);

/// Returns the product of `extents` (1 for none).
int64_t product(std::span<const int64_t> extents);

/// Returns `value` as Python writes a float literal, shortest first ("1e-5", "0.5", "2.0").
std::string python_float(double value);

/// Returns "True" or "False".
std::string python_bool(bool value);

/// Sets bytes to every input once and every output once, and flops to `flops`.
void set_cost(family_reader& r, double flops);

/// The [outer, axis, inner] view of a shape over its dims first..last (docs/tasks.md).
struct axis_view {
  int64_t outer = 1;
  int64_t axis = 1;
  int64_t inner = 1;
  int64_t first = 0;
  int64_t last = 0;
  int64_t rank = 0;
};

/// Returns the view of `shape` (the first input's) over `dims` (param `name`), or nullopt
/// after reporting a scalar, a dim out of range or dims that are not adjacent.
std::optional<axis_view> view_of(family_reader& r, std::string_view name,
                                 const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& shape);

/// Sets task.outer, axis, inner, axis_is_last and dim (the first acted-on dim) from `v`.
void set_view(family_reader& r, const axis_view& v);

/// Returns the ABI's name of `t` ("KS_F32").
const char* abi_name(dtype t);

/// Returns the C type of an element of `t` ("float", "uint8_t").
const char* c_type(dtype t);

/// Returns `shape`'s extents aligned with `rank` dims (1s in front).
std::vector<int64_t> aligned(const std::vector<int64_t>& shape, size_t rank);

/// Returns, in CUDA, the flat index in a tensor of shape `input` of element `i` of `output`
/// that it broadcasts to: "i" for the same shape, "0" for one element, else one term per dim
/// the input spans, (i / out_stride % extent) * in_stride, leaving out what is 1.
std::string offset_of(const std::vector<int64_t>& input, const std::vector<int64_t>& output);

/// What a reduce or a scan acts on (op_family_source.cpp).
struct acted_on {
  /// Its shape: the input's, or the shape params.map's inputs broadcast to.
  std::vector<int64_t> shape;
  std::string torch;     ///< its values in torch: the input's name, or "(the map)"
  double operations = 0; ///< the maps' flops per element, all told
  /// With several maps (params.map "a; b"), each one's values in torch; else empty.
  std::vector<std::string> torch_each;
};

/// Returns the expressions of params.map: one, or several separated by ';' (a reduce reads
/// them in one pass, one output each).
std::vector<std::string> split_maps(const std::string& map);

/// Reads a reduce's or scan's inputs: without `map`, one f32 input x; with it, inputs of f32 or
/// u8, i32, i64 (read as float) that broadcast together and the elementwise expression `map`
/// over them (or several, separated by ';', each a value per element: task.maps of them).
/// Sets task.mapped, task.maps and task.source (the CUDA struct ks_source every template of
/// the two families reads through). Returns nullopt after reporting a problem; call it after
/// counts() has held.
std::optional<acted_on> analyze_source(family_reader& r, const std::optional<std::string>& map);

/// What the params.epilogue of a matmul or conv adds: its operations over the output, and the
/// torch expression of the whole (the epilogue's, its `acc` the op's own expression).
struct epilogue_analysis {
  double operations = 0;
  std::string torch;
};

/// Reads the optional params.epilogue of a matmul or conv over the inputs after its `own` ones
/// (`own_text` names them: "A and B") (op_family_epilogue.cpp) and sets task.epilogue_source
/// and task.has_epilogue; without one, the inputs must be its own only. `triangular`: the
/// product keeps a triangle, which an epilogue cannot follow. Returns nullopt after reporting.
std::optional<epilogue_analysis> analyze_epilogue(family_reader& r,
                                                  const std::vector<int64_t>& c_shape, size_t own,
                                                  const std::string& own_text, bool triangular,
                                                  const std::string& product_torch);

// One function per family (op_family_axis.cpp, op_family_channel_norm.cpp, op_family_concat.cpp,
// op_family_conv.cpp, op_family_elementwise.cpp, op_family_gather.cpp, op_family_pool.cpp,
// op_family_products.cpp).
void analyze_softmax(family_reader& r);
void analyze_norm(family_reader& r);
void analyze_reduce(family_reader& r);
void analyze_scan(family_reader& r);
void analyze_elementwise(family_reader& r);
void analyze_pool(family_reader& r);
void analyze_matvec(family_reader& r);
void analyze_matmul(family_reader& r);
void analyze_channel_norm(family_reader& r);
void analyze_conv(family_reader& r);
void analyze_gather(family_reader& r);
void analyze_concat(family_reader& r);

} // namespace ks::engine::family_detail
