#include "config/diagnostics.hpp"

#include <algorithm>
#include <utility>

namespace ks::config {

std::string located(const std::string& file, position at, const std::string& message) {
  return file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + message;
}

void diagnostics::report(position at, std::string message) {
  problems_.push_back({at, std::move(message)});
}

expected<void> diagnostics::checkpoint() const {
  if (problems_.empty())
    return {};
  std::vector<problem> sorted = problems_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const problem& a, const problem& b) {
    return std::pair(a.at.line, a.at.column) < std::pair(b.at.line, b.at.column);
  });
  std::string text;
  for (const problem& p : sorted)
    text.append(text.empty() ? "" : "\n").append(located(file_, p.at, p.message));
  return fail(errc::invalid_input, std::move(text));
}

} // namespace ks::config
