#pragma once

// Spelling help for error messages: "unknown key 'branchs' (did you mean 'branches'?)".

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ks::config {

/// Returns the optimal string alignment distance of `a` and `b`: Levenshtein's edits plus the
/// swap of two neighbours, the commonest typo ("bracnhes").
int64_t edit_distance(std::string_view a, std::string_view b);

/// Returns the word of `known` closest to `word`, if it is close enough to be a typo (at most
/// one edit for words under 6 letters, two beyond).
std::optional<std::string_view> closest(std::string_view word,
                                        std::span<const std::string_view> known);

/// Returns `words` joined by ", ", each wrapped in `quote` ("" for none).
std::string joined(std::span<const std::string_view> words, std::string_view quote = "");

} // namespace ks::config
