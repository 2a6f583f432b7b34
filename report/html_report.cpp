#include "report/html_report.hpp"

#include "base/text.hpp"
#include "report/atomic_file.hpp"
#include "report/node_json.hpp"
#include "report/page_style.hpp"
#include "report/report_format.hpp"
#include "report/report_parts.hpp"

#include <boost/json.hpp>

#include <initializer_list>

namespace ks::report {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// The policy forbids every request: a report opened from a mail or a shared folder loads
// nothing, and a test sees any attempt as a console error.
constexpr std::string_view content_policy =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

bool is_dry_run(const json::object& results) {
  const json::value* v = results.if_contains("dry_run");
  return v != nullptr && v->is_bool() && v->get_bool();
}

const json::object* winner_of(const json::object& task) {
  return object_at(task, "winner");
}

std::string task_anchor(const json::object& task) {
  return "task-" + id_part(string_at(task, "name"));
}

// -- the speedup table -------------------------------------------------------------------------

void sortable_head(markup& m, std::string_view label, bool numeric) {
  m.open("th", {{"scope", "col"}, {"aria-sort", "none"}, {"class", numeric ? "num" : ""}});
  m.element("button", {{"type", "button"}}, label);
  m.close();
}

void cell(markup& m, const std::string& shown, double sort_value) {
  m.element("td", {{"class", "num"}, {"data-sort", sort_value > 0 ? number(sort_value, 10) : ""}},
            shown);
}

// A dry run times nothing: its table counts each task's candidates instead of its times.
// Opens the per-task table: its caption, the task and state columns, then `numeric` ones.
void open_task_table(markup& m, std::string_view caption,
                     std::initializer_list<std::string_view> numeric) {
  m.open("table", {{"class", "sortable"}, {"id", "speedups"}});
  m.element("caption", {}, caption);
  m.open("thead").open("tr");
  sortable_head(m, "task", false);
  sortable_head(m, "state", false);
  for (std::string_view h : numeric)
    sortable_head(m, h, true);
  m.close().close();
  m.open("tbody");
}

// Opens a task's row with its name (a link to its section) and its state.
void open_task_row(markup& m, const json::object& task) {
  m.open("tr");
  m.open("th", {{"scope", "row"}, {"data-sort", string_at(task, "name")}});
  m.element("a", {{"href", "#" + task_anchor(task)}}, string_at(task, "name"));
  m.close();
  m.element("td", {{"data-sort", string_at(task, "state")}}, string_at(task, "state"));
}

void write_dry_run_table(markup& m, const json::object& results) {
  open_task_table(m, "The round each task would start with (nothing was timed)",
                  {"candidates", "compiled", "not compiled"});
  for (const json::value& v : array_at(results, "tasks")) {
    if (!v.is_object())
      continue;
    const json::object& task = v.get_object();
    int64_t candidates = 0;
    int64_t compiled = 0;
    for (const json::value& n : array_at(task, "nodes"))
      if (n.is_object() && number_at(n.get_object(), "id") > 0) {
        ++candidates;
        compiled += string_at(n.get_object(), "status") == "compiled" ? 1 : 0;
      }
    open_task_row(m, task);
    for (int64_t count : {candidates, compiled, candidates - compiled})
      m.element("td", {{"class", "num"}, {"data-sort", std::to_string(count)}},
                std::to_string(count));
    m.close();
  }
  m.close().close();
}

void write_speedup_table(markup& m, const json::object& results) {
  open_task_table(m, "Speedups per task; a column's button sorts by it",
                  {"reference", "best", "speedup", "vs eager", "vs compile", "roofline", "nodes"});
  for (const json::value& v : array_at(results, "tasks")) {
    if (!v.is_object())
      continue;
    const json::object& task = v.get_object();
    const json::object* reference = object_at(task, "reference");
    const json::object* winner = winner_of(task);
    const double reference_ms = reference != nullptr ? number_at(*reference, "median_ms") : 0;
    const double best_ms = winner != nullptr ? number_at(*winner, "median_ms") : 0;
    const double speedup = winner != nullptr ? number_at(*winner, "speedup") : 0;
    const double roofline = winner != nullptr ? number_at(*winner, "fraction_of_roofline") : 0;
    open_task_row(m, task);
    cell(m, format_ms(reference_ms), reference_ms);
    cell(m, format_ms(best_ms), best_ms);
    cell(m, format_ratio(speedup, "x"), speedup);
    cell(m, format_ratio(number_at(task, "speedup_vs_eager"), "x"),
         number_at(task, "speedup_vs_eager"));
    cell(m, format_ratio(number_at(task, "speedup_vs_compile"), "x"),
         number_at(task, "speedup_vs_compile"));
    cell(m, format_percent(roofline), roofline);
    const auto nodes = static_cast<double>(array_at(task, "nodes").size());
    cell(m, std::to_string(array_at(task, "nodes").size()), nodes);
    m.close();
  }
  m.close();
  if (const json::object* g = object_at(results, "geomeans")) {
    m.open("tfoot").open("tr");
    m.element("th", {{"scope", "row"}}, "geomean");
    m.element("td", {}, "");
    m.element("td", {}, "");
    m.element("td", {}, "");
    m.element("td", {{"class", "num"}}, format_ratio(number_at(*g, "speedup"), "x"));
    m.element("td", {{"class", "num"}}, format_ratio(number_at(*g, "speedup_vs_eager"), "x"));
    m.element("td", {{"class", "num"}}, format_ratio(number_at(*g, "speedup_vs_compile"), "x"));
    m.element("td", {}, "");
    m.element("td", {}, "");
    m.close().close();
  }
  m.close();
  m.element("p", {{"class", "muted"}},
            "speedup: the best kernel's median time against the task's reference kernel on the "
            "same GPU; vs eager and vs compile: torch's medians over the best kernel's (the "
            "campaign's torch baselines); roofline: the task's roofline floor over the best "
            "time. Geomeans are over the tasks that have the ratio.");
}

// -- warnings, environment, config, budgets -----------------------------------------------------

std::vector<std::string> warnings_of(const json::object& results) {
  std::vector<std::string> out;
  if (is_dry_run(results))
    out.emplace_back("A dry run: the references and one round of candidates were compiled; "
                     "nothing was verified or timed, and nothing was saved.");
  if (const json::object* torch = object_at(results, "torch_baselines"))
    if (std::string note = string_at(*torch, "device_note"); !note.empty())
      out.push_back("Torch baselines: " + note + ".");
  for (const json::value& v : array_at(results, "tasks")) {
    if (!v.is_object())
      continue;
    const json::object& task = v.get_object();
    const std::string name = string_at(task, "name");
    if (string_at(task, "state") == "failed")
      out.push_back(name + " failed: " + string_at(task, "stop_reason") + " " +
                    string_at(task, "stop_text"));
    if (const json::object* winner = winner_of(task))
      if (const json::array& used = array_at(*winner, "vendor_libraries"); !used.empty())
        out.push_back(name + "'s winner uses a vendor library: its time is not its own kernels' "
                             "alone (bench.allow_vendor_libraries).");
    if (std::string note = string_at(task, "torch_note"); !note.empty())
      out.push_back(name + ": " + note + ".");
  }
  if (const json::object* llm = object_at(results, "llm"))
    if (std::string spent = string_at(*llm, "budget_spent"); !spent.empty())
      out.push_back("Model budget: " + spent + ".");
  // The campaign's own warnings: the GPUs' stability (report/gpu_stability.hpp).
  for (const json::value& w : array_at(results, "warnings"))
    if (w.is_string())
      out.emplace_back(w.get_string());
  return out;
}

void fact(markup& m, std::string_view term, const std::string& value) {
  if (value.empty())
    return;
  m.element("dt", {}, term);
  m.element("dd", {}, value);
}

void write_environment(markup& m, const json::object& results) {
  const json::object* campaign = object_at(results, "campaign");
  const json::object* env = campaign != nullptr ? object_at(*campaign, "environment") : nullptr;
  m.open("dl", {{"class", "facts"}});
  if (env != nullptr) {
    fact(m, "host", string_at(*env, "host"));
    fact(m, "CUDA arch", string_at(*env, "arch"));
    fact(m, "nvcc", string_at(*env, "nvcc"));
  }
  if (const json::object* torch = object_at(results, "torch_baselines"))
    fact(m, "torch baselines",
         "torch " + string_at(*torch, "torch_version") + " on " + string_at(*torch, "device") +
             ", " + string_at(*torch, "date") + ", torch.compile mode " +
             string_at(*torch, "compile_mode") + " (" + string_at(*torch, "file") + ")");
  if (const json::object* llm = object_at(results, "llm"))
    fact(m, "model", string_at(*llm, "backend") + " " + string_at(*llm, "model"));
  m.close();
  if (env == nullptr || array_at(*env, "gpus").empty()) {
    m.element("p", {}, "No GPU was read (a dry run, or a campaign that has not started).");
    return;
  }
  m.open("table");
  m.element("caption", {}, "The GPUs as read at the start, and their measured peaks");
  m.open("thead").open("tr");
  for (std::string_view h : {"GPU", "name", "cc", "SMs", "memory", "SM clock", "memory clock",
                             "driver", "runtime", "DRAM (measured)", "FP32 (measured)"})
    m.element("th", {{"scope", "col"}}, h);
  m.close().close().open("tbody");
  for (const json::value& v : array_at(*env, "gpus")) {
    if (!v.is_object())
      continue;
    const json::object& g = v.get_object();
    const json::object* calibration = object_at(g, "calibration");
    m.open("tr");
    m.element("th", {{"scope", "row"}}, number(number_at(g, "index"), 6));
    m.element("td", {}, string_at(g, "name"));
    m.element("td", {}, string_at(g, "cc"));
    m.element("td", {}, number(number_at(g, "sms"), 6));
    m.element("td", {}, number(number_at(g, "memory_bytes") / (1024.0 * 1024 * 1024), 4) + " GiB");
    m.element("td", {}, number(number_at(g, "sm_clock_khz") / 1000, 5) + " MHz");
    m.element("td", {}, number(number_at(g, "mem_clock_khz") / 1000, 5) + " MHz");
    m.element("td", {}, number(number_at(g, "driver_version"), 8));
    m.element("td", {}, number(number_at(g, "runtime_version"), 8));
    m.element("td", {},
              calibration != nullptr ? number(number_at(*calibration, "dram_gbps"), 5) + " GB/s"
                                     : "-");
    m.element("td", {},
              calibration != nullptr
                  ? number(number_at(*calibration, "fp32_gflops"), 5) + " GFLOP/s"
                  : "-");
    m.close();
  }
  m.close().close();
}

void write_budgets(markup& m, const json::object& results, const std::vector<trace_run>& trace) {
  m.open("dl", {{"class", "facts"}});
  int64_t nodes = 0;
  int64_t in_flight = 0;
  for (const json::value& v : array_at(results, "tasks"))
    if (v.is_object()) {
      nodes += static_cast<int64_t>(array_at(v.get_object(), "nodes").size());
      in_flight += static_cast<int64_t>(number_at(v.get_object(), "in_flight"));
    }
  fact(m, "candidates",
       std::to_string(nodes) + " node(s) over " +
           std::to_string(array_at(results, "tasks").size()) + " task(s), " +
           std::to_string(in_flight) + " in flight");
  if (const json::object* campaign = object_at(results, "campaign"))
    fact(m, "runs",
         number(number_at(*campaign, "runs"), 6) + " (started " +
             string_at(*campaign, "started_at") + ")");
  double busy_s = 0;
  int64_t jobs = 0;
  for (const trace_run& run : trace)
    for (const trace_job& j : run.jobs) {
      busy_s += j.end_s - j.start_s;
      ++jobs;
    }
  if (jobs > 0)
    fact(m, "GPU time", number(busy_s, 4) + " s in " + std::to_string(jobs) + " bench job(s)");
  if (const json::object* llm = object_at(results, "llm"))
    fact(m, "model use",
         number(number_at(*llm, "requests"), 8) + " requests, " +
             number(number_at(*llm, "tokens"), 10) + " tokens, cost " +
             number(number_at(*llm, "cost"), 4) + " at the configured prices" +
             (string_at(*llm, "budget_spent").empty() ? ""
                                                      : "; " + string_at(*llm, "budget_spent")));
  m.close();
}

void write_page(markup& m, const report_input& input) {
  const json::object& results = input.results;
  const bool dry = is_dry_run(results);
  const json::object* campaign = object_at(results, "campaign");
  const std::string title = dry ? "kernelskill dry run" : "kernelskill campaign report";
  m.raw("<!DOCTYPE html>\n");
  m.open("html", {{"lang", "en"}});
  m.open("head");
  m.void_element("meta", {{"charset", "utf-8"}});
  m.void_element("meta", {{"http-equiv", "Content-Security-Policy"},
                          {"content", std::string(content_policy)}});
  m.void_element("meta",
                 {{"name", "viewport"}, {"content", "width=device-width, initial-scale=1"}});
  m.element("title", {}, title);
  m.open("style").raw(page_css).close();
  m.close(); // head
  m.open("body");
  m.open("header");
  m.element("h1", {}, title);
  if (campaign != nullptr)
    m.element("p", {{"class", "muted"}},
              "Started " + string_at(*campaign, "started_at") +
                  (dry ? "" : ", run " + number(number_at(*campaign, "runs"), 6) + " time(s)") +
                  "; " + std::to_string(array_at(results, "tasks").size()) + " task(s).");
  m.open("nav", {{"aria-label", "sections"}}).open("ul");
  for (auto [anchor, words] : std::initializer_list<std::pair<std::string_view, std::string_view>>{
           {"#summary", "speedups"},
           {"#roofline", "roofline"},
           {"#tasks", "tasks"},
           {"#timeline-section", "GPU timeline"},
           {"#environment", "environment"},
           {"#config", "config"}})
    m.open("li").element("a", {{"href", std::string(anchor)}}, words).close();
  m.close().close();
  m.close(); // header
  m.open("main");

  if (std::vector<std::string> warnings = warnings_of(results); !warnings.empty()) {
    m.open("section", {{"aria-labelledby", "warnings-h"}});
    m.element("h2", {{"id", "warnings-h"}}, "Warnings");
    m.open("ul", {{"class", "warnings"}});
    for (const std::string& w : warnings)
      m.element("li", {}, w);
    m.close().close();
  }

  m.open("section", {{"id", "summary"}});
  m.element("h2", {}, dry ? "Tasks" : "Speedups");
  if (dry)
    write_dry_run_table(m, results);
  else
    write_speedup_table(m, results);
  m.close();

  m.open("section", {{"id", "roofline"}});
  m.element("h2", {}, "Roofline per GPU");
  write_rooflines(m, results);
  m.close();

  m.open("section", {{"id", "tasks"}});
  m.element("h2", {}, "Tasks");
  const auto rounds = final_rounds_of(input.trace);
  for (const json::value& v : array_at(results, "tasks"))
    if (v.is_object()) {
      auto mine = rounds.find(string_at(v.get_object(), "name"));
      write_task_section(m, v.get_object(), input.winner_sources, dry,
                         mine != rounds.end() ? &mine->second : nullptr);
    }
  m.close();

  m.open("section", {{"id", "timeline-section"}});
  m.element("h2", {}, "GPU timeline");
  if (dry)
    m.element("p", {}, "A dry run runs no bench job.");
  else
    write_timeline(m, input.trace);
  m.close();

  m.open("section", {{"id", "environment"}});
  m.element("h2", {}, "Environment and budgets");
  write_environment(m, results);
  write_budgets(m, results, input.trace);
  m.close();

  m.open("section", {{"id", "config"}});
  m.element("h2", {}, "Config");
  const std::string config_text = campaign != nullptr ? string_at(*campaign, "config_text") : "";
  if (config_text.empty()) {
    m.element("p", {}, "The config's text is not in results.json (an older kernelskill wrote it).");
  } else {
    m.open("details");
    m.element("summary", {}, "The config as the campaign was started with it");
    m.open("pre").element("code", {}, config_text).close();
    m.close();
  }
  m.close();

  m.close(); // main
  m.open("footer");
  m.element("p", {{"class", "muted"}},
            "Written by kernelskill from results.json, best/ and the bench trace; one file, "
            "nothing fetched.");
  m.close();
  m.open("script").raw(page_script).close();
}

} // namespace

