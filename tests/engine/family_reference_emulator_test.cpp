// The family references that use no CUB (channel_norm, reduce, norm, pool, conv, matmul,
// gather, elementwise) run on the CPU emulator of the skill tests
// (tests/skills/emulated_kernel.hpp) for small shapes, and must compute what a plain C++ loop
// here computes in double: every op of the new families and params (batch, instance and group
// norms with and without affine weights, reductions over several dims and to a scalar,
// logsumexp with infinite lines, l1 norms, 3-d pools, folded, scaled and triangular products,
// gathers, integer inputs of an elementwise expression, standard and transposed convolutions).
// The reductions run three ways: as rendered, with their lines split across blocks
// (KS_SPLIT_MIN_PART = 16, so that short lines split; 96 threads a block) and with a thread per
// line where it applies, so that each scheme's index math and its fixed-order combine are
// checked; the convolutions also on a grid of two blocks, so that their grid-stride loop wraps.
// No GPU: g++ compiles each reference against the emulator.

#include "engine/task_manifest.hpp"
#include "tests/skills/emulated_kernel.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace ks;
namespace fs = std::filesystem;

namespace {

using values = std::vector<std::vector<double>>;
constexpr double infinity = std::numeric_limits<double>::infinity();
using host_op = std::function<std::vector<double>(const engine::task&, const values&)>;

/// One reference to run: a manifest, the plain computation, and the variants to compile.
struct emulated_case {
  std::string label;
  std::string manifest;
  host_op expected;
  std::vector<std::string> variants{""}; ///< #defines put before the source, one run each
  std::function<void(values&)> adjust;   ///< changes the drawn inputs (infinities), if set
};

// -- reading a task's derived values --------------------------------------------------------

int64_t integer(const engine::task& t, const std::string& name) {
  return std::get<int64_t>(t.derived.scalars.at(name));
}
double real(const engine::task& t, const std::string& name) {
  const engine::param_value& v = t.derived.scalars.at(name);
  return std::holds_alternative<double>(v) ? std::get<double>(v)
                                           : static_cast<double>(std::get<int64_t>(v));
}
bool flag(const engine::task& t, const std::string& name) {
  return std::get<bool>(t.derived.scalars.at(name));
}
std::string text(const engine::task& t, const std::string& name) {
  return std::get<std::string>(t.derived.scalars.at(name));
}

// -- the plain computations ---------------------------------------------------------------------

std::vector<double> channel_norm(const engine::task& t, const values& in) {
  const int64_t n = integer(t, "batch"), c = integer(t, "channels"), s = integer(t, "spatial");
  const int64_t groups = integer(t, "groups"), per = integer(t, "channels_per_group");
  const bool across_batch = text(t, "op") == "batch";
  const double eps = real(t, "eps");
  std::vector<double> y(in[0].size());
  // The statistics group of element (b, ch, i); its elements are those of the same key.
  auto key = [&](int64_t b, int64_t ch) { return across_batch ? ch : b * groups + ch / per; };
  const int64_t keys = across_batch ? c : n * groups;
  std::vector<double> sum(static_cast<size_t>(keys)), squares(static_cast<size_t>(keys));
  std::vector<double> count(static_cast<size_t>(keys));
  auto at = [&](int64_t b, int64_t ch, int64_t i) {
    return static_cast<size_t>((b * c + ch) * s + i);
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < s; ++i) {
        sum[static_cast<size_t>(key(b, ch))] += in[0][at(b, ch, i)];
        count[static_cast<size_t>(key(b, ch))] += 1;
      }
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < s; ++i) {
        auto k = static_cast<size_t>(key(b, ch));
        double d = in[0][at(b, ch, i)] - sum[k] / count[k];
        squares[k] += d * d;
      }
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < s; ++i) {
        auto k = static_cast<size_t>(key(b, ch));
        double v =
            (in[0][at(b, ch, i)] - sum[k] / count[k]) / std::sqrt(squares[k] / count[k] + eps);
        if (flag(t, "affine"))
          v = v * in[1][static_cast<size_t>(ch)] + in[2][static_cast<size_t>(ch)];
        y[at(b, ch, i)] = v;
      }
  return y;
}

