#include "gpu/failure.hpp"

#include <array>
#include <utility>

namespace ks::gpu {

namespace {

// Every kind with its stable name, in storage order.
constexpr std::array<std::pair<failure_kind, const char*>, 14> names{{
    {failure_kind::compile_error, "compile_error"},
    {failure_kind::load_error, "load_error"},
    {failure_kind::launch_error, "launch_error"},
    {failure_kind::illegal_address, "illegal_address"},
    {failure_kind::timeout, "timeout"},
    {failure_kind::wrong_result, "wrong_result"},
    {failure_kind::crash, "crash"},
    {failure_kind::escaped_stream, "escaped_stream"},
    {failure_kind::no_device, "no_device"},
    {failure_kind::protocol_error, "protocol_error"},
    {failure_kind::out_of_memory, "out_of_memory"},
    {failure_kind::cuda_error, "cuda_error"},
    {failure_kind::vendor_library, "vendor_library"},
    {failure_kind::host_fault, "host_fault"},
}};

// Numbered 1, 2, ... in storage order, no gap, no entry left without a name.
static_assert([] {
  for (size_t i = 0; i < names.size(); ++i)
    if (static_cast<size_t>(names[i].first) != i + 1 || names[i].second == nullptr)
      return false;
  return true;
}());

} // namespace

const std::vector<failure_kind>& all_failure_kinds() {
  static const std::vector<failure_kind> kinds = [] {
    std::vector<failure_kind> out;
    for (const auto& [kind, name] : names)
      out.push_back(kind);
    return out;
  }();
  return kinds;
}

const char* to_string(failure_kind kind) noexcept {
  for (const auto& [k, name] : names)
    if (k == kind)
      return name;
  return "unknown";
}

std::optional<failure_kind> parse_failure_kind(std::string_view name) noexcept {
  for (const auto& [k, n] : names)
    if (name == n)
      return k;
  return std::nullopt;
}

int exit_code_for(failure_kind kind) noexcept {
  return 10 + static_cast<int>(kind);
}

bool kills_worker(failure_kind kind) noexcept {
  switch (kind) {
  case failure_kind::illegal_address:
  case failure_kind::timeout:
  case failure_kind::crash:
  case failure_kind::protocol_error:
  case failure_kind::cuda_error:
  case failure_kind::host_fault:
    return true;
  default:
    return false;
  }
}

bool is_host_fault(failure_kind kind) noexcept {
  return kind == failure_kind::host_fault;
}

} // namespace ks::gpu