std::string render_report_html(const report_input& input) {
  markup m;
  write_page(m, input);
  return m.take() + "\n";
}

engine::expected<void> write_report_html(const fs::path& output_dir,
                                         const std::string& results_json) {
  boost::system::error_code ec;
  json::value doc = json::parse(results_json, ec);
  if (ec || !doc.is_object())
    return engine::fail(engine::errc::invalid_input,
                        "results.json in " + output_dir.string() + " is no JSON object");
  report_input input;
  input.results = std::move(doc.get_object());
  for (const json::value& v : array_at(input.results, "tasks")) {
    if (!v.is_object())
      continue;
    const json::object* winner = winner_of(v.get_object());
    const std::string file = winner != nullptr ? string_at(*winner, "file") : std::string();
    if (file.empty() || file.find("..") != std::string::npos)
      continue;
    if (std::optional<std::string> source = base::read_text(output_dir / file))
      input.winner_sources[string_at(v.get_object(), "name")] = std::move(*source);
  }
  input.trace = read_bench_trace(output_dir / bench_trace_file);
  return write_atomically(output_dir / report_html_file, render_report_html(input));
}

engine::expected<void> write_report_html(const fs::path& output_dir) {
  std::optional<std::string> text = base::read_text(output_dir / "results.json");
  if (!text)
    return engine::fail(engine::errc::not_found,
                        "no results.json in " + output_dir.string() +
                            " (a campaign's output folder holds one once it has started)");
  return write_report_html(output_dir, *text);
}

