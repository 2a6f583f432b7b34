// Reading a torch baselines file and comparing a campaign's results with it.
//
// The file comes from another program (tools/torch_baselines.py), possibly edited by hand or
// cut off, so reading it says exactly what is wrong and where: a JSON syntax error at its
// line and column (Boost.JSON's stream parser reports how far it got), every schema problem
// on its own line with the path of the value (tasks.relu.eager.median_ms), then one failure.
// What reading accepts is what torch_baselines_json() writes, so a campaign's copy reads back
// the same. A task entry that holds an error is kept as such: it is a result of the tool
// ("the expression failed") that the reports show, not a problem of the file.

#include "report/torch_baselines.hpp"

#include "base/text.hpp"
#include "json/encode.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

namespace ks::report {

namespace fs = std::filesystem;
namespace json = boost::json;
using engine::errc;

namespace {

constexpr std::string_view format_name = "kernelskill-torch-baselines";

/// Collects the schema problems of one file, each as "FILE: WHERE: problem".
struct problems {
  std::string file;
  std::vector<std::string> lines;

  void add(const std::string& where, const std::string& what) {
    lines.push_back(file + ": " + (where.empty() ? what : where + ": " + what));
  }
};

std::string line_and_column(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  int64_t line = 1;
  int64_t column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

// Returns member `key` of `o` as a string; "" when absent; a problem when of another type.
std::string text_of(const json::object& o, std::string_view key, const std::string& where,
                    problems& p, bool required = false) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    if (required)
      p.add(where.empty() ? std::string(key) : where + "." + std::string(key), "missing");
    return {};
  }
  if (!v->is_string()) {
    p.add(where.empty() ? std::string(key) : where + "." + std::string(key), "not a string");
    return {};
  }
  return std::string(v->get_string());
}

std::optional<double> number_of(const json::value& v) {
  if (v.is_double())
    return v.get_double();
  if (v.is_int64())
    return static_cast<double>(v.get_int64());
  if (v.is_uint64())
    return static_cast<double>(v.get_uint64());
  return std::nullopt;
}

torch_timing timing_of(const json::value* v, const std::string& where, problems& p) {
  torch_timing t;
  if (v == nullptr || v->is_null()) {
    t.error = "not timed";
    return t;
  }
  if (!v->is_object()) {
    p.add(where, "not an object");
    t.error = "unreadable";
    return t;
  }
  const json::object& o = v->get_object();
  if (o.contains("error")) {
    t.error = text_of(o, "error", where, p);
    if (t.error.empty())
      t.error = "failed";
    return t;
  }
  // A timing needs all four; without one it is a problem of the file, not a result.
  double* fields[] = {&t.median_ms, &t.p10_ms, &t.p90_ms};
  const char* names[] = {"median_ms", "p10_ms", "p90_ms"};
  for (int i = 0; i < 3; ++i) {
    const json::value* f = o.if_contains(names[i]);
    std::optional<double> n = f ? number_of(*f) : std::nullopt;
    if (!n || !std::isfinite(*n) || *n <= 0) {
      p.add(where + "." + names[i], f ? "not a number > 0" : "missing");
      t.error = "unreadable";
      continue;
    }
    *fields[i] = *n;
  }
  const json::value* trials = o.if_contains("trials");
  if (trials == nullptr || !trials->is_int64() || trials->get_int64() < 1) {
    p.add(where + ".trials", trials ? "not an integer >= 1" : "missing");
    t.error = "unreadable";
  } else {
    t.trials = trials->get_int64();
  }
  return t;
}

torch_baseline baseline_of(const json::value& v, const std::string& where, problems& p) {
  torch_baseline b;
  if (!v.is_object()) {
    p.add(where, "not an object");
    return b;
  }
  const json::object& o = v.get_object();
  b.inputs = text_of(o, "inputs", where, p);
  b.torch = text_of(o, "torch", where, p);
  b.error = text_of(o, "error", where, p);
  if (!b.error.empty())
    return b;
  b.eager = timing_of(o.if_contains("eager"), where + ".eager", p);
  b.compiled = timing_of(o.if_contains("compile"), where + ".compile", p);
  if (const json::value* d = o.if_contains("max_abs_diff_eager_compile"); d && !d->is_null()) {
    if (auto n = number_of(*d))
      b.max_abs_diff = *n;
    else
      p.add(where + ".max_abs_diff_eager_compile", "not a number");
  }
  return b;
}

json::value timing_json(const torch_timing& t) {
  if (!t.error.empty())
    return json::object{{"error", t.error}};
  return json::object{
      {"median_ms", t.median_ms}, {"p10_ms", t.p10_ms}, {"p90_ms", t.p90_ms}, {"trials", t.trials}};
}

// A key of a JSON object as written in WHERE paths: plain when it is a simple name.
std::string path_key(std::string_view key) {
  bool simple = !key.empty();
  for (char c : key)
    simple = simple && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  return simple ? std::string(key) : encode::serialize(json::value(json::string(key)));
}

} // namespace