/// Returns the values of line (o, i) of the [outer, axis, inner] view of `x`.
std::vector<double> line_of(const engine::task& t, const std::vector<double>& x, int64_t o,
                            int64_t i) {
  const int64_t axis = integer(t, "axis"), inner = integer(t, "inner");
  std::vector<double> line;
  for (int64_t a = 0; a < axis; ++a)
    line.push_back(x[static_cast<size_t>((o * axis + a) * inner + i)]);
  return line;
}

double reduce_line(const std::string& op, const std::vector<double>& v) {
  double out = op == "prod" ? 1.0 : 0.0;
  if (op == "sum" || op == "mean" || op == "prod") {
    for (double e : v)
      out = op == "prod" ? out * e : out + e;
    return op == "mean" ? out / static_cast<double>(v.size()) : out;
  }
  if (op == "logsumexp") {
    double m = -infinity;
    for (double e : v)
      m = std::isnan(m) ? m : std::isnan(e) || e > m ? e : m;
    double shift = std::isinf(m) ? 0.0 : m; // torch's masking of an infinite maximum
    double sum = 0;
    for (double e : v)
      sum += std::exp(e - shift);
    return std::log(sum) + shift;
  }
  // max, min, argmax, argmin: the first extremum, a NaN winning.
  size_t best = 0;
  bool largest = op == "max" || op == "argmax";
  for (size_t a = 1; a < v.size(); ++a) {
    if (std::isnan(v[best]))
      break;
    if (std::isnan(v[a]) || (largest ? v[a] > v[best] : v[a] < v[best]))
      best = a;
  }
  return op == "argmax" || op == "argmin" ? static_cast<double>(best) : v[best];
}

std::vector<double> reduce(const engine::task& t, const values& in) {
  const int64_t outer = integer(t, "outer"), inner = integer(t, "inner");
  std::vector<double> y;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      y.push_back(reduce_line(text(t, "op"), line_of(t, in[0], o, i)));
  return y;
}

std::vector<double> norm(const engine::task& t, const values& in) {
  const int64_t outer = integer(t, "outer"), axis = integer(t, "axis"), inner = integer(t, "inner");
  const std::string op = text(t, "op");
  const double eps = real(t, "eps"), n = static_cast<double>(axis);
  std::vector<double> y(in[0].size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<double> v = line_of(t, in[0], o, i);
      double mean = 0, squares = 0, absolute = 0;
      for (double e : v)
        mean += e / n;
      for (double e : v) {
        squares += op == "layer" ? (e - mean) * (e - mean) : e * e;
        absolute += std::fabs(e);
      }
      for (int64_t a = 0; a < axis; ++a) {
        double e = v[static_cast<size_t>(a)], out = 0;
        if (op == "rms")
          out = e / std::sqrt(squares / n + eps);
        else if (op == "layer")
          out = (e - mean) / std::sqrt(squares / n + eps);
        else if (op == "l2")
          out = e / std::max(std::sqrt(squares), eps);
        else
          out = e / std::max(flag(t, "mean") ? absolute / n : absolute, eps);
        if (flag(t, "affine"))
          out *= in[1][static_cast<size_t>(a)];
        if (flag(t, "affine") && op == "layer")
          out += in[2][static_cast<size_t>(a)];
        y[static_cast<size_t>((o * axis + a) * inner + i)] = out;
      }
    }
  return y;
}

std::vector<double> pool(const engine::task& t, const values& in) {
  auto g = [&](const char* name) { return integer(t, name); };
  const int64_t planes = g("batch") * g("channels");
  const bool max = text(t, "op") == "max", include = flag(t, "count_include_pad");
  std::vector<double> y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t od = 0; od < g("out_d"); ++od)
      for (int64_t oh = 0; oh < g("out_h"); ++oh)
        for (int64_t ow = 0; ow < g("out_w"); ++ow) {
          double best = -infinity, sum = 0;
          int64_t inside = 0, padded = 1;
          const int64_t start[3] = {od * g("s_d") - g("p_d"), oh * g("s_h") - g("p_h"),
                                    ow * g("s_w") - g("p_w")};
          const int64_t in_size[3] = {g("in_d"), g("in_h"), g("in_w")};
          const int64_t pad[3] = {g("p_d"), g("p_h"), g("p_w")};
          const int64_t kernel[3] = {g("k_d"), g("k_h"), g("k_w")};
          for (int d = 0; d < 3; ++d) // avg's divisor: the window clipped to the padded input
            padded *= std::min(start[d] + kernel[d], in_size[d] + pad[d]) - start[d];
          for (int64_t kd = 0; kd < g("k_d"); ++kd)
            for (int64_t kh = 0; kh < g("k_h"); ++kh)
              for (int64_t kw = 0; kw < g("k_w"); ++kw) {
                const int64_t id = start[0] + kd * g("d_d"), ih = start[1] + kh * g("d_h"),
                              iw = start[2] + kw * g("d_w");
                if (id < 0 || id >= in_size[0] || ih < 0 || ih >= in_size[1] || iw < 0 ||
                    iw >= in_size[2])
                  continue;
                double v = in[0][static_cast<size_t>(
                    ((p * in_size[0] + id) * in_size[1] + ih) * in_size[2] + iw)];
                best = std::isnan(best) ? best : std::isnan(v) || v > best ? v : best;
                sum += v;
                ++inside;
              }
          y.push_back(max ? best : sum / static_cast<double>(include ? padded : inside));
        }
  return y;
}

