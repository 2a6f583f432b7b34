// Loads skills (the format: docs/skills.md) the way task manifests are loaded: every check
// records a problem at the position toml++ gives the offending node and goes on, so one run
// shows the author everything that is wrong; only then does loading fail, once, with all of
// them in file and source order. Problems inside a string go further: an expression's syntax
// error points at the character (the string's column + 1 for its quote + the offset), and a
// template's Mustache error at its line and column in the template file.
//
//   id            = "row_softmax"          [a-z0-9_]+, required
//   title         = "..."                  required
//   version       = 1                      integer >= 1, required
//   families      = ["softmax"]            non-empty; "*" for any family
//   addresses     = ["memory", "latency"]  bottleneck classes (bound_kind names); [] = any
//   prior         = 0.5                    in [0, 1]: ranks untried skills
//   requires      = ["task.cols >= 32"]    expressions over task.* and diagnosis.* facts
//   guidance      = "..."                  required, for a coder
//   anti_patterns = ["..."]                forbidden shortcuts
//   effect        = "..."                  the expected effect on the metrics
//   [tables.NAME] key = "task.op", entries = { relu = "..." }
//   [[templates]] name = "...", file = "x.cu.mustache",
//                 params = [ { name = "threads", values = [128, 256], default = 256 } ]
//                   (a param may add prefer = "EXPRESSION": its default for the task, over
//                   task.* and the params before it, snapped to the nearest of its values)
//                   (or params_from = "tunables": the task's tunables are the space)
//                 constraints = ["threads % 32 == 0"]
//
// A skill's files live wherever they were read from: a folder, the store, an import file; the
// loader sees only their names and texts (skill_files), so all three are checked alike.

#include "engine/skill_library.hpp"

#include "base/text.hpp"
#include "config/spelling.hpp"
#include "config/toml_source.hpp"
#include "engine/diagnosis.hpp"
#include "engine/skill_partials.hpp"
#include "engine/skill_template.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <span>
#include <utility>

