// The skeletons of `task new`, one function per family in one table. A family's skeleton is
// data about the family (which tensors --shape makes, which params it sets, what each means),
// so it is written here beside the others rather than in the family's analysis, which stays
// the one judge of a manifest: the test loads every skeleton through the manifest loader.
//
// Comments in a skeleton follow docs/tasks.md; a param with a default is written commented
// out at that default, so that the manifest states only what the author chose.

#include "engine/task_skeleton.hpp"

#include "config/spelling.hpp"
#include "engine/elementwise_expression.hpp"
#include "engine/op_family.hpp"
#include "engine/task_skeleton_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>

namespace ks::engine {

namespace skeleton_detail {

std::string list_text(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(values[i]);
  return text + "]";
}

std::string toml_real(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%.10g", x);
  std::string plain = text;
  if (plain.find_first_of(".e") == std::string::npos)
    plain += ".0";
  // The fewest mantissa digits that read back as x, with the exponent's zeros dropped.
  std::string scientific;
  for (int digits = 0; digits < 10 && scientific.empty(); ++digits) {
    std::snprintf(text, sizeof text, "%.*e", digits, x);
    if (std::strtod(text, nullptr) == x)
      scientific = text;
  }
  if (size_t e = scientific.find('e'); e != std::string::npos) {
    std::string exponent = scientific.substr(e + 1);
    bool negative = exponent.front() == '-';
    exponent.erase(0, exponent.find_first_not_of("+-0"));
    scientific =
        scientific.substr(0, e) + "e" + (negative ? "-" : "") + (exponent.empty() ? "0" : exponent);
  }
  return !scientific.empty() && scientific.size() < plain.size() ? scientific : plain;
}

std::string comment(const std::string& text, const std::string& lead) {
  std::istringstream words(text);
  std::string word;
  std::string line;
  std::string out;
  while (words >> word) {
    if (!line.empty() && lead.size() + line.size() + 1 + word.size() > 96) {
      out += lead + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty())
    out += lead + line + "\n";
  return out;
}

} // namespace skeleton_detail

namespace {

using namespace skeleton_detail;

// Returns x rounded up to one significant digit (3.2e-4 -> 4e-4): a tolerance to start from.
double round_up(double x) {
  double scale = std::pow(10.0, std::floor(std::log10(x)));
  return std::ceil(x / scale - 1e-9) * scale;
}

// -- the manifest of a family task -----------------------------------------------------------

struct tensor_line {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype = "f32";
  std::string init = "normal"; ///< inputs only; empty for an output
  std::string extra;           ///< more keys: `low = 0, high = 10`
};

struct param_line {
  std::string key;
  std::string value;
  std::string meaning;
  bool optional = false; ///< written commented out, at its default
};

tensor_line tensor(std::string name, std::vector<int64_t> shape) {
  tensor_line t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  return t;
}

struct family_manifest {
  std::string section; ///< docs/tasks.md's section
  std::string what;    ///< "softmax along the last dim of x [1024, 1024]"
  std::vector<tensor_line> inputs;
  std::vector<tensor_line> outputs;
  std::string outputs_note;
  double atol = 1e-5;
  double rtol = 1e-5;
  double norm_rel = 1e-5;
  std::string tolerance_note;
  std::string tunables;
  std::vector<param_line> params;
};

std::string tensor_text(const tensor_line& t, bool input) {
  std::string text =
      "  { name = \"" + t.name + "\", dtype = \"" + t.dtype + "\", shape = " + list_text(t.shape);
  if (input)
    text += ", init = \"" + t.init + "\"";
  if (!t.extra.empty())
    text += ", " + t.extra;
  return text + " },\n";
}

std::string render(std::string_view name, std::string_view family, const family_manifest& m) {
  std::string n(name);
  std::string f(family);
  std::string intro = n + ": a " + f + " task, written by `kernelskill task new " + n +
                      " --family " + f + "`. A family manifest: its reference kernel, its cost " +
                      "(flops, bytes) and its torch expression are derived from the family and " +
                      "the params at the end (docs/tasks.md, \"" + m.section + "\"), and the " +
                      "skills write their candidates from the same params. To make it your op, " +
                      "set the params and the tensors' shapes, then:";
  std::string apart = "Give it no `reference`: a hand-written one would judge the skills' "
                      "candidates against another op than the params state. For an op no "
                      "family states: kernelskill task new " +
                      n + " --family custom.";
  std::string out = comment(intro);
  out += "#   kernelskill task check " + n + ".toml   (no GPU needed; compiles the reference)\n";
  out += "#   kernelskill task show " + n + ".toml    (the derived cost and torch expression)\n";
  out += comment(apart);
  out += "name = \"" + n + "\"\n";
  out += "family = \"" + f + "\"\n";
  out += "about = \"" + m.what + ", fp32\"\n";
  out += comment("inputs, in the order ks_forward receives them; init is how verification draws "
                 "them: normal, uniform, uniform01, positive (away from 0: logs, divisors), "
                 "randint (with low and high)");
  out += "inputs = [\n";
  for (const tensor_line& t : m.inputs)
    out += tensor_text(t, true);
  out += "]\n";
  if (!m.outputs_note.empty())
    out += comment(m.outputs_note);
  out += "outputs = [\n";
  for (const tensor_line& t : m.outputs)
    out += tensor_text(t, false);
  out += "]\n";
  out += comment("tolerance: an element passes when |out - ref| <= atol + rtol * |ref|, the "
                 "output when ||out - ref|| / ||ref|| <= norm_rel. Loosen atol or rtol where the "
                 "op loses precision by nature; never norm_rel past about 1e-5, which would let "
                 "TF32 or fp16 shortcuts pass (tasks/README.md, \"Tolerance\")." +
                 (m.tolerance_note.empty() ? "" : " " + m.tolerance_note));
  out += "tolerance = { atol = " + toml_real(m.atol) + ", rtol = " + toml_real(m.rtol) +
         ", norm_rel = " + toml_real(m.norm_rel) + " }\n";
  out += comment("tunables: launch parameters of the rendered reference that the offline "
                 "planner varies (docs/tasks.md, \"The reference templates\")");
  out += "tunables = { " + m.tunables + " }\n";
  out += "\n" + comment("params of family " + f + " (docs/tasks.md, \"" + m.section +
                        "\"); a commented line is an optional param at its default");
  out += "[params]\n";
  for (const param_line& p : m.params) {
    out += comment(p.key + ": " + p.meaning);
    out += (p.optional ? "# " : "") + p.key + " = " + p.value + "\n";
  }
  return out;
}

std::vector<int64_t> without_last(const std::vector<int64_t>& shape) {
  return {shape.begin(), shape.end() - 1};
}

param_line last_dim(const std::string& what) {
  return {"dim", "-1", "the dim " + what + "; negative counts from the end (-1: the last)"};
}

// Returns the manifest of a family that acts along the last dim of x and keeps its shape in y.
family_manifest along_last_dim(const std::vector<int64_t>& shape, const std::string& op) {
  family_manifest m;
  m.section = "Ops over one dimension";
  m.what = op + " along the last dim of x " + list_text(shape);
  m.inputs = {tensor("x", shape)};
  m.outputs = {tensor("y", shape)};
  m.outputs_note = "y: x's shape";
  m.tunables = threads;
  return m;
}

// -- one function per family -----------------------------------------------------------------

/// What one family's skeleton is made from.
struct request {
  std::string name;
  std::vector<int64_t> shape;
};

using family_writer = std::function<expected<family_manifest>(const request&)>;

// Returns the op for task `name`: NAME(x) when NAME is an elementwise function of one
// argument (task new gelu), else relu(x); and the init its input needs.
std::pair<std::string, std::string> elementwise_op(const std::string& name) {
  std::vector<std::string_view> functions = elementwise_functions();
  if (std::find(functions.begin(), functions.end(), name) != functions.end()) {
    std::string op = name + "(x)";
    if (elementwise_expression::parse(op, {"x"})) {
      bool positive = name == "log" || name == "log1p" || name == "sqrt" || name == "rsqrt";
      return {op, positive ? "positive" : "normal"};
    }
  }
  return {"relu(x)", "normal"};
}

expected<family_manifest> elementwise(const request& r) {
  auto [op, init] = elementwise_op(r.name);
  family_manifest m;
  m.section = "Elementwise";
  m.what = op + " over x " + list_text(r.shape);
  m.inputs = {tensor("x", r.shape)};
  m.inputs.front().init = init;
  m.outputs = {tensor("y", r.shape)};
  m.outputs_note = "y: the shape the inputs broadcast to (numpy's rules)";
  m.tunables = threads_and_blocks;
  std::string functions = config::joined(elementwise_functions());
  m.params = {{"op", "\"" + op + "\"",
               "the op, an expression over the inputs' names on one line: \"gelu(x)\", "
               "\"x * sigmoid(x)\", \"a + b * c\" (add an input for each name); operators "
               "+ - * / ** < > <= >= == != and the functions " +
                   functions}};
  return m;
}

expected<family_manifest> softmax(const request& r) {
  family_manifest m = along_last_dim(r.shape, "softmax");
  m.atol = 1e-8;
  m.rtol = 1e-4;
  m.tolerance_note = "A softmax's outputs are about 1 / (the dim's extent): atol stays far "
                     "below that.";
  m.params = {{"op", "\"softmax\"",
               "\"softmax\" (exp(x - max) / sum) or \"log_softmax\" (x - max - log(sum))"},
              last_dim("it normalizes over")};
  return m;
}

expected<family_manifest> norm(const request& r) {
  family_manifest m = along_last_dim(r.shape, "RMS norm");
  m.params = {
      {"op", "\"rms\"",
       "\"rms\" (x / sqrt(mean(x^2) + eps)), \"layer\" ((x - mean) / sqrt(var + eps)) or \"l2\" "
       "(x / max(norm2(x), eps))"},
      last_dim("it normalizes over (or dims = [1, 2], adjacent dims normalized together)"),
      {"eps", "1e-5",
       "added under the root (rms, layer; l2 divides by at least eps, default "
       "1e-12), >= 0",
       true},
      {"affine", "false",
       "true adds inputs weight (and for layer bias) of shape [extent of dim] after x, "
       "multiplying (adding) per element of the dim; not for l2",
       true}};
  return m;
}

expected<family_manifest> reduce(const request& r) {
  auto axis = static_cast<double>(r.shape.back());
  family_manifest m = along_last_dim(r.shape, "sum");
  m.outputs = {tensor("y", without_last(r.shape))};
  m.outputs_note = "y: x's shape without dim (keepdim: with 1 there); i64 for argmax and argmin";
  m.atol = round_up(1e-5 * std::sqrt(axis));
  m.tolerance_note = "atol covers sums near 0: about 1e-5 x sqrt(terms) here.";
  m.params = {{"op", "\"sum\"",
               "one of \"sum\", \"mean\", \"max\", \"min\", \"prod\", "
               "\"argmax\", \"argmin\" (the index of the first extremum)"},
              last_dim("it reduces"),
              {"keepdim", "false", "true keeps dim in y, with extent 1", true}};
  return m;
}

expected<family_manifest> scan(const request& r) {
  auto axis = static_cast<double>(r.shape.back());
  family_manifest m = along_last_dim(r.shape, "cumulative sum");
  m.atol = round_up(3e-5 * std::sqrt(axis));
  m.tolerance_note = "atol covers prefix sums near 0: about 3e-5 x sqrt(the dim's extent) here.";
  m.params = {{"op", "\"cumsum\"", "\"cumsum\" or \"cumprod\""},
              last_dim("it scans along"),
              {"reverse", "false", "true scans from the end", true},
              {"exclusive", "false",
               "true leaves each element out of its own prefix (the first is 0, or 1 for "
               "cumprod)",
               true}};
  return m;
}

expected<family_manifest> pool(const request& r) {
  bool two_d = r.shape.size() == 4;
  int64_t k =
      two_d ? std::min<int64_t>({2, r.shape[2], r.shape[3]}) : std::min<int64_t>(2, r.shape[2]);
  std::vector<int64_t> out{r.shape[0], r.shape[1]};
  for (size_t d = 2; d < r.shape.size(); ++d)
    out.push_back((r.shape[d] - k) / k + 1); // torch's size with stride = kernel, no padding
  family_manifest m;
  m.section = "Pooling";
  m.what = std::string(two_d ? "2-d" : "1-d") + " max pooling, window " + std::to_string(k) +
           ", of x " + list_text(r.shape);
  m.inputs = {tensor("x", r.shape)};
  m.outputs = {tensor("y", out)};
  m.outputs_note = std::string("y: [N, C, ") + (two_d ? "out_h, " : "") +
                   "out_w], torch's size per pooled dim: floor((in + 2 * padding - dilation * "
                   "(kernel_size - 1) - 1) / stride + 1) (ceil with ceil_mode)";
  m.tunables = threads_and_blocks;
  std::string pair = two_d ? ", or [h, w]" : "";
  m.params = {{"op", "\"max\"", "\"max\" (a NaN wins; the padding is skipped) or \"avg\""},
              {"kernel_size", std::to_string(k), "the window: an integer" + pair},
              {"stride", std::to_string(k),
               "the step between windows" + pair + " (default: kernel_size)", true},
              {"padding", "0", "added on both sides" + pair + "; at most half the kernel", true},
              {"dilation", "1", "the spacing of the window's elements" + pair + "; max only", true},
              {"ceil_mode", "false", "true rounds the output size up, as torch", true},
              {"count_include_pad", "true",
               "avg only: divide by the padded window (false: by what it summed)", true},
              {"dims", std::to_string(r.shape.size() - 2),
               "pooled dims, 1 or 2 (default: the rank of x - 2)", true}};
  return m;
}

expected<family_manifest> conv(const request& r) {
  size_t dims = r.shape.size() - 2;
  int64_t channels = r.shape[1];
  // A kernel of 3 with padding 1 keeps the spatial extents; one of 1 where an extent is shorter.
  bool small = std::any_of(r.shape.begin() + 2, r.shape.end(), [](int64_t e) { return e < 3; });
  int64_t k = small ? 1 : 3;
  std::vector<int64_t> weight{channels, channels};
  for (size_t d = 0; d < dims; ++d)
    weight.push_back(k);
  auto reduction = static_cast<double>(channels) * std::pow(static_cast<double>(k), dims);
  family_manifest m;
  m.section = "Convolution";
  m.what = std::to_string(dims) + "-d convolution, kernel " + std::to_string(k) +
           (small ? "" : ", padding 1") + ", of x " + list_text(r.shape) + " with a bias";
  m.inputs = {tensor("x", r.shape), tensor("weight", weight), tensor("bias", {channels})};
  m.outputs = {tensor("y", r.shape)};
  m.outputs_note = "weight: torch's layout, [out_channels, in_channels / groups, kernel...] "
                   "([in_channels, out_channels / groups, kernel...] transposed); bias (optional, "
                   "leave it out for none): [out_channels]. y: [N, out_channels, out...], torch's "
                   "size per dim: floor((in + 2 * padding - dilation * (kernel - 1) - 1) / stride "
                   "+ 1); transposed (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + "
                   "output_padding + 1";
  m.atol = round_up(1.5e-5 * std::sqrt(reduction));
  m.rtol = 1e-4;
  m.tolerance_note = "atol covers sums near 0: about 1.5e-5 x sqrt(in_channels / groups x "
                     "kernel volume) here.";
  m.tunables = threads_and_blocks;
  std::string each = dims == 1 ? "" : ", or one per dim";
  m.params = {{"padding", small ? "0" : "1", "zeros added on both sides" + each, small},
              {"stride", "1", "the step between windows" + each, true},
              {"dilation", "1", "the spacing of the kernel's taps" + each, true},
              {"groups", "1",
               "divides in_channels and out_channels; groups = in_channels is a depthwise conv",
               true},
              {"transposed", "false",
               "true: the transposed conv (torch's conv_transpose), the gradient of a standard "
               "one",
               true},
              {"output_padding", "0",
               "transposed only: added to one side of the output" + each +
                   "; smaller than the stride or the dilation",
               true}};
  return m;
}

expected<family_manifest> matvec(const request& r) {
  int64_t rows = r.shape[0];
  int64_t k = r.shape[1];
  family_manifest m;
  m.section = "Matrix-vector and matrix products";
  m.what = "y = A @ x, A [" + std::to_string(rows) + ", " + std::to_string(k) + "]";
  m.inputs = {tensor("A", {rows, k}), tensor("x", {k})};
  m.outputs = {tensor("y", {rows})};
  m.outputs_note = "y: [m] (or [m, 1] when x is [k, 1])";
  m.atol = round_up(1e-4 * std::sqrt(static_cast<double>(k)));
  m.rtol = 1e-4;
  m.tolerance_note = "atol covers dot products near 0: about 1e-4 x sqrt(k) here.";
  m.tunables = threads;
  m.params = {{"m", std::to_string(rows),
               "rows of A and of y: read from the shapes, checked when given", true},
              {"k", std::to_string(k), "columns of A, the length of x: read from the shapes", true},
              {"transpose_a", "false", "true: A is stored [k, m]", true}};
  return m;
}

expected<family_manifest> matmul(const request& r) {
  bool batched = r.shape.size() == 4;
  size_t at = batched ? 1 : 0;
  int64_t rows = r.shape[at];
  int64_t k = r.shape[at + 1];
  int64_t n = r.shape[at + 2];
  std::vector<int64_t> lead = batched ? std::vector<int64_t>{r.shape[0]} : std::vector<int64_t>{};
  auto shape = [&](int64_t a, int64_t b) {
    std::vector<int64_t> s = lead;
    s.push_back(a);
    s.push_back(b);
    return s;
  };
  family_manifest m;
  m.section = "Matrix-vector and matrix products";
  m.what = std::string(batched ? "batched " : "") + "C = A @ B, A " + list_text(shape(rows, k)) +
           ", B " + list_text(shape(k, n));
  m.inputs = {tensor("A", shape(rows, k)), tensor("B", shape(k, n))};
  m.outputs = {tensor("C", shape(rows, n))};
  m.outputs_note = "C: [(batch,) m, n]; a rank-2 operand beside a rank-3 one is shared by every "
                   "batch";
  m.atol = round_up(1.5e-5 * std::sqrt(static_cast<double>(k)));
  m.rtol = 1e-4;
  m.tolerance_note = "atol covers dot products near 0: about 1.5e-5 x sqrt(k) here.";
  m.tunables = "KS_TILE_X = [16, 32, 64], KS_TILE_Y = [1, 2, 4, 8, 16]";
  m.params = {{"m", std::to_string(rows),
               "rows of A and C: read from the shapes, checked when given", true},
              {"n", std::to_string(n), "columns of B and C: read from the shapes", true},
              {"k", std::to_string(k), "columns of A, rows of B: read from the shapes", true},
              {"transpose_a", "false", "true: A is stored [(batch,) k, m]", true},
              {"transpose_b", "false", "true: B is stored [(batch,) n, k]", true}};
  if (batched)
    m.params.insert(m.params.begin() + 3,
                    {"batch", std::to_string(r.shape[0]), "read from the shapes", true});
  return m;
}

expected<family_manifest> channel_norm(const request& r) {
  int64_t per_channel = r.shape[0];
  for (size_t d = 2; d < r.shape.size(); ++d)
    per_channel *= r.shape[d];
  if (per_channel < 2)
    return fail(errc::invalid_input, "--shape " + list_text(r.shape) +
                                         ": a batch norm needs more than one value per "
                                         "channel (N x the spatial extents > 1)");
  family_manifest m = along_last_dim(r.shape, "");
  m.section = "Per-channel normalization";
  m.what = "batch norm (batch statistics) of x " + list_text(r.shape);
  m.params = {{"op", "\"batch\"",
               "\"batch\" (per channel over batch and space), \"instance\" (per sample and "
               "channel over space) or \"group\" (per sample and group of channels)"},
              {"groups", "1", "group only, and required there: divides the channels", true},
              {"eps", "1e-5", "added to the variance, >= 0", true},
              {"affine", "false",
               "true adds inputs weight [C] and bias [C] after x: y * weight[c] + bias[c]", true}};
  return m;
}

expected<family_manifest> gather(const request& r) {
  std::vector<int64_t> index = r.shape;
  index.back() = 1;
  family_manifest m;
  m.section = "Gather";
  m.what = "torch.gather along the last dim of x " + list_text(r.shape) + ", one index per line";
  tensor_line drawn = tensor("index", index);
  drawn.dtype = "i64";
  drawn.init = "randint";
  drawn.extra = "low = 0, high = " + std::to_string(r.shape.back());
  m.inputs = {tensor("x", r.shape), drawn};
  m.outputs = {tensor("y", index)};
  m.outputs_note = "index: x's extents but along dim, where any extent goes, drawn in range "
                   "(randint, low >= 0, high <= x's extent along dim); y: the index's shape";
  m.tunables = threads_and_blocks;
  m.params = {last_dim("it gathers along")};
  return m;
}

expected<family_manifest> concat(const request& r) {
  std::vector<int64_t> both = r.shape;
  both.back() *= 2;
  family_manifest m;
  m.section = "Concatenation";
  m.what = "torch.cat of a and b " + list_text(r.shape) + " along the last dim";
  m.inputs = {tensor("a", r.shape), tensor("b", r.shape)};
  m.outputs = {tensor("y", both)};
  m.outputs_note = "inputs: the output's extents but along dim; y: their extents there added";
  m.tunables = threads_and_blocks;
  m.params = {last_dim("they are laid along")};
  return m;
}

// -- the table -------------------------------------------------------------------------------

struct skeleton_entry {
  std::string_view family;
  std::string_view meaning; ///< what --shape means
  std::vector<int64_t> fallback;
  size_t min_rank;
  size_t max_rank;
  family_writer write; ///< empty for custom
};

const std::vector<skeleton_entry>& skeletons() {
  static const std::vector<skeleton_entry> table{
      {"channel_norm", "x [N, C, spatial...]", {16, 64, 32, 32}, 2, 8, channel_norm},
      {"concat", "a and b, laid along their last dim", {1024, 1024}, 1, 8, concat},
      {"conv",
       "x [N, C, H, W] (or [N, C, W], [N, C, D, H, W]): a C to C conv",
       {16, 64, 56, 56},
       3,
       5,
       conv},
      {"elementwise", "x and y", {1024, 1024}, 1, 8, elementwise},
      {"gather", "x, gathered along its last dim", {1024, 1024}, 1, 8, gather},
      {"matmul",
       "m,k,n for A [m, k] @ B [k, n], or b,m,k,n batched",
       {1024, 1024, 1024},
       3,
       4,
       matmul},
      {"matvec", "m,k for A [m, k] @ x [k]", {4096, 4096}, 2, 2, matvec},
      {"norm", "x, the op along its last dim", {1024, 1024}, 1, 8, norm},
      {"pool", "x [N, C, H, W], or [N, C, W] for 1-d", {16, 64, 128, 128}, 3, 4, pool},
      {"reduce", "x, the op along its last dim", {1024, 1024}, 1, 8, reduce},
      {"scan", "x, the op along its last dim", {1024, 1024}, 1, 8, scan},
      {"softmax", "x, the op along its last dim", {1024, 1024}, 1, 8, softmax},
      {custom_family, "x and y", {1024, 1024}, 1, 8, {}},
  };
  return table;
}

const skeleton_entry* entry_of(std::string_view family) {
  for (const skeleton_entry& e : skeletons())
    if (e.family == family)
      return &e;
  return nullptr;
}

} // namespace

std::vector<std::string> skeleton_families() {
  std::vector<std::string> out;
  for (std::string_view f : family_names())
    out.emplace_back(f);
  out.emplace_back(custom_family);
  return out;
}

std::optional<skeleton_shape> skeleton_shape_of(std::string_view family) {
  const skeleton_entry* e = entry_of(family);
  if (e == nullptr || (family != custom_family && !is_family(family)))
    return std::nullopt;
  return skeleton_shape{std::string(e->meaning), e->fallback};
}

expected<task_skeleton> make_task_skeleton(std::string_view name, std::string_view family,
                                           const std::vector<int64_t>& shape) {
  if (family != custom_family && !is_family(family)) {
    std::vector<std::string> names = skeleton_families();
    std::vector<std::string_view> known(names.begin(), names.end());
    std::string message = "unknown family '" + std::string(family) + "'";
    if (auto guess = config::closest(family, known))
      message += " (did you mean '" + std::string(*guess) + "'?)";
    return fail(errc::invalid_input,
                message + "; the families are " + config::joined(known) +
                    " (custom: an op no family states, with a hand-written reference)");
  }
  const skeleton_entry* e = entry_of(family);
  if (e == nullptr)
    return fail(errc::invalid_input,
                "family " + std::string(family) +
                    " has no skeleton yet (engine/task_skeleton.cpp): write its manifest from "
                    "docs/tasks.md, or start from one of tasks/families/");
  const std::vector<int64_t>& dims = shape.empty() ? e->fallback : shape;
  if (dims.size() < e->min_rank || dims.size() > e->max_rank) {
    std::string ranks = e->min_rank == e->max_rank
                            ? std::to_string(e->min_rank)
                            : std::to_string(e->min_rank) + " to " + std::to_string(e->max_rank);
    return fail(errc::invalid_input, "--shape " + list_text(dims) + " has " +
                                         std::to_string(dims.size()) + " values; family " +
                                         std::string(family) + " takes " + ranks +
                                         " values: " + std::string(e->meaning));
  }
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 1; }))
    return fail(errc::invalid_input, "--shape " + list_text(dims) + ": every extent must be >= 1");
  std::string task_name(name);
  if (family == custom_family)
    return skeleton_detail::custom_skeleton(task_name, dims);
  auto manifest = e->write(request{task_name, dims});
  if (!manifest)
    return tl::unexpected(manifest.error());
  task_skeleton out;
  out.files.push_back({task_name + ".toml", render(name, family, *manifest)});
  out.what = manifest->what;
  return out;
}

} // namespace ks::engine