std::vector<double> matmul(const engine::task& t, const values& in) {
  const int64_t m = integer(t, "m"), n = integer(t, "n"), k = integer(t, "k");
  const bool ta = flag(t, "transpose_a"), tb = flag(t, "transpose_b");
  const bool upper = flag(t, "triangle_upper"), lower = flag(t, "triangle_lower");
  std::vector<double> y;
  for (int64_t b = 0; b < integer(t, "batch"); ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < k; ++q)
          sum += in[0][static_cast<size_t>(b * integer(t, "batch_stride_a") +
                                           (ta ? q * m + i : i * k + q))] *
                 in[1][static_cast<size_t>(b * integer(t, "batch_stride_b") +
                                           (tb ? j * k + q : q * n + j))];
        y.push_back((upper && j < i) || (lower && j > i) ? 0.0 : real(t, "alpha") * sum);
      }
  return y;
}

/// The product with the epilogue "relu(acc + bias) - 0.5 * s" of a bias [n] and an s [.., m, 1].
std::vector<double> matmul_bias_relu(const engine::task& t, const values& in) {
  std::vector<double> y = matmul(t, in);
  const int64_t m = integer(t, "m"), n = integer(t, "n");
  for (size_t e = 0; e < y.size(); ++e) {
    const auto i = static_cast<int64_t>(e) / n % m, j = static_cast<int64_t>(e) % n;
    y[e] =
        std::max(y[e] + in[2][static_cast<size_t>(j)], 0.0) - 0.5 * in[3][static_cast<size_t>(i)];
  }
  return y;
}

std::vector<double> gather(const engine::task& t, const values& in) {
  const int64_t axis = integer(t, "axis"), inner = integer(t, "inner");
  const int64_t extent = integer(t, "index_extent");
  std::vector<double> y;
  for (size_t e = 0; e < in[1].size(); ++e) {
    const auto o = static_cast<int64_t>(e) / (extent * inner), i = static_cast<int64_t>(e) % inner;
    y.push_back(
        in[0][static_cast<size_t>((o * axis + static_cast<int64_t>(in[1][e])) * inner + i)]);
  }
  return y;
}

/// A concatenation: the inputs' lines one after another along the output's axis.
std::vector<double> concat(const engine::task& t, const values& in) {
  const int64_t outer = integer(t, "outer"), inner = integer(t, "inner");
  std::vector<double> y;
  for (int64_t o = 0; o < outer; ++o)
    for (const std::vector<double>& x : in) {
      const auto slab = static_cast<int64_t>(x.size()) / outer;
      y.insert(y.end(), x.begin() + o * slab, x.begin() + (o + 1) * slab);
    }
  (void)inner;
  return y;
}

/// The convolution with the epilogue "relu(acc) * scale + 0.5", scale [out_channels, 1, 1] the
/// last input (defined below).
std::vector<double> conv_relu_scale(const engine::task& t, const values& in);

