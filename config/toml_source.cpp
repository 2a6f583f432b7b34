#include "config/toml_source.hpp"

#include "config/option_table.hpp"

#include <cstdint>
#include <utility>

namespace ks::config {

position position_of(const toml::source_region& region) {
  if (region.begin.line == 0)
    return {};
  return {region.begin.line, region.begin.column};
}

std::string type_name(const toml::node& node) {
  switch (node.type()) {
  case toml::node_type::string:
    return "a string";
  case toml::node_type::integer:
    return "an integer";
  case toml::node_type::floating_point:
    return "a float";
  case toml::node_type::boolean:
    return "a boolean";
  case toml::node_type::array:
    return "an array";
  case toml::node_type::table:
    return "a table";
  case toml::node_type::date:
    return "a date";
  case toml::node_type::time:
    return "a time";
  case toml::node_type::date_time:
    return "a date-time";
  case toml::node_type::none:
    break;
  }
  return "nothing";
}

std::string describe(const toml::node& node) {
  if (auto value = node.value_exact<int64_t>())
    return std::to_string(*value);
  if (auto value = node.value_exact<double>())
    return format_number(*value);
  if (auto value = node.value_exact<bool>())
    return *value ? "true" : "false";
  if (auto value = node.value_exact<std::string>())
    return "\"" + *value + "\"";
  if (const toml::array* array = node.as_array(); array != nullptr && array->empty())
    return "[]";
  return type_name(node);
}

expected<toml::table> parse_toml(std::string_view text, const std::string& file) {
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    return fail(errc::invalid_input,
                located(file, position_of(e.source()), std::string(e.description())));
  }
#else
  toml::parse_result parsed = toml::parse(text, std::string_view(file));
  if (!parsed)
    return fail(errc::invalid_input, located(file, position_of(parsed.error().source()),
                                             std::string(parsed.error().description())));
  return std::move(parsed).table();
#endif
}

} // namespace ks::config