engine::expected<torch_baselines> parse_torch_baselines(std::string_view text,
                                                        const fs::path& file) {
  json::stream_parser parser;
  boost::system::error_code ec;
  size_t consumed = parser.write(text.data(), text.size(), ec);
  if (!ec)
    parser.finish(ec);
  if (ec)
    return engine::fail(errc::invalid_input, file.string() + ":" + line_and_column(text, consumed) +
                                                 ": not valid JSON: " + ec.message());
  json::value doc = parser.release();

  problems p{file.string(), {}};
  torch_baselines out;
  out.source = file;
  if (!doc.is_object())
    return engine::fail(errc::invalid_input,
                        file.string() + ": not a torch baselines file (not a JSON object); "
                                        "tools/torch_baselines.py writes one");
  const json::object& o = doc.get_object();
  const json::value* format = o.if_contains("format");
  if (format == nullptr || !format->is_string() || format->get_string() != format_name)
    return engine::fail(errc::invalid_input,
                        file.string() + ": not a torch baselines file (its \"format\" is not \"" +
                            std::string(format_name) + "\"); tools/torch_baselines.py writes one");
  const json::value* version = o.if_contains("version");
  if (version == nullptr || !version->is_int64() || version->get_int64() != 1)
    p.add("version", "not 1 (this kernelskill reads version 1 of the baselines file)");
  out.device = text_of(o, "device", "", p, true);
  out.torch_version = text_of(o, "torch_version", "", p);
  out.date = text_of(o, "date", "", p);
  if (std::string source = text_of(o, "source", "", p); !source.empty())
    out.source = source;
  out.compile_mode = "default";
  if (const json::value* m = o.if_contains("method"); m && m->is_object())
    if (std::string mode = text_of(m->get_object(), "compile_mode", "method", p); !mode.empty())
      out.compile_mode = mode;
  const json::value* tasks = o.if_contains("tasks");
  if (tasks == nullptr || !tasks->is_object()) {
    p.add("tasks", tasks ? "not an object (task name -> baseline)" : "missing");
  } else {
    for (const auto& member : tasks->get_object())
      out.tasks.emplace(std::string(member.key()),
                        baseline_of(member.value(), "tasks." + path_key(member.key()), p));
  }
  if (!p.lines.empty()) {
    std::string message;
    for (const std::string& line : p.lines)
      message += (message.empty() ? "" : "\n") + line;
    return engine::fail(errc::invalid_input, message);
  }
  return out;
}

engine::expected<torch_baselines> read_torch_baselines(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec))
    return engine::fail(errc::not_found, file.string() + ": no such baselines file");
  if (fs::is_directory(file, ec))
    return engine::fail(errc::invalid_input, file.string() + ": a folder, not a baselines file");
  std::optional<std::string> text = base::read_text(file);
  if (!text)
    return engine::fail(errc::io, file.string() + ": cannot read the baselines file");
  return parse_torch_baselines(*text, file);
}

engine::expected<std::optional<torch_baselines>>
read_campaign_baselines(const fs::path& output_dir) {
  fs::path copy = output_dir / campaign_baselines_file;
  std::error_code ec;
  if (!fs::exists(copy, ec))
    return std::optional<torch_baselines>{};
  auto read = read_torch_baselines(copy);
  if (!read)
    return tl::unexpected(read.error());
  return std::optional<torch_baselines>(std::move(*read));
}

engine::expected<void> write_campaign_baselines(const fs::path& output_dir,
                                                const torch_baselines* b) {
  fs::path copy = output_dir / campaign_baselines_file;
  std::error_code ec;
  if (b == nullptr) {
    fs::remove(copy, ec);
    if (ec)
      return engine::fail(errc::io, "cannot remove " + copy.string() + ": " + ec.message());
    return {};
  }
  fs::path temporary = output_dir / ("." + std::string(campaign_baselines_file) + ".tmp");
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << torch_baselines_json(*b);
    out.flush();
    if (!out)
      return engine::fail(errc::io, "cannot write " + temporary.string());
  }
  fs::rename(temporary, copy, ec);
  if (ec)
    return engine::fail(errc::io, "cannot rename " + temporary.string() + " to " + copy.string() +
                                      ": " + ec.message());
  return {};
}