/// A convolution as its definition says, independently of the reference's gather: a standard
/// one sums, for each output element, the products its window reads; a transposed one
/// scatters each product of an input element and a weight tap onto the output it lands on.
std::vector<double> conv(const engine::task& t, const values& in) {
  auto g = [&](const std::string& name) { return integer(t, name); };
  const bool transposed = flag(t, "transposed");
  const int64_t batch = g("batch"), c_in = g("in_channels"), c_out = g("out_channels");
  const int64_t in_per = g("in_per_group"), out_per = g("out_per_group");
  int64_t ins[3], outs[3], k[3], s[3], p[3], d[3];
  const char* axes[3] = {"d", "h", "w"};
  for (int i = 0; i < 3; ++i) {
    std::string a = axes[i];
    ins[i] = g("in_" + a), outs[i] = g("out_" + a), k[i] = g("k_" + a);
    s[i] = g("s_" + a), p[i] = g("p_" + a), d[i] = g("d_" + a);
  }
  const int64_t taps = k[0] * k[1] * k[2];
  auto x_at = [&](int64_t b, int64_t c, int64_t i0, int64_t i1, int64_t i2) {
    return in[0][static_cast<size_t>((((b * c_in + c) * ins[0] + i0) * ins[1] + i1) * ins[2] + i2)];
  };
  auto y_index = [&](int64_t b, int64_t c, int64_t o0, int64_t o1, int64_t o2) {
    return static_cast<size_t>((((b * c_out + c) * outs[0] + o0) * outs[1] + o1) * outs[2] + o2);
  };
  std::vector<double> y(static_cast<size_t>(batch * c_out * outs[0] * outs[1] * outs[2]), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t ci = 0; ci < c_in; ++ci)
      for (int64_t j = 0; j < out_per; ++j)
        for (int64_t k0 = 0; k0 < k[0]; ++k0)
          for (int64_t k1 = 0; k1 < k[1]; ++k1)
            for (int64_t k2 = 0; k2 < k[2]; ++k2) {
              const int64_t tap = (k0 * k[1] + k1) * k[2] + k2;
              const int64_t group = ci / in_per, co = group * out_per + j;
              // standard: w[co][ci % in_per][tap]; transposed: w[ci][j][tap].
              const double weight =
                  in[1][static_cast<size_t>(transposed ? (ci * out_per + j) * taps + tap
                                                       : (co * in_per + ci % in_per) * taps + tap)];
              if (!transposed) {
                for (int64_t o0 = 0; o0 < outs[0]; ++o0)
                  for (int64_t o1 = 0; o1 < outs[1]; ++o1)
                    for (int64_t o2 = 0; o2 < outs[2]; ++o2) {
                      const int64_t i0 = o0 * s[0] - p[0] + k0 * d[0];
                      const int64_t i1 = o1 * s[1] - p[1] + k1 * d[1];
                      const int64_t i2 = o2 * s[2] - p[2] + k2 * d[2];
                      if (i0 >= 0 && i0 < ins[0] && i1 >= 0 && i1 < ins[1] && i2 >= 0 &&
                          i2 < ins[2])
                        y[y_index(b, co, o0, o1, o2)] += x_at(b, ci, i0, i1, i2) * weight;
                    }
              } else {
                for (int64_t i0 = 0; i0 < ins[0]; ++i0)
                  for (int64_t i1 = 0; i1 < ins[1]; ++i1)
                    for (int64_t i2 = 0; i2 < ins[2]; ++i2) {
                      const int64_t o0 = i0 * s[0] - p[0] + k0 * d[0];
                      const int64_t o1 = i1 * s[1] - p[1] + k1 * d[1];
                      const int64_t o2 = i2 * s[2] - p[2] + k2 * d[2];
                      if (o0 >= 0 && o0 < outs[0] && o1 >= 0 && o1 < outs[1] && o2 >= 0 &&
                          o2 < outs[2])
                        y[y_index(b, co, o0, o1, o2)] += x_at(b, ci, i0, i1, i2) * weight;
                    }
              }
            }
  if (flag(t, "has_bias"))
    for (size_t e = 0; e < y.size(); ++e)
      y[e] +=
          in[2][e / static_cast<size_t>(outs[0] * outs[1] * outs[2]) % static_cast<size_t>(c_out)];
  return y;
}

std::vector<double> conv_relu_scale(const engine::task& t, const values& in) {
  values own(in.begin(), in.end() - 1);
  std::vector<double> y = conv(t, own);
  const int64_t channels = integer(t, "out_channels"), spatial = integer(t, "out_spatial");
  for (size_t e = 0; e < y.size(); ++e)
    y[e] = std::max(y[e], 0.0) *
               in.back()[static_cast<size_t>(static_cast<int64_t>(e) / spatial % channels)] +
           0.5;
  return y;
}