namespace ks::engine {

namespace fs = std::filesystem;

const char* to_string(skill_origin o) noexcept {
  switch (o) {
  case skill_origin::builtin:
    return "builtin";
  case skill_origin::user:
    return "user";
  case skill_origin::learned:
    return "learned";
  }
  return "unknown";
}

std::optional<skill_origin> parse_skill_origin(std::string_view name) noexcept {
  for (skill_origin o : {skill_origin::builtin, skill_origin::user, skill_origin::learned})
    if (name == to_string(o))
      return o;
  return std::nullopt;
}

bool skill::applies_to(std::string_view family) const {
  return std::any_of(families.begin(), families.end(),
                     [&](const std::string& f) { return f == "*" || f == family; });
}

const skill_template* skill::find_template(std::string_view name) const {
  if (templates.empty())
    return nullptr;
  if (name.empty())
    return &templates.front();
  for (const skill_template& t : templates)
    if (t.name == name)
      return &t;
  return nullptr;
}

const skill* skill_library::find(std::string_view id) const {
  for (const skill& s : skills)
    if (s.id == id)
      return &s;
  return nullptr;
}

namespace {

using config::located;
using config::position;
using config::position_of;
using config::type_name;

constexpr std::string_view root_keys[] = {
    "id",       "title",    "version",       "families", "addresses", "prior",
    "requires", "guidance", "anti_patterns", "effect",   "tables",    "templates"};
constexpr std::string_view template_keys[] = {"name", "file", "params", "params_from",
                                              "constraints"};
constexpr std::string_view param_keys[] = {"name", "values", "default", "prefer"};
constexpr std::string_view table_keys[] = {"key", "entries"};
// Names the renderer provides itself: a parameter may not take one.
constexpr std::string_view reserved_names[] = {"task",  "text", "defines",   "reference",
                                               "skill", "plan", "diagnosis", "flag"};

bool is_slug(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_identifier(std::string_view text) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  return !text.empty() && letter(text[0]) && std::all_of(text.begin(), text.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9');
  });
}

/// A problem: the file it is in, where, and what.
struct problem {
  std::string file;
  position at;
  std::string message;
};

/// Returns the line and column of byte `offset` in `text`.
position position_in(std::string_view text, size_t offset) {
  position p;
  for (size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

class skill_reader {
public:
  skill_reader(const skill_files& files) : files_(files), toml_file_(files.dir + "/skill.toml") {}

  skill read(const toml::table& root) {
    skill s;
    check_keys(root, root_keys, "");
    if (const toml::node* n = required(root, "id", "a string matching [a-z0-9_]+"))
      if (auto text = string_of(*n, "id")) {
        if (!is_slug(*text))
          report(*n, "skill id " + config::describe(*n) + " must match [a-z0-9_]+");
        s.id = *text;
      }
    if (const toml::node* n = required(root, "title", "a one-line string"))
      s.title = string_of(*n, "title").value_or("");
    if (const toml::node* n = required(root, "version", "an integer >= 1")) {
      if (auto v = n->value_exact<int64_t>(); v && *v >= 1)
        s.version = *v;
      else
        report(*n, "'version' must be an integer >= 1, got " + config::describe(*n));
    }
    if (const toml::node* n = required(root, "families", "an array such as [\"softmax\"]")) {
      s.families = strings_of(*n, "families");
      if (s.families.empty() && n->is_array())
        report(*n, "'families' must name at least one op family (\"*\" for any)");
    }
    if (const toml::node* n = root.get("addresses"))
      read_addresses(*n, s);
    if (const toml::node* n = root.get("prior")) {
      std::optional<double> v = n->value<double>();
      if (!v || *v < 0 || *v > 1)
        report(*n, "'prior' must be a number in [0, 1], got " + config::describe(*n));
      else
        s.prior = *v;
    }
    if (const toml::node* n = root.get("requires"))
      s.preconditions = expressions_of(*n, "requires", expression_use::precondition, {});
    if (const toml::node* n =
            required(root, "guidance", "a string: what to change, why, pitfalls")) {
      s.guidance = string_of(*n, "guidance").value_or("");
      if (n->is_string() && trim_empty(s.guidance))
        report(*n, "'guidance' must not be empty: it is what a coder reads");
    }
    if (const toml::node* n = root.get("anti_patterns"))
      s.anti_patterns = strings_of(*n, "anti_patterns");
    if (const toml::node* n = root.get("effect"))
      s.effect = string_of(*n, "effect").value_or("");
    if (const toml::node* n = root.get("tables"))
      read_tables(*n, s);
    if (const toml::node* n = root.get("templates"))
      read_templates(*n, s);
    return s;
  }

  std::vector<problem>& problems() { return problems_; }

private:
  // -- recording problems --------------------------------------------------------------------

  void report(const toml::source_region& at, std::string message) {
    problems_.push_back({toml_file_, position_of(at), std::move(message)});
  }
  void report(const toml::node& at, std::string message) {
    report(at.source(), std::move(message));
  }

  static bool trim_empty(const std::string& text) {
    return text.find_first_not_of(" \t\r\n") == std::string::npos;
  }

  void wrong_type(const toml::node& node, const std::string& label, std::string_view what) {
    report(node, "'" + label + "' must be " + std::string(what) + ", got " + type_name(node));
  }

  void check_keys(const toml::table& table, std::span<const std::string_view> known,
                  const std::string& where) {
    for (auto&& [key, node] : table) {
      std::string_view word = key.str();
      if (std::find(known.begin(), known.end(), word) != known.end())
        continue;
      std::string message =
          "unknown key '" + std::string(word) + "'" + (where.empty() ? "" : " in " + where);
      if (auto guess = config::closest(word, known))
        message += " (did you mean '" + std::string(*guess) + "'?)";
      else
        message += " (expected one of: " + config::joined(known) + ")";
      report(key.source(), std::move(message));
    }
  }

  const toml::node* required(const toml::table& table, std::string_view key, std::string_view what,
                             const std::string& where = "") {
    if (const toml::node* node = table.get(key))
      return node;
    report(table, "missing required key '" + std::string(key) + "'" +
                      (where.empty() ? "" : " in " + where) + " (" + std::string(what) + ")");
    return nullptr;
  }

  std::optional<std::string> string_of(const toml::node& node, const std::string& label) {
    if (auto value = node.value_exact<std::string>())
      return value;
    wrong_type(node, label, "a string");
    return std::nullopt;
  }

  std::vector<std::string> strings_of(const toml::node& node, const std::string& label) {
    std::vector<std::string> out;
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      wrong_type(node, label, "an array of strings");
      return out;
    }
    for (size_t i = 0; i < array->size(); ++i)
      if (auto text = string_of((*array)[i], label + "[" + std::to_string(i) + "]"))
        out.push_back(*text);
    return out;
  }

  // -- parts ---------------------------------------------------------------------------------

  void read_addresses(const toml::node& node, skill& s) {
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      wrong_type(node, "addresses", "an array of bottleneck classes");
      return;
    }
    std::vector<std::string_view> names;
    for (bound_kind k : all_bound_kinds)
      names.emplace_back(to_string(k));
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = (*array)[i];
      auto text = string_of(item, "addresses[" + std::to_string(i) + "]");
      if (!text)
        continue;
      if (auto k = parse_bound_kind(*text)) {
        s.addresses.push_back(*k);
        continue;
      }
      std::string message = "unknown bottleneck class '" + *text + "'";
      if (auto guess = config::closest(*text, names))
        message += " (did you mean '" + std::string(*guess) + "'?)";
      report(item, message + "; valid classes: " + config::joined(names));
    }
  }

