#include "config/toml_source.hpp"

#include <utility>

namespace ks::config {

position position_of(const toml::source_region& region) {
  if (region.begin.line == 0)
    return {};
  return {region.begin.line, region.begin.column};
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