// -- the cases ----------------------------------------------------------------------------------

std::string tensor(const std::string& name, const std::string& shape,
                   const std::string& rest = "") {
  std::string dtype = rest.find("dtype") == std::string::npos ? "dtype = \"f32\", " : "";
  return "{ name = \"" + name + "\", " + dtype + "shape = " + shape +
         (rest.empty() ? "" : ", " + rest) + " }";
}

std::string
manifest(const std::string& family, const std::vector<std::string>& inputs,
         const std::string& output, const std::string& params,
         const std::string& tolerance = "{ atol = 1e-5, rtol = 1e-5, norm_rel = 1e-6 }") {
  std::string text = "name = \"t\"\nfamily = \"" + family + "\"\ninputs = [\n";
  for (const std::string& input : inputs)
    text += "  " + input + ",\n";
  return text + "]\noutputs = [ " + output + " ]\nparams = " + params +
         "\ntolerance = " + tolerance + "\n";
}

std::string one_to_one(const std::string& family, const std::string& x, const std::string& y,
                       const std::string& params, const std::string& y_rest = "") {
  return manifest(family, {tensor("x", x)}, tensor("y", y, y_rest), params);
}

// Short lines split; 96 threads make the block's tree meet odd counts.
const std::string split = "#define KS_SPLIT_MIN_PART 16\n#define KS_BLOCK_THREADS 96\n";
const std::string per_thread = "#define KS_THREAD_PER_LINE 1\n";