  enum class expression_use { precondition, constraint };

  std::vector<expression> expressions_of(const toml::node& node, const std::string& label,
                                         expression_use use, const std::set<std::string>& params) {
    std::vector<expression> out;
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      wrong_type(node, label, "an array of expressions (strings)");
      return out;
    }
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = (*array)[i];
      auto text = string_of(item, label + "[" + std::to_string(i) + "]");
      if (!text)
        continue;
      auto parsed = expression::parse(*text);
      if (!parsed) {
        report_syntax(item, label + "[" + std::to_string(i) + "]", *text, parsed.error());
        continue;
      }
      for (const std::string& name : parsed->names()) {
        bool ok = false;
        std::string expected;
        if (use == expression_use::precondition) {
          // The facts are diagnosis.hpp's: the one list that facts() fills.
          std::span<const std::string_view> diagnosis_facts = diagnosis_fact_names();
          ok = name.rfind("task.", 0) == 0 ||
               std::find(diagnosis_facts.begin(), diagnosis_facts.end(), name) !=
                   diagnosis_facts.end();
          expected = "a task fact (task.NAME) or a diagnosis fact (" +
                     config::joined(diagnosis_facts) + ")";
        } else {
          ok = name.rfind("task.", 0) == 0 || params.count(name) > 0;
          expected = "a parameter of the template or a task fact (task.NAME)";
        }
        if (!ok)
          report(item, label + "[" + std::to_string(i) + "] names '" + name + "', which is not " +
                           expected);
      }
      out.push_back(std::move(*parsed));
    }
    return out;
  }

  /// Reports the syntax error `e` of expression `text` (the string `item`) at its character.
  void report_syntax(const toml::node& item, const std::string& label, const std::string& text,
                     const error& e) {
    // The message starts with the offset of the offending character in the string.
    const std::string& m = e.message();
    size_t colon = m.find(": ");
    size_t offset = std::strtoull(m.c_str(), nullptr, 10);
    position at = position_of(item.source());
    // Basic strings on one line: the value starts one column after its quote.
    at.column += static_cast<uint32_t>(offset + 1);
    problems_.push_back(
        {toml_file_, at, label + ": " + m.substr(colon + 2) + " in '" + text + "'"});
  }

  /// Reads the `prefer` of parameter `name` (`item` of the params): an expression that may name
  /// task facts and the parameters `before` it, never itself or a later one (a default that
  /// depends on a default still to be chosen would have no order to be chosen in).
  std::optional<expression> prefer_of(const toml::node& node, const std::string& item,
                                      const std::string& name,
                                      const std::vector<param_space>& before) {
    std::string label = item + " ('" + name + "').prefer";
    auto text = string_of(node, label);
    if (!text)
      return std::nullopt;
    auto parsed = expression::parse(*text);
    if (!parsed) {
      report_syntax(node, label, *text, parsed.error());
      return std::nullopt;
    }
    bool ok = true;
    for (const std::string& used : parsed->names()) {
      if (used.rfind("task.", 0) == 0 ||
          std::any_of(before.begin(), before.end(),
                      [&](const param_space& p) { return p.name == used; }))
        continue;
      report(node, label + " names '" + used + "', which is not a task fact (task.NAME) or a " +
                       "parameter listed before '" + name + "'");
      ok = false;
    }
    if (!ok)
      return std::nullopt;
    return std::move(*parsed);
  }

  void read_tables(const toml::node& node, skill& s) {
    const toml::table* tables = node.as_table();
    if (tables == nullptr) {
      wrong_type(node, "tables", "a table of tables: [tables.NAME] key = ..., entries = {...}");
      return;
    }
    for (auto&& [key, value] : *tables) {
      std::string name(key.str());
      std::string label = "tables." + name;
      if (!is_slug(name))
        report(key.source(), "table name '" + name + "' must match [a-z0-9_]+");
      const toml::table* table = value.as_table();
      if (table == nullptr) {
        wrong_type(value, label, "a table: key = \"task.op\", entries = { ... }");
        continue;
      }
      check_keys(*table, table_keys, label);
      text_table t;
      t.name = name;
      if (const toml::node* k = required(*table, "key", "a task fact such as \"task.op\"", label))
        if (auto text = string_of(*k, label + ".key")) {
          if (text->rfind("task.", 0) != 0)
            report(*k,
                   label + ".key must name a task fact (task.NAME), got " + config::describe(*k));
          t.key = *text;
        }
      if (const toml::node* e = required(*table, "entries", "a table of texts", label)) {
        if (const toml::table* entries = e->as_table()) {
          for (auto&& [entry, text] : *entries)
            if (auto v = string_of(text, label + ".entries." + std::string(entry.str())))
              t.entries.emplace(std::string(entry.str()), *v);
        } else {
          wrong_type(*e, label + ".entries", "a table of texts");
        }
      }
      s.tables.push_back(std::move(t));
    }
  }

  void read_templates(const toml::node& node, skill& s) {
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      wrong_type(node, "templates", "an array of tables ([[templates]])");
      return;
    }
    std::set<std::string> names;
    for (size_t i = 0; i < array->size(); ++i) {
      std::string label = "templates[" + std::to_string(i) + "]";
      const toml::table* table = (*array)[i].as_table();
      if (table == nullptr) {
        wrong_type((*array)[i], label, "a table");
        continue;
      }
      check_keys(*table, template_keys, label);
      skill_template t;
      if (const toml::node* n = required(*table, "name", "a string matching [a-z0-9_]+", label))
        if (auto text = string_of(*n, label + ".name")) {
          if (!is_slug(*text))
            report(*n, label + ".name must match [a-z0-9_]+, got " + config::describe(*n));
          else if (!names.insert(*text).second)
            report(*n, "duplicate template name '" + *text + "'");
          t.name = *text;
        }
      if (const toml::node* n = required(*table, "file", "the template's file name", label))
        if (auto text = string_of(*n, label + ".file")) {
          t.file = *text;
          auto f = files_.files.find(*text);
          if (f == files_.files.end() || *text == "skill.toml")
            report(*n, "template file '" + *text + "' not found in " + files_.dir);
          else
            read_template_text(t, f->second);
        }
      const toml::node* from = table->get("params_from");
      const toml::node* params = table->get("params");
      if (from != nullptr) {
        auto text = string_of(*from, label + ".params_from");
        if (text && *text != "tunables")
          report(*from, label +
                            ".params_from must be \"tunables\" (the task's launch "
                            "parameters), got " +
                            config::describe(*from));
        t.params_from_tunables = true;
        if (params != nullptr)
          report(*params, label + " has both params and params_from: give one");
      } else if (params != nullptr) {
        t.params = read_params(*params, label + ".params");
      } else {
        report(*table, "missing required key 'params' in " + label +
                           " (an array: [ { name = ..., values = [...], default = ... } ], or "
                           "params_from = \"tunables\")");
      }
      std::set<std::string> param_names;
      for (const param_space& p : t.params)
        param_names.insert(p.name);
      if (const toml::node* n = table->get("constraints")) {
        if (t.params_from_tunables)
          report(*n, label + ": constraints need named params, not params_from");
        else
          t.constraints =
              expressions_of(*n, label + ".constraints", expression_use::constraint, param_names);
      }
      s.templates.push_back(std::move(t));
    }
  }

  std::vector<param_space> read_params(const toml::node& node, const std::string& label) {
    std::vector<param_space> out;
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      wrong_type(node, label, "an array of tables");
      return out;
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < array->size(); ++i) {
      std::string item = label + "[" + std::to_string(i) + "]";
      const toml::table* table = (*array)[i].as_table();
      if (table == nullptr) {
        wrong_type((*array)[i], item, "a table: { name = ..., values = [...], default = ... }");
        continue;
      }
      check_keys(*table, param_keys, item);
      param_space p;
      if (const toml::node* n = required(*table, "name", "an identifier", item))
        if (auto text = string_of(*n, item + ".name")) {
          if (!is_identifier(*text))
            report(*n, item + ".name must be an identifier, got " + config::describe(*n));
          else if (std::find(std::begin(reserved_names), std::end(reserved_names), *text) !=
                   std::end(reserved_names))
            report(*n, item + ".name '" + *text + "' is reserved (" +
                           config::joined(reserved_names) + ")");
          else if (!seen.insert(*text).second)
            report(*n, "duplicate parameter '" + *text + "'");
          p.name = *text;
        }
      if (const toml::node* n = required(*table, "values", "a non-empty array of integers", item)) {
        if (const toml::array* values = n->as_array()) {
          if (values->empty())
            report(*n, item + ".values must list at least one value");
          std::set<int64_t> distinct;
          for (size_t k = 0; k < values->size(); ++k) {
            std::optional<int64_t> v = (*values)[k].value_exact<int64_t>();
            if (!v) {
              report((*values)[k], item + ".values[" + std::to_string(k) +
                                       "] must be an integer, got " +
                                       config::describe((*values)[k]));
              continue;
            }
            if (!distinct.insert(*v).second)
              report((*values)[k], item + ".values repeats " + std::to_string(*v));
            p.values.push_back(*v);
          }
        } else {
          wrong_type(*n, item + ".values", "an array of integers");
        }
      }
      if (const toml::node* n = required(*table, "default", "one of the values", item)) {
        std::optional<int64_t> v = n->value_exact<int64_t>();
        if (!v)
          wrong_type(*n, item + ".default", "an integer");
        else if (std::find(p.values.begin(), p.values.end(), *v) == p.values.end() &&
                 !p.values.empty())
          report(*n, item + ".default " + std::to_string(*v) + " is not one of its values");
        else
          p.default_value = *v;
      }
      if (const toml::node* n = table->get("prefer"))
        p.prefer = prefer_of(*n, item, p.name, out);
      out.push_back(std::move(p));
    }
    return out;
  }

  /// Keeps the template's text with its partials expanded (skill_partials.hpp).
  void read_template_text(skill_template& t, const std::string& text) {
    expanded_template expanded = expand_partials(text, files_.files);
    if (expanded.problem) {
      problems_.push_back({files_.dir + "/" + t.file, position_in(text, expanded.problem->first),
                           "template error: " + expanded.problem->second});
      return;
    }
    t.text = std::move(expanded.text);
    if (auto error = template_syntax_error(t.text))
      problems_.push_back({files_.dir + "/" + t.file, position_in(t.text, error->first),
                           "template error: " + error->second +
                               (t.text.size() != text.size() ? " (in the template with its "
                                                               "partials expanded)"
                                                             : "")});
  }

  const skill_files& files_;
  std::string toml_file_;
  std::vector<problem> problems_;
};