json::object dry_run_document(const dry_run_facts& facts, const std::vector<dry_run_task>& tasks) {
  json::array task_list;
  for (const dry_run_task& t : tasks) {
    json::array nodes;
    for (const engine::node_record& n : t.nodes)
      nodes.push_back(node_json(n, std::nullopt));
    json::array lines;
    for (const std::string& line : t.lines)
      lines.emplace_back(line);
    task_list.push_back(json::object{
        {"name", t.name},
        {"state", t.could_run ? "done" : "failed"},
        {"stop_reason", t.could_run ? "" : "error"},
        {"stop_text", t.why_not},
        {"reference", json::object{{"median_ms", 0}}},
        {"winner", nullptr},
        {"nodes", std::move(nodes)},
        {"dry_run_lines", std::move(lines)},
    });
  }
  return json::object{
      {"format", "kernelskill-results"},
      {"version", 1},
      {"dry_run", true},
      {"campaign", json::object{{"started_at", facts.started_at},
                                {"runs", 1},
                                {"environment", json::object{{"arch", facts.arch},
                                                             {"dry_run", true},
                                                             {"gpus", json::array{}}}},
                                {"config_text", facts.config_text},
                                {"interrupted", facts.interrupted}}},
      {"torch_baselines", nullptr},
      {"tasks", std::move(task_list)},
  };
}

} // namespace ks::report