std::vector<emulated_case> cases() {
  std::vector<emulated_case> out;
  auto add = [&](std::string label, std::string text, host_op op,
                 std::vector<std::string> variants = {""}) {
    out.push_back({std::move(label), std::move(text), std::move(op), std::move(variants), {}});
  };
  // channel_norm: each op; affine; a group norm of several channels per group; splits.
  add("batch norm, affine, long channels",
      manifest("channel_norm",
               {tensor("x", "[4, 3, 3000]"), tensor("w", "[3]"), tensor("b", "[3]")},
               tensor("y", "[4, 3, 3000]"), "{ op = \"batch\", affine = true }"),
      channel_norm, {"", split});
  add("batch norm of a 4-d input",
      one_to_one("channel_norm", "[5, 6, 7, 3]", "[5, 6, 7, 3]", "{ op = \"batch\", eps = 1e-3 }"),
      channel_norm, {"", split});
  add("instance norm, affine",
      manifest("channel_norm", {tensor("x", "[2, 3, 50]"), tensor("w", "[3]"), tensor("b", "[3]")},
               tensor("y", "[2, 3, 50]"), "{ op = \"instance\", affine = true }"),
      channel_norm, {"", split});
  add("group norm, 2 channels per group",
      one_to_one("channel_norm", "[3, 4, 5, 7]", "[3, 4, 5, 7]", "{ op = \"group\", groups = 2 }"),
      channel_norm, {"", split});
  // reduce: to a scalar, several dims, logsumexp (infinite lines too), argmax split, prod.
  add("sum to a scalar", one_to_one("reduce", "[3, 5000]", "[]", "{ op = \"sum\", dims = [0, 1] }"),
      reduce);
  add("mean of long rows", one_to_one("reduce", "[4, 9000]", "[4]", "{ op = \"mean\", dim = 1 }"),
      reduce, {"", split});
  add("logsumexp over dims [1, 2], keepdim",
      one_to_one("reduce", "[3, 4, 5]", "[3, 1, 1]",
                 "{ op = \"logsumexp\", dims = [1, 2], keepdim = true }"),
      reduce, {"", split, per_thread});
  add("argmax of one long line",
      one_to_one("reduce", "[20000]", "[]", "{ op = \"argmax\", dim = 0 }", "dtype = \"i64\""),
      reduce, {"", split});
  add("argmin over a middle dim",
      one_to_one("reduce", "[3, 40, 6]", "[3, 6]", "{ op = \"argmin\", dim = 1 }",
                 "dtype = \"i64\""),
      reduce, {"", split, per_thread});
  add("prod over dims [0, 1], keepdim",
      manifest("reduce", {tensor("x", "[2, 3, 4]", "init = \"positive\"")},
               tensor("y", "[1, 1, 4]"), "{ op = \"prod\", dims = [0, 1], keepdim = true }"),
      reduce, {"", split});
  add("max over the last dims",
      one_to_one("reduce", "[2, 3, 70]", "[2]", "{ op = \"max\", dims = [-1, 1] }"), reduce,
      {"", split});
  out.push_back({"logsumexp of lines of -inf, +inf and NaN",
                 one_to_one("reduce", "[4, 40]", "[4]", "{ op = \"logsumexp\", dim = 1 }"),
                 reduce,
                 {"", split},
                 [](values& in) {
                   for (size_t a = 0; a < 40; ++a)
                     in[0][a] = -infinity;   // line 0: all -inf gives -inf
                   in[0][40 + 7] = infinity; // line 1: +inf
                   in[0][80 + 3] = std::numeric_limits<double>::quiet_NaN(); // line 2: NaN
                 }});
  // norm: l1 (sum and mean), the Frobenius norm (all dims, eps 0), a split layer norm with
  // affine weights of the normalized extents, a strided rms norm.
  add("l1 norm, mean",
      one_to_one("norm", "[5, 33]", "[5, 33]", "{ op = \"l1\", dim = 1, mean = true }"), norm,
      {"", split});
  add("l1 norm over dims [1, 2]",
      one_to_one("norm", "[2, 3, 40]", "[2, 3, 40]", "{ op = \"l1\", dims = [1, 2] }"), norm,
      {"", split});
  add("Frobenius norm",
      one_to_one("norm", "[3, 5000]", "[3, 5000]", "{ op = \"l2\", dims = [0, 1], eps = 0 }"),
      norm);
  add("layer norm over all dims, affine",
      manifest("norm", {tensor("x", "[3, 4000]"), tensor("w", "[3, 4000]"), tensor("b", "[12000]")},
               tensor("y", "[3, 4000]"), "{ op = \"layer\", dims = [0, 1], affine = true }"),
      norm, {"", split});
  add("rms norm over dim 0",
      one_to_one("norm", "[9000, 2]", "[9000, 2]", "{ op = \"rms\", dim = 0 }"), norm,
      {"", per_thread});
  // pool: 3-d max (dilation, ceil mode) and avg (padding not counted), and 2-d as before.
  add("max pool 3d",
      one_to_one("pool", "[1, 2, 5, 6, 9]", "[1, 2, 6, 4, 4]",
                 "{ op = \"max\", kernel_size = [2, 3, 2], stride = [1, 2, 2], "
                 "padding = [1, 1, 0], dilation = [1, 1, 2], ceil_mode = true }"),
      pool);
  add("avg pool 3d, padding not counted",
      one_to_one(
          "pool", "[2, 1, 4, 5, 6]", "[2, 1, 2, 3, 3]",
          "{ op = \"avg\", kernel_size = 3, stride = 2, padding = 1, count_include_pad = false }"),
      pool);
  add("avg pool 2d, padding counted",
      one_to_one("pool", "[1, 2, 9, 11]", "[1, 2, 5, 6]",
                 "{ op = \"avg\", kernel_size = 3, stride = 2, padding = 1 }"),
      pool);
  // matmul: folded leading dims with alpha; both triangles, one batched and transposed.
  add("folded 4-d A times B, alpha",
      manifest("matmul", {tensor("A", "[2, 3, 5, 7]"), tensor("B", "[7, 4]")},
               tensor("C", "[2, 3, 5, 4]"), "{ alpha = 0.5 }"),
      matmul);
  add("upper triangle",
      manifest("matmul", {tensor("A", "[6, 5]"), tensor("B", "[5, 6]")}, tensor("C", "[6, 6]"),
               "{ triangle = \"upper\" }"),
      matmul);
  add("lower triangle, batched, B transposed",
      manifest("matmul", {tensor("A", "[2, 7, 3]"), tensor("B", "[2, 5, 3]")},
               tensor("C", "[2, 7, 5]"),
               "{ triangle = \"lower\", transpose_b = true, alpha = -2 }"),
      matmul);
  // an epilogue: a bias over the columns and a term per row, batched, B transposed
  add("matmul with an epilogue, batched",
      manifest("matmul",
               {tensor("A", "[2, 5, 7]"), tensor("B", "[2, 4, 7]"), tensor("bias", "[4]"),
                tensor("s", "[5, 1]")},
               tensor("C", "[2, 5, 4]"),
               "{ transpose_b = true, epilogue = \"relu(acc + bias) - 0.5 * s\" }"),
      matmul_bias_relu);
  // gather: one element per row (cross-entropy's pick), several along dim 0.
  add("gather one per row",
      manifest(
          "gather",
          {tensor("x", "[4, 10]"),
           tensor("index", "[4, 1]", "dtype = \"i64\", init = \"randint\", low = 0, high = 10")},
          tensor("y", "[4, 1]"), "{ dim = 1 }"),
      gather);
  add("gather along dim 0",
      manifest(
          "gather",
          {tensor("x", "[5, 3, 2]"),
           tensor("index", "[7, 3, 2]", "dtype = \"i64\", init = \"randint\", low = 0, high = 5")},
          tensor("y", "[7, 3, 2]"), "{ dim = -3 }"),
      gather);
  // concat: three inputs of different extents along a middle dim, with the small grid so that
  // each input's loop wraps; one input along the last dim.
  add("concat of three along dim 1",
      manifest("concat",
               {tensor("a", "[3, 2, 5]"), tensor("b", "[3, 4, 5]"), tensor("c", "[3, 1, 5]")},
               tensor("y", "[3, 7, 5]"), "{ dim = 1 }"),
      concat, {"", "#define KS_MAX_BLOCKS 2\n#define KS_BLOCK_THREADS 32\n"});
  add("concat along the last dim",
      manifest("concat", {tensor("a", "[4, 3]"), tensor("b", "[4, 6]")}, tensor("y", "[4, 9]"),
               "{ dim = -1 }"),
      concat);
  // conv: standard with stride 2, padding 1, dilation 2 and 2 groups; transposed with output
  // padding (below the stride, or below the dilation only); 1-d and 3-d; odd sizes; one
  // channel; depthwise; pointwise. Each also with a grid of 2 blocks of 96 threads, so that
  // the grid-stride loop wraps.
  const std::vector<std::string> small_grid{
      "", "#define KS_MAX_BLOCKS 2\n#define KS_BLOCK_THREADS 96\n"};
  add("conv 2d with a bias and an epilogue",
      manifest("conv",
               {tensor("x", "[2, 4, 9, 10]"), tensor("w", "[6, 2, 3, 3]"), tensor("b", "[6]"),
                tensor("scale", "[6, 1, 1]")},
               tensor("y", "[2, 6, 4, 4]"),
               "{ stride = 2, padding = 1, dilation = 2, groups = 2, bias = true, "
               "epilogue = \"relu(acc) * scale + 0.5\" }"),
      conv_relu_scale, small_grid);
  add("conv 2d, stride 2, padding 1, dilation 2, 2 groups, bias",
      manifest(
          "conv", {tensor("x", "[2, 4, 9, 10]"), tensor("w", "[6, 2, 3, 3]"), tensor("b", "[6]")},
          tensor("y", "[2, 6, 4, 4]"), "{ stride = 2, padding = 1, dilation = 2, groups = 2 }"),
      conv, small_grid);
  add("conv transposed 2d, output padding per dim, 2 groups, bias",
      manifest("conv",
               {tensor("x", "[1, 4, 5, 3]"), tensor("w", "[4, 3, 3, 2]"), tensor("b", "[6]")},
               tensor("y", "[1, 6, 10, 10]"),
               "{ transposed = true, stride = [2, 3], padding = [1, 0], output_padding = [1, 2], "
               "groups = 2 }"),
      conv, small_grid);
  add("conv 1d depthwise, stride 3, odd length",
      manifest("conv", {tensor("x", "[3, 5, 23]"), tensor("w", "[5, 1, 4]")},
               tensor("y", "[3, 5, 8]"), "{ groups = 5, padding = 2, stride = 3 }"),
      conv, small_grid);
  add("conv transposed 1d, one channel, output padding below the dilation",
      manifest("conv", {tensor("x", "[2, 1, 7]"), tensor("w", "[1, 1, 3]")},
               tensor("y", "[2, 1, 19]"),
               "{ transposed = true, stride = 2, dilation = 3, output_padding = 2, padding = 1 }"),
      conv);
  add("conv 3d, one input channel, odd sizes, bias",
      manifest("conv",
               {tensor("x", "[1, 1, 5, 6, 7]"), tensor("w", "[2, 1, 3, 2, 3]"), tensor("b", "[2]")},
               tensor("y", "[1, 2, 3, 5, 4]"), "{ padding = [1, 0, 1], stride = [2, 1, 2] }"),
      conv, small_grid);
  add("conv transposed 3d, dilation, output padding, 2 groups, bias",
      manifest(
          "conv",
          {tensor("x", "[1, 2, 3, 4, 3]"), tensor("w", "[2, 2, 2, 3, 2]"), tensor("b", "[4]")},
          tensor("y", "[1, 4, 6, 8, 10]"),
          "{ transposed = true, stride = [1, 2, 3], padding = [0, 1, 0], dilation = [2, 1, 1], "
          "output_padding = [1, 1, 2], groups = 2 }"),
      conv);
  add("conv 2d pointwise",
      manifest("conv", {tensor("x", "[2, 3, 4, 5]"), tensor("w", "[4, 3, 1, 1]")},
               tensor("y", "[2, 4, 4, 5]"), "{}"),
      conv);
  // elementwise: a u8 mask, an i64 input broadcast.
  add("elementwise with a u8 mask and an i64 row",
      manifest("elementwise",
               {tensor("x", "[4, 6]"),
                tensor("mask", "[4, 6]", "dtype = \"u8\", init = \"randint\", low = 0, high = 2"),
                tensor("i", "[6]", "dtype = \"i64\", init = \"randint\", low = -3, high = 4")},
               tensor("y", "[4, 6]"), "{ op = \"where(mask, x, 0.0) + x * mask + i\" }"),
      [](const engine::task&, const values& in) {
        std::vector<double> y;
        for (size_t e = 0; e < in[0].size(); ++e) {
          double x = in[0][e], m = in[1][e], i = in[2][e % 6];
          y.push_back((m != 0 ? x : 0.0) + x * m + i);
        }
        return y;
      });
  return out;
}

