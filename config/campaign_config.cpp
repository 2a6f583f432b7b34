// Reads a campaign config file against the option table (option_table.cpp), which is the only
// place that knows an option: the reader walks the document, looks each key up in the table
// and checks its value by the option's kind, so an option added to the table is validated
// without a line here. Nothing is required (every option has a default), so the checks are
// about what is there: unknown keys, wrong types, values out of range.
//
// Every problem is reported with the position toml++ gives the offending node and reading
// goes on; the loader fails once at the checkpoint with all of them in source order. Positions:
// an unknown key points at the key; anything wrong with a value at the value (at the element,
// for an element of an array). A TOML syntax error is the exception: without a document there
// is nothing further to check, so it is reported alone. A value is stored only when it is
// valid, so the config returned on success never holds a value the table rejects.

#include "config/campaign_config.hpp"

#include "base/text.hpp"
#include "config/diagnostics.hpp"
#include "config/option_table.hpp"
#include "config/spelling.hpp"
#include "config/toml_source.hpp"

#include <algorithm>
#include <system_error>
#include <utility>

namespace ks::config {

namespace {

namespace fs = std::filesystem;

bool is_env_var_name(std::string_view text) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  return !text.empty() && letter(text[0]) && std::all_of(text.begin(), text.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9');
  });
}

bool is_url(std::string_view text) {
  for (std::string_view scheme : {"http://", "https://"})
    if (text.size() > scheme.size() && text.substr(0, scheme.size()) == scheme)
      return true;
  return false;
}

/// Returns the section (or "the root") that declares `key`, other than `section`, if any.
std::optional<std::string_view> home_of(std::string_view key, std::string_view section) {
  for (const option& o : campaign_options())
    if (o.key == key && o.section != section)
      return o.section;
  return std::nullopt;
}

/// Reads one parsed config, recording every problem on the way.
class config_reader {
public:
  explicit config_reader(diagnostics& problems) : problems_(problems) {}

  /// Returns the config read from `root`; meaningful only when no problem was recorded.
  campaign_config read(const toml::table& root) {
    campaign_config config;
    for (auto&& [key, node] : root) {
      std::string_view name = key.str();
      if (const option* o = find_option("", name)) {
        read_option(*o, node, config);
      } else if (is_section(name)) {
        if (const toml::table* table = node.as_table())
          read_section(*table, name, config);
        else
          report(node, "'" + std::string(name) + "' must be a table ([" + std::string(name) +
                           "]), got " + describe(node));
      } else {
        unknown_key(key, "");
      }
    }
    check_backend(root, config);
    return config;
  }

private:
  // -- recording problems --------------------------------------------------------------------

  void report(const toml::node& at, std::string message) {
    problems_.report(position_of(at.source()), std::move(message));
  }

  void bad_value(const option& o, const toml::node& node, const std::string& hint = "") {
    report(node, "'" + label_of(o) + "' must be " + accepted_values(o) + ", got " + describe(node) +
                     hint);
  }

  /// Reports `key`, unknown in `section`, with the likeliest fix.
  void unknown_key(const toml::key& key, std::string_view section) {
    std::string word(key.str());
    std::string message = "unknown key '" + word + "'" +
                          (section.empty() ? "" : " in [" + std::string(section) + "]");
    std::vector<std::string_view> known = keys_of(section);
    if (std::optional<std::string_view> home = home_of(word, section))
      message += home->empty() ? " (it is a key of the root: put it above the first [section])"
                               : " (it belongs in [" + std::string(*home) + "])";
    else if (std::optional<std::string_view> guess = closest(word, known))
      message += " (did you mean '" + std::string(*guess) + "'?)";
    else
      message += " (valid keys: " + joined(known) + ")";
    problems_.report(position_of(key.source()), std::move(message));
  }

  // -- reading -------------------------------------------------------------------------------

  static bool is_section(std::string_view name) {
    const std::span<const section_info> sections = campaign_sections();
    return !name.empty() && std::any_of(sections.begin(), sections.end(),
                                        [&](const section_info& s) { return s.name == name; });
  }

  void read_section(const toml::table& table, std::string_view section, campaign_config& config) {
    for (auto&& [key, node] : table) {
      if (const option* o = find_option(section, key.str()))
        read_option(*o, node, config);
      else
        unknown_key(key, section);
    }
  }

  static std::optional<double> number_of(const toml::node& node) {
    if (auto integer = node.value_exact<int64_t>())
      return static_cast<double>(*integer);
    return node.value_exact<double>();
  }

  void read_option(const option& o, const toml::node& node, campaign_config& config) {
    std::visit([&](const auto& kind) { read(o, kind, node, config); }, o.kind);
  }

  void read(const option& o, const integer_option& kind, const toml::node& node,
            campaign_config& config) {
    std::optional<int64_t> value = node.value_exact<int64_t>();
    if (value && *value >= kind.min && *value <= kind.max)
      kind.field(config) = *value;
    else
      bad_value(o, node);
  }