std::string torch_baselines_json(const torch_baselines& b) {
  json::object tasks;
  for (const auto& [name, t] : b.tasks) {
    json::object entry;
    if (!t.inputs.empty())
      entry["inputs"] = t.inputs;
    if (!t.torch.empty())
      entry["torch"] = t.torch;
    if (!t.error.empty()) {
      entry["error"] = t.error;
    } else {
      entry["eager"] = timing_json(t.eager);
      entry["compile"] = timing_json(t.compiled);
      if (t.max_abs_diff)
        entry["max_abs_diff_eager_compile"] = *t.max_abs_diff;
    }
    tasks[name] = std::move(entry);
  }
  json::object doc{{"format", format_name},
                   {"version", 1},
                   {"device", b.device},
                   {"torch_version", b.torch_version},
                   {"date", b.date},
                   {"method", json::object{{"compile_mode", b.compile_mode}}},
                   {"source", b.source.string()},
                   {"tasks", std::move(tasks)}};
  return encode::serialize(doc) + "\n";
}

std::string tensor_signature(const std::vector<engine::tensor_spec>& specs) {
  std::string out;
  for (const engine::tensor_spec& s : specs) {
    if (!out.empty())
      out += ",";
    out += s.name + ":" + engine::to_string(s.type) + "[";
    for (size_t i = 0; i < s.shape.size(); ++i)
      out += (i ? "," : "") + std::to_string(s.shape[i]);
    out += "]";
  }
  return out;
}

std::vector<std::string> check_shapes(torch_baselines& b, const std::vector<engine::task>& tasks) {
  std::vector<std::string> warnings;
  for (const engine::task& t : tasks) {
    auto it = b.tasks.find(t.name);
    if (it == b.tasks.end() || it->second.inputs.empty() || !it->second.error.empty())
      continue;
    std::string own = tensor_signature(t.inputs);
    if (it->second.inputs == own)
      continue;
    std::string why = "timed with inputs " + it->second.inputs + ", the task has " + own;
    warnings.push_back(t.name + ": its torch baseline in " + b.source.string() + " was " + why +
                       "; not compared");
    it->second.error = why;
  }
  return warnings;
}

std::string device_mismatch(const torch_baselines& b, const std::vector<std::string>& gpu_names) {
  std::string others;
  for (const std::string& name : gpu_names)
    if (name != b.device && others.find("\"" + name + "\"") == std::string::npos)
      others += (others.empty() ? "\"" : ", \"") + name + "\"";
  if (others.empty())
    return {};
  return "the torch baselines in " + b.source.string() + " were measured on \"" + b.device +
         "\", this campaign runs on " + others +
         ": the vs eager and vs compile columns compare times of different GPUs";
}

torch_comparison compare_with_torch(const torch_baselines* b, const std::string& task,
                                    double best_ms, const engine::timing* best_spread) {
  torch_comparison c;
  if (b == nullptr)
    return c;
  auto it = b->tasks.find(task);
  if (it == b->tasks.end()) {
    c.note = "not in the baselines file";
    return c;
  }
  const torch_baseline& t = it->second;
  if (!t.error.empty()) {
    c.note = t.error;
    return c;
  }
  if (t.eager.measured())
    c.eager_ms = t.eager.median_ms;
  if (t.compiled.measured())
    c.compile_ms = t.compiled.median_ms;
  if (best_ms > 0) {
    c.speedup_vs_eager = c.eager_ms > 0 ? c.eager_ms / best_ms : 0;
    c.speedup_vs_compile = c.compile_ms > 0 ? c.compile_ms / best_ms : 0;
    double best_p10 = best_ms;
    if (best_spread != nullptr && best_spread->measured() && best_spread->p10_ms > 0)
      best_p10 = best_ms * std::min(1.0, best_spread->p10_ms / best_spread->median_ms);
    auto trails = [best_p10](const torch_timing& torch) {
      double torch_p90 = std::max(torch.p90_ms, torch.median_ms);
      return torch.measured() && best_p10 > torch_p90;
    };
    c.trails_eager_beyond_noise = trails(t.eager);
    c.trails_compile_beyond_noise = trails(t.compiled);
  }
  if (!t.eager.measured())
    c.note = "eager: " + t.eager.error;
  if (!t.compiled.measured())
    c.note += (c.note.empty() ? "" : "; ") + std::string("compile: ") + t.compiled.error;
  return c;
}

double geometric_mean(const std::vector<double>& ratios) {
  double log_sum = 0;
  int64_t count = 0;
  for (double r : ratios)
    if (r > 0 && std::isfinite(r)) {
      log_sum += std::log(r);
      ++count;
    }
  return count == 0 ? 0 : std::exp(log_sum / static_cast<double>(count));
}

} // namespace ks::report
