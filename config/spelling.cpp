#include "config/spelling.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ks::config {

int64_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<int64_t>> d(a.size() + 1, std::vector<int64_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = static_cast<int64_t>(i);
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      int64_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::optional<std::string_view> closest(std::string_view word,
                                        std::span<const std::string_view> known) {
  int64_t limit = word.size() < 6 ? 1 : 2;
  std::optional<std::string_view> best;
  int64_t best_distance = limit + 1;
  for (std::string_view candidate : known) {
    int64_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string joined(std::span<const std::string_view> words, std::string_view quote) {
  std::string text;
  for (std::string_view word : words)
    text.append(text.empty() ? "" : ", ").append(quote).append(word).append(quote);
  return text;
}

} // namespace ks::config