std::string format_problems(std::vector<problem> problems) {
  std::stable_sort(problems.begin(), problems.end(), [](const problem& a, const problem& b) {
    return std::tie(a.file, a.at.line, a.at.column) < std::tie(b.file, b.at.line, b.at.column);
  });
  std::string message;
  for (const problem& p : problems)
    message.append(message.empty() ? "" : "\n").append(located(p.file, p.at, p.message));
  return message;
}

// A skill's files come from anywhere (`skills import`): each is bounded, the largest a TOML
// file may be (templates are bounded tighter when parsed: mustache_limits.hpp).
expected<std::string> read_file(const fs::path& path) {
  return base::read_file(path, config::max_toml_bytes, "skill's file");
}

} // namespace

expected<skill_files> read_skill_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "skill.toml", ec))
    return fail(errc::not_found, dir.string() + ": no skill.toml in this folder");
  skill_files out;
  out.dir = dir.lexically_normal().string();
  while (out.dir.size() > 1 && out.dir.back() == '/')
    out.dir.pop_back();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file())
      continue;
    auto text = read_file(it->path());
    if (!text)
      return tl::unexpected(text.error());
    out.files.emplace(it->path().filename().string(), std::move(*text));
  }
  if (ec)
    return fail(errc::io, dir.string() + ": cannot list the skill's folder: " + ec.message());
  // The partials its templates include, and theirs, from the shared folder beside it; a
  // missing one is left for the loader to report at its tag.
  std::vector<std::string> pending;
  for (const auto& [name, text] : out.files)
    if (name.ends_with(".mustache"))
      for (std::string& partial : partial_names(text))
        pending.push_back(std::move(partial));
  fs::path folder = fs::absolute(dir, ec).lexically_normal();
  if (!folder.has_filename()) // "skills/relu/": its name is before the slash
    folder = folder.parent_path();
  const fs::path shared = folder.parent_path() / partial_folder;
  while (!pending.empty()) {
    std::string name = std::move(pending.back());
    pending.pop_back();
    if (!is_partial_name(name) || out.files.count(partial_key(name)) != 0)
      continue;
    fs::path file = shared / (name + ".cu.mustache");
    if (!fs::is_regular_file(file, ec))
      continue;
    auto text = read_file(file);
    if (!text)
      return tl::unexpected(text.error());
    for (std::string& partial : partial_names(*text))
      pending.push_back(std::move(partial));
    out.files.emplace(partial_key(name), std::move(*text));
  }
  return out;
}

