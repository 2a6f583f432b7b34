// Writes a config as the commented TOML file a user copies and edits. Everything in it comes
// from the option table: the sections and their order, each option's description and accepted
// values, and its value read through the option's field, so a default changed in
// campaign_config.hpp or an option added to the table shows up here without a line of change.
// An unset optional option is written commented out with an example value, so that parsing
// the text gives the same config back.

#include "config/campaign_config.hpp"
#include "config/option_table.hpp"

#include <cstdio>
#include <variant>

namespace ks::config {

namespace {

constexpr size_t line_width = 92;

/// Appends `text` as `# ` comment lines of at most line_width characters.
void append_comment(std::string& out, std::string_view text) {
  std::string line = "#";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view word = text.substr(start, end - start);
    if (line.size() > 1 && line.size() + 1 + word.size() > line_width) {
      out += line + "\n";
      line = "#";
    }
    line.append(" ").append(word);
    start = end + 1;
  }
  out += line + "\n";
}

/// Returns `text` as a TOML basic string.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        char escape[8];
        std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
        out += escape;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

/// Returns the `key = value` line of `o` in `config`, commented out when it is unset.
std::string assignment(const option& o, campaign_config& config) {
  struct visitor {
    campaign_config& config;
    std::string operator()(const integer_option& i) const {
      return std::to_string(i.field(config));
    }
    std::string operator()(const number_option& n) const { return format_number(n.field(config)); }
    std::string operator()(const optional_number_option& n) const {
      const std::optional<double>& value = n.field(config);
      return value ? format_number(*value) : format_number(n.example);
    }
    std::string operator()(const text_option& t) const { return toml_string(t.field(config)); }
    std::string operator()(const text_list_option& t) const {
      std::string text = "[";
      for (const std::string& item : t.field(config))
        text.append(text.size() > 1 ? ", " : "").append(toml_string(item));
      return text + "]";
    }
    std::string operator()(const bool_option& b) const {
      return b.field(config) ? "true" : "false";
    }
    std::string operator()(const env_var_list_option& l) const {
      std::string text = "[";
      for (const std::string& item : l.field(config))
        text.append(text.size() > 1 ? ", " : "").append(toml_string(item));
      return text + "]";
    }
    std::string operator()(const price_list_option& l) const {
      std::string text = "[";
      for (const model_price_entry& e : l.field(config))
        text.append(text.size() > 1 ? ", " : "")
            .append("{ model = " + toml_string(e.model) +
                    ", input_per_mtok = " + format_number(e.input_per_mtok) +
                    ", output_per_mtok = " + format_number(e.output_per_mtok) + " }");
      return text + "]";
    }
    std::string operator()(const gpus_option& g) const {
      const gpus_section& gpus = g.field(config);
      if (gpus.all)
        return toml_string("all");
      std::string text = "[";
      for (int32_t device : gpus.devices)
        text.append(text.size() > 1 ? ", " : "").append(std::to_string(device));
      return text + "]";
    }
  };
  const auto* optional = std::get_if<optional_number_option>(&o.kind);
  bool unset = optional != nullptr && !optional->field(config).has_value();
  return (unset ? "# " : "") + std::string(o.key) + " = " + std::visit(visitor{config}, o.kind);
}

} // namespace

std::string config_text(const campaign_config& config) {
  campaign_config copy = config; // the table's fields take a mutable config
  std::string out;
  append_comment(out, "A kernelskill campaign config. Every option is listed with what it "
                      "means, what it accepts and its value; an option left out takes its "
                      "default (`kernelskill config --defaults` prints them all). Relative "
                      "paths are resolved against this file's folder.");
  for (const section_info& section : campaign_sections()) {
    if (!section.name.empty()) {
      out += "\n";
      append_comment(out, section.description);
      out += "[" + std::string(section.name) + "]\n";
    }
    for (const option& o : campaign_options()) {
      if (o.section != section.name)
        continue;
      out += "\n";
      append_comment(out, o.description);
      append_comment(out, "Accepts " + accepted_values(o) + ".");
      out += assignment(o, copy) + "\n";
    }
  }
  return out;
}

std::string default_config_text() {
  return config_text(campaign_config{});
}

} // namespace ks::config
