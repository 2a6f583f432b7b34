#pragma once

// The campaign options, each declared once (kernel_tuner's pattern): where it lives
// ([section] key), what it means, which values it accepts and which field of campaign_config
// holds it. The default is that field's initializer, read from a default-constructed
// campaign_config, so it too is written in one place. The loader validates a file against
// this table and config_text() writes the commented file from it; neither names an option.

#include "config/campaign_config.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ks::config {

/// A function returning one field of a config, so that one table entry can both read the
/// default and store a parsed value.
template <class T>
using field_ref = T& (*)(campaign_config&);

/// Says how a number's range treats one of its ends.
enum class bound_kind { none, inclusive, exclusive };

/// The finite numbers an option accepts: an optional lower and an optional upper end.
struct number_range {
  double min = 0;
  bound_kind min_kind = bound_kind::none;
  double max = 0;
  bound_kind max_kind = bound_kind::none;

  /// Checks whether `value` is finite and within the range.
  bool contains(double value) const noexcept;
};

/// Says what a string option accepts besides its choices.
enum class text_rule {
  any,          ///< any string, empty included
  non_empty,    ///< any non-empty string
  url,          ///< empty, or an http:// or https:// URL
  env_var_name, ///< empty, or [A-Za-z_][A-Za-z0-9_]*
};

/// An integer within [min, max].
struct integer_option {
  field_ref<int64_t> field;
  int64_t min = 0;
  int64_t max = std::numeric_limits<int64_t>::max();
};

/// A finite number (an integer is accepted) within `range`.
struct number_option {
  field_ref<double> field;
  number_range range;
};

/// A number within `range`, or unset; the default file shows `example`, commented out.
struct optional_number_option {
  field_ref<std::optional<double>> field;
  number_range range;
  double example = 0;
};

/// A string following `rule`, and one of `choices` when there are any.
struct text_option {
  field_ref<std::string> field;
  text_rule rule = text_rule::any;
  std::span<const std::string_view> choices;
};

/// A non-empty array of non-empty strings.
struct text_list_option {
  field_ref<std::vector<std::string>> field;
};

/// true or false.
struct bool_option {
  field_ref<bool> field;
};

/// An array, empty or not, of environment variable names ([A-Za-z_][A-Za-z0-9_]*).
struct env_var_list_option {
  field_ref<std::vector<std::string>> field;
};

/// "all", or a non-empty array of distinct device numbers (integers >= 0 that fit int32).
struct gpus_option {
  field_ref<gpus_section> field;
};

/// An array, empty or not, of { model, input_per_mtok, output_per_mtok } tables, one per model.
struct price_list_option {
  field_ref<std::vector<model_price_entry>> field;
};

/// What an option accepts, and where it is stored.
using option_kind = std::variant<integer_option, number_option, optional_number_option, text_option,
                                 text_list_option, gpus_option, bool_option, env_var_list_option,
                                 price_list_option>;

/// One declared option.
struct option {
  std::string_view section;     ///< the table holding it; "" for a key of the root
  std::string_view key;         ///< its name within that table
  std::string_view description; ///< one or more sentences; the default file wraps them
  option_kind kind;
};

/// One table of the file, with what it is for.
struct section_info {
  std::string_view name; ///< "" for the root
  std::string_view description;
};

/// Returns every option, in the order the config file lists them (root keys first).
std::span<const option> campaign_options();

/// Returns the tables of the file, the root first, in the order the file lists them.
std::span<const section_info> campaign_sections();

/// Returns the option `key` of `section`, or nullptr.
const option* find_option(std::string_view section, std::string_view key);

/// Returns the keys of `section` ("" for the root: its options and the section names).
std::vector<std::string_view> keys_of(std::string_view section);

/// Returns "section.key", or "key" for a root option.
std::string label_of(const option& o);

/// Returns what `o` accepts, as a phrase: "an integer between 1 and 64", "a number > 0 and
/// <= 1", "one of \"offline\", \"openai\", \"anthropic\"".
std::string accepted_values(const option& o);

/// Returns `value` the shortest way that reads back exactly, as a TOML float ("3600.0",
/// "1e-05", "inf").
std::string format_number(double value);

} // namespace ks::config