std::string content_hash(const skill_files& files) {
  uint64_t h = 14695981039346656037ull;
  auto add = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h ^= c;
      h *= 1099511628211ull;
    }
    // A length after each field: "ab" + "c" and "a" + "bc" hash apart.
    uint64_t n = bytes.size();
    for (int i = 0; i < 8; ++i) {
      h ^= (n >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (const auto& [name, text] : files.files) {
    add(name);
    add(text);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

expected<skill> load_skill(const skill_files& files, skill_origin origin) {
  std::string toml_file = files.dir + "/skill.toml";
  auto it = files.files.find("skill.toml");
  if (it == files.files.end())
    return fail(errc::not_found, files.dir + ": no skill.toml");
  auto parsed = config::parse_toml(it->second, toml_file);
  if (!parsed)
    return fail(errc::invalid_input, parsed.error().message());
  skill_reader reader(files);
  skill s = reader.read(*parsed);
  if (!reader.problems().empty())
    return fail(errc::invalid_input, format_problems(std::move(reader.problems())));
  s.origin = origin;
  s.files = files.files;
  s.content_hash = content_hash(files);
  return s;
}

expected<std::vector<skill_files>> read_skill_folders(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return fail(errc::not_found, root.string() + ": skill folder not found");
  if (fs::is_regular_file(root / "skill.toml", ec)) {
    auto one = read_skill_folder(root);
    if (!one)
      return tl::unexpected(one.error());
    return std::vector<skill_files>{std::move(*one)};
  }
  std::vector<fs::path> dirs;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory() && fs::is_regular_file(it->path() / "skill.toml"))
      dirs.push_back(it->path());
  if (ec)
    return fail(errc::io, root.string() + ": cannot list: " + ec.message());
  std::sort(dirs.begin(), dirs.end());
  std::vector<skill_files> out;
  for (const fs::path& d : dirs) {
    auto one = read_skill_folder(d);
    if (!one)
      return tl::unexpected(one.error());
    out.push_back(std::move(*one));
  }
  return out;
}

expected<skill_library> make_library(std::vector<skill> skills) {
  std::sort(skills.begin(), skills.end(),
            [](const skill& a, const skill& b) { return a.id < b.id; });
  for (size_t i = 1; i < skills.size(); ++i)
    if (skills[i].id == skills[i - 1].id)
      return fail(errc::invalid_input, "two skills have the id '" + skills[i].id + "'");
  return skill_library{std::move(skills)};
}

expected<skill_library> load_skill_library(const fs::path& root) {
  auto folders = read_skill_folders(root);
  if (!folders)
    return tl::unexpected(folders.error());
  std::vector<skill> skills;
  std::string messages;
  std::map<std::string, std::string> first_dir;
  for (const skill_files& files : *folders) {
    auto loaded = load_skill(files);
    if (!loaded) {
      messages.append(messages.empty() ? "" : "\n").append(loaded.error().message());
      continue;
    }
    auto [at, fresh] = first_dir.emplace(loaded->id, files.dir);
    if (!fresh) {
      messages.append(messages.empty() ? "" : "\n")
          .append(files.dir + "/skill.toml: duplicate skill id '" + loaded->id + "' (first in " +
                  at->second + ")");
      continue;
    }
    skills.push_back(std::move(*loaded));
  }
  if (!messages.empty())
    return fail(errc::invalid_input, std::move(messages));
  return make_library(std::move(skills));
}

fs::path default_skills_dir() {
  if (const char* env = std::getenv("KS_SKILLS_DIR"); env != nullptr && *env != '\0')
    return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed =
        (exe.parent_path() / ".." / "share" / "kernelskill" / "skills").lexically_normal();
    if (fs::is_directory(installed, ec))
      return installed;
  }
#ifdef KS_SOURCE_DIR
  return fs::path(KS_SOURCE_DIR) / "skills";
#else
  return "skills";
#endif
}

} // namespace ks::engine