  void read(const option& o, const number_option& kind, const toml::node& node,
            campaign_config& config) {
    std::optional<double> value = number_of(node);
    if (value && kind.range.contains(*value))
      kind.field(config) = *value;
    else
      bad_value(o, node);
  }

  void read(const option& o, const optional_number_option& kind, const toml::node& node,
            campaign_config& config) {
    std::optional<double> value = number_of(node);
    if (value && kind.range.contains(*value))
      kind.field(config) = *value;
    else
      bad_value(o, node);
  }

  void read(const option& o, const text_option& kind, const toml::node& node,
            campaign_config& config) {
    std::optional<std::string> value = node.value_exact<std::string>();
    if (!value) {
      bad_value(o, node);
      return;
    }
    if (!kind.choices.empty()) {
      if (std::find(kind.choices.begin(), kind.choices.end(), *value) == kind.choices.end()) {
        std::optional<std::string_view> guess = closest(*value, kind.choices);
        bad_value(o, node, guess ? " (did you mean \"" + std::string(*guess) + "\"?)" : "");
        return;
      }
    } else {
      switch (kind.rule) {
      case text_rule::any:
        break;
      case text_rule::non_empty:
        if (value->empty())
          return bad_value(o, node);
        break;
      case text_rule::url:
        if (!value->empty() && !is_url(*value))
          return bad_value(o, node);
        break;
      case text_rule::env_var_name:
        // The value is not echoed: the commonest mistake is pasting the key itself.
        if (!value->empty() && !is_env_var_name(*value))
          return report(node, "'" + label_of(o) + "' must be " + accepted_values(o) +
                                  " (the value is not shown: it may be the key itself)");
        break;
      }
    }
    kind.field(config) = std::move(*value);
  }