values draw_inputs(const engine::task& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  values in;
  for (const engine::tensor_spec& spec : t.inputs) {
    std::vector<double> v(static_cast<size_t>(spec.numel()));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> positive(0.5f, 1.5f);
    std::uniform_int_distribution<int64_t> integers(spec.low, spec.high - 1);
    for (double& e : v)
      e = spec.init == engine::init_kind::randint    ? static_cast<double>(integers(rng))
          : spec.init == engine::init_kind::positive ? positive(rng)
                                                     : normal(rng);
    in.push_back(std::move(v));
  }
  return in;
}

} // namespace

TEST_CASE("the family references without CUB compute on the CPU emulator what a plain loop "
          "computes, with lines split across blocks and a thread per line too",
          "[families][emulation]") {
  test::test_context context;
  struct run {
    const emulated_case* c;
    engine::task subject;
    std::string source;
    std::string variant;
  };
  std::vector<emulated_case> all = cases();
  std::vector<run> runs;
  for (const emulated_case& c : all) {
    auto loaded = engine::load_task_manifest(context.write("t.toml", c.manifest));
    INFO(c.label << "\n" << c.manifest << (loaded ? "" : loaded.error().message()));
    REQUIRE(loaded.has_value());
    for (const std::string& variant : c.variants)
      runs.push_back({&c, *loaded, variant + loaded->reference_source, variant});
  }
  // Every source compiled first, one host compiler per core, cached by content.
  std::vector<std::string> sources;
  for (const run& r : runs)
    sources.push_back(r.source);
  std::vector<test::host_build> builds = test::emulated_all(sources);
  for (size_t i = 0; i < runs.size(); ++i) {
    const run& r = runs[i];
    INFO(r.c->label << (r.variant.empty() ? "" : " with " + r.variant));
    INFO(builds[i].log);
    const fs::path& so = builds[i].shared_object;
    REQUIRE_FALSE(so.empty());
    for (int shift : {0, 1}) {
      values in = draw_inputs(r.subject, 7 + static_cast<uint64_t>(shift));
      if (r.c->adjust)
        r.c->adjust(in);
      // Twice in a row: a workspace kept between calls must not carry the first call over.
      test::emulated_run got = test::run_emulated(so, r.subject, in, shift, 2, 3);
      INFO("tensors shifted by " << shift << " element(s)");
      REQUIRE(got.error == "");
      CHECK(test::mismatch(r.subject, got.output, r.c->expected(r.subject, in)) == "");
    }
  }
}
