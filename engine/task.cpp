#include "engine/task.hpp"

#include "engine/graph_spec.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>
#include <utility>

namespace ks::engine {

namespace {

/// Every manifest spelling of a dtype; the first one of each type is its canonical name.
constexpr std::array<std::pair<std::string_view, dtype>, 18> dtype_spellings{{
    {"f32", dtype::f32},
    {"float32", dtype::f32},
    {"float", dtype::f32},
    {"f16", dtype::f16},
    {"float16", dtype::f16},
    {"half", dtype::f16},
    {"bf16", dtype::bf16},
    {"bfloat16", dtype::bf16},
    {"f64", dtype::f64},
    {"float64", dtype::f64},
    {"double", dtype::f64},
    {"i32", dtype::i32},
    {"int32", dtype::i32},
    {"i64", dtype::i64},
    {"int64", dtype::i64},
    {"u8", dtype::u8},
    {"uint8", dtype::u8},
    {"bool", dtype::u8},
}};

constexpr std::array<std::pair<std::string_view, init_kind>, 5> init_spellings{{
    {"normal", init_kind::normal},
    {"uniform", init_kind::uniform},
    {"uniform01", init_kind::uniform01},
    {"positive", init_kind::positive},
    {"randint", init_kind::randint},
}};

} // namespace

const char* to_string(dtype t) noexcept {
  switch (t) {
  case dtype::f32:
    return "f32";
  case dtype::f16:
    return "f16";
  case dtype::bf16:
    return "bf16";
  case dtype::f64:
    return "f64";
  case dtype::i32:
    return "i32";
  case dtype::i64:
    return "i64";
  case dtype::u8:
    return "u8";
  }
  return "unknown";
}

std::optional<dtype> parse_dtype(std::string_view text) noexcept {
  for (const auto& [spelling, type] : dtype_spellings)
    if (spelling == text)
      return type;
  return std::nullopt;
}

int64_t size_of(dtype t) noexcept {
  switch (t) {
  case dtype::f32:
    return 4;
  case dtype::f16:
  case dtype::bf16:
    return 2;
  case dtype::f64:
    return 8;
  case dtype::i32:
    return 4;
  case dtype::i64:
    return 8;
  case dtype::u8:
    return 1;
  }
  return 0;
}

std::vector<std::string_view> spellings_of(dtype t) {
  std::vector<std::string_view> spellings;
  for (const auto& [spelling, type] : dtype_spellings)
    if (type == t)
      spellings.push_back(spelling);
  return spellings;
}

bool is_floating(dtype t) noexcept {
  switch (t) {
  case dtype::f32:
  case dtype::f16:
  case dtype::bf16:
  case dtype::f64:
    return true;
  case dtype::i32:
  case dtype::i64:
  case dtype::u8:
    return false;
  }
  return false;
}

const char* to_string(init_kind k) noexcept {
  for (const auto& [spelling, kind] : init_spellings)
    if (kind == k)
      return spelling.data(); // the literals are NUL-terminated
  return "unknown";
}

std::optional<init_kind> parse_init_kind(std::string_view text) noexcept {
  for (const auto& [spelling, kind] : init_spellings)
    if (spelling == text)
      return kind;
  return std::nullopt;
}

int64_t tensor_spec::numel() const noexcept {
  int64_t n = 1;
  for (int64_t extent : shape)
    n *= extent;
  return n;
}

int64_t tensor_spec::bytes() const noexcept {
  return numel() * size_of(type);
}

tolerance default_tolerance(dtype t) noexcept {
  switch (t) {
  case dtype::f32:
    return {1e-5, 1e-5, 1e-5};
  case dtype::f16:
    return {1e-3, 1e-3, 1e-3};
  case dtype::bf16:
    return {1e-2, 1e-2, 1e-2};
  case dtype::f64:
    return {1e-10, 1e-10, 1e-12};
  case dtype::i32:
  case dtype::i64:
  case dtype::u8:
    return {0, 0, 0};
  }
  return {};
}

expected<std::string> read_reference(const task& subject) {
  if (!subject.reference_source.empty())
    return subject.reference_source;
  const std::filesystem::path& path = subject.reference_path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return fail(errc::not_found, "cannot read the reference " + path.string() + ": not found");
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path, ec))
    return fail(errc::io, "cannot read the reference " + path.string() + ": " +
                              (in ? "it is a folder" : std::strerror(errno)));
  return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string reference_name(const task& subject) {
  if (subject.reference_source.empty())
    return subject.reference_path.string();
  if (subject.graph != nullptr)
    return "the graph reference composed from the references of its " +
           std::to_string(subject.graph->nodes.size()) + " nodes (" +
           subject.reference_path.string() + ")";
  return "the " + subject.family + " reference rendered from " + subject.reference_path.string();
}

const task& search_target(const task& subject) noexcept {
  if (subject.graph == nullptr || subject.graph->nodes.empty())
    return subject;
  return subject.graph->nodes[subject.graph->main].op;
}

double roofline_floor_ms(const task_cost& cost, double peak_gbps, double peak_gflops) noexcept {
  // GB/s and GFLOP/s are 1e9 per second, so 1e6 per millisecond.
  double memory_ms = peak_gbps > 0 ? cost.bytes / (peak_gbps * 1e6) : 0.0;
  double compute_ms = peak_gflops > 0 ? cost.flops / (peak_gflops * 1e6) : 0.0;
  return memory_ms > compute_ms ? memory_ms : compute_ms;
}

} // namespace ks::engine