  void read(const option& o, const text_list_option& kind, const toml::node& node,
            campaign_config& config) {
    const toml::array* array = node.as_array();
    if (array == nullptr || array->empty())
      return bad_value(o, node);
    std::vector<std::string> values;
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = (*array)[i];
      std::optional<std::string> text = item.value_exact<std::string>();
      if (text && !text->empty())
        values.push_back(std::move(*text));
      else
        report(item, "'" + label_of(o) + "[" + std::to_string(i) +
                         "]' must be a non-empty string, got " + describe(item));
    }
    if (values.size() == array->size())
      kind.field(config) = std::move(values);
  }

  void read(const option& o, const bool_option& kind, const toml::node& node,
            campaign_config& config) {
    if (std::optional<bool> value = node.value_exact<bool>())
      kind.field(config) = *value;
    else
      bad_value(o, node);
  }

  void read(const option& o, const env_var_list_option& kind, const toml::node& node,
            campaign_config& config) {
    const toml::array* array = node.as_array();
    if (array == nullptr)
      return bad_value(o, node);
    std::vector<std::string> values;
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = (*array)[i];
      std::optional<std::string> text = item.value_exact<std::string>();
      if (text && is_env_var_name(*text))
        values.push_back(std::move(*text));
      else
        report(item, "'" + label_of(o) + "[" + std::to_string(i) +
                         "]' must be the name of an environment variable "
                         "([A-Za-z_][A-Za-z0-9_]*), got " +
                         (text ? std::string("a string that is not one (the value is not "
                                             "shown: it may be the secret itself)")
                               : describe(item)));
    }
    if (values.size() == array->size())
      kind.field(config) = std::move(values);
  }

  void read(const option& o, const price_list_option& kind, const toml::node& node,
            campaign_config& config) {
    const toml::array* array = node.as_array();
    if (array == nullptr)
      return bad_value(o, node);
    std::vector<model_price_entry> entries;
    bool valid = true;
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = (*array)[i];
      std::string at = "'" + label_of(o) + "[" + std::to_string(i) + "]'";
      const toml::table* table = item.as_table();
      if (table == nullptr) {
        report(item, at + " must be a table { model, input_per_mtok, output_per_mtok }, got " +
                         describe(item));
        valid = false;
        continue;
      }
      model_price_entry entry;
      bool has_model = false;
      for (auto&& [key, value] : *table) {
        std::string_view name = key.str();
        if (name == "model") {
          std::optional<std::string> text = value.value_exact<std::string>();
          has_model = text && !text->empty();
          if (!has_model) {
            report(value, at + ".model must be a non-empty string, got " + describe(value));
            valid = false;
          } else {
            entry.model = *text;
          }
        } else if (name == "input_per_mtok" || name == "output_per_mtok") {
          std::optional<double> price = number_of(value);
          if (!price ||
              !number_range{0, bound_kind::inclusive, 0, bound_kind::none}.contains(*price)) {
            report(value,
                   at + "." + std::string(name) + " must be a number >= 0, got " + describe(value));
            valid = false;
          } else {
            (name == "input_per_mtok" ? entry.input_per_mtok : entry.output_per_mtok) = *price;
          }
        } else {
          constexpr std::string_view keys[] = {"model", "input_per_mtok", "output_per_mtok"};
          std::optional<std::string_view> guess = closest(name, keys);
          problems_.report(position_of(key.source()),
                           "unknown key '" + std::string(name) + "' in " + at +
                               (guess ? " (did you mean '" + std::string(*guess) + "'?)"
                                      : " (valid keys: model, input_per_mtok, output_per_mtok)"));
          valid = false;
        }
      }
      if (!has_model && table->get("model") == nullptr) {
        report(item, at + " needs a model");
        valid = false;
        continue;
      }
      bool repeated = std::any_of(entries.begin(), entries.end(), [&](const model_price_entry& e) {
        return !entry.model.empty() && e.model == entry.model;
      });
      if (repeated) {
        report(item, at + " prices model \"" + entry.model + "\" again");
        valid = false;
        continue;
      }
      entries.push_back(std::move(entry));
    }
    if (valid)
      kind.field(config) = std::move(entries);
  }

  void read(const option& o, const gpus_option& kind, const toml::node& node,
            campaign_config& config) {
    if (std::optional<std::string> text = node.value_exact<std::string>()) {
      if (*text == "all") {
        kind.field(config) = gpus_section{};
        return;
      }
      constexpr std::string_view all[] = {"all"};
      std::optional<std::string_view> guess = closest(*text, all);
      return bad_value(o, node, guess ? " (did you mean \"all\"?)" : "");
    }
    const toml::array* array = node.as_array();
    if (array == nullptr || array->empty())
      return bad_value(o, node);
    gpus_section gpus{.all = false, .devices = {}};
    std::vector<position> first_at;
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = (*array)[i];
      std::optional<int64_t> device = item.value_exact<int64_t>();
      if (!device || *device < 0 || *device > std::numeric_limits<int32_t>::max()) {
        report(item, "'" + label_of(o) + "[" + std::to_string(i) +
                         "]' must be a device number (an integer between 0 and " +
                         std::to_string(std::numeric_limits<int32_t>::max()) + "), got " +
                         describe(item));
        continue;
      }
      auto seen = std::find(gpus.devices.begin(), gpus.devices.end(), *device);
      if (seen != gpus.devices.end()) {
        position first = first_at[static_cast<size_t>(seen - gpus.devices.begin())];
        report(item, "device " + std::to_string(*device) + " is listed twice in '" + label_of(o) +
                         "' (first at " + std::to_string(first.line) + ":" +
                         std::to_string(first.column) + ")");
        continue;
      }
      gpus.devices.push_back(static_cast<int32_t>(*device));
      first_at.push_back(position_of(item.source()));
    }
    if (gpus.devices.size() == array->size())
      kind.field(config) = std::move(gpus);
  }

  // -- checks across options -----------------------------------------------------------------

  /// Reports a model backend without a model, at the backend's value: that is the line the
  /// author changed last.
  void check_backend(const toml::table& root, const campaign_config& config) {
    const agents_section& agents = config.agents;
    const toml::node* backend = root["agents"]["backend"].node();
    if (backend == nullptr)
      return;
    if (agents.backend == "replay") {
      if (agents.replay.empty())
        report(*backend, "agents.backend \"replay\" needs 'agents.replay' (the transcripts "
                         "folder of the run to replay)");
      return;
    }
    if (agents.backend == "offline" || !agents.model.empty())
      return;
    report(*backend, "agents.backend \"" + agents.backend +
                         "\" needs 'agents.model' (the model name the endpoint serves)");
  }

  diagnostics& problems_;
};

} // namespace

// -- campaign_config -------------------------------------------------------------------------

std::filesystem::path campaign_config::resolve(const std::string& written) const {
  fs::path path(written);
  if (path.is_absolute())
    return path.lexically_normal();
  std::error_code ec;
  fs::path base = source.empty() ? fs::current_path(ec) : source.parent_path();
  return (base / path).lexically_normal();
}

std::vector<std::filesystem::path> campaign_config::task_patterns() const {
  std::vector<fs::path> patterns;
  for (const std::string& glob : campaign.tasks)
    patterns.push_back(resolve(glob));
  return patterns;
}

// -- loading ---------------------------------------------------------------------------------

expected<campaign_config> parse_campaign_config(std::string_view text,
                                                const std::filesystem::path& name_for_errors) {
  std::string file = name_for_errors.string();
  expected<toml::table> parsed = parse_toml(text, file);
  if (!parsed)
    return tl::unexpected(parsed.error());
  toml::table root = std::move(*parsed);

  diagnostics problems(file);
  campaign_config config = config_reader(problems).read(root);
  if (expected<void> checked = problems.checkpoint(); !checked)
    return tl::unexpected(checked.error());
  std::error_code ec;
  fs::path source = fs::absolute(name_for_errors, ec);
  config.source = (ec ? name_for_errors : source).lexically_normal();
  return config;
}

expected<campaign_config> load_campaign_config(const std::filesystem::path& path) {
  expected<std::string> text = base::read_file(path, max_toml_bytes, "config file");
  if (!text)
    return tl::unexpected(text.error());
  return parse_campaign_config(*text, path);
}

} // namespace ks::config
