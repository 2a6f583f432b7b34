#include "report/report_format.hpp"
#include "report/report_parts.hpp"

#include <boost/json.hpp>

namespace ks::report {

namespace json = boost::json;

namespace {

const json::object* node_with_id(const json::object& task, int64_t id) {
  for (const json::value& v : array_at(task, "nodes"))
    if (v.is_object() && static_cast<int64_t>(number_at(v.get_object(), "id")) == id)
      return &v.get_object();
  return nullptr;
}

void fact(markup& m, std::string_view term, const std::string& value) {
  m.element("dt", {}, term);
  m.element("dd", {}, value);
}

void write_facts(markup& m, const json::object& task) {
  const json::object* reference = object_at(task, "reference");
  const json::object* winner = object_at(task, "winner");
  m.open("dl", {{"class", "facts"}});
  std::string state = string_at(task, "state");
  if (std::string reason = string_at(task, "stop_reason"); !reason.empty())
    state += " (" + reason +
             (string_at(task, "stop_text").empty() ? "" : ": " + string_at(task, "stop_text")) +
             ")";
  fact(m, "state", state);
  if (reference != nullptr) {
    fact(m, "reference", format_ms(number_at(*reference, "median_ms")));
    if (number_at(*reference, "flops") > 0 || number_at(*reference, "bytes") > 0)
      fact(m, "cost",
           number(number_at(*reference, "flops"), 4) + " FLOP, " +
               number(number_at(*reference, "bytes"), 4) + " bytes at least");
  }
  if (winner != nullptr) {
    const json::value* declared = winner->if_contains("declared");
    const bool final = declared != nullptr && declared->is_bool() && declared->get_bool();
    fact(
        m, "best",
        format_ms(number_at(*winner, "median_ms")) + ", node " +
            number(number_at(*winner, "node"), 8) +
            (final ? " (the winner, re-timed in the finals)" : " (best so far, not yet re-timed)"));
    fact(m, "speedup", format_ratio(number_at(*winner, "speedup"), "x") + " the reference");
    fact(m, "roofline",
         format_percent(number_at(*winner, "fraction_of_roofline")) +
             (reference != nullptr && number_at(*reference, "roofline_floor_ms") > 0
                  ? " (floor " + format_ms(number_at(*reference, "roofline_floor_ms")) + ")"
                  : std::string()));
  }
  if (number_at(task, "torch_eager_ms") > 0 || number_at(task, "torch_compile_ms") > 0)
    fact(m, "torch",
         "eager " + format_ms(number_at(task, "torch_eager_ms")) + " (" +
             format_ratio(number_at(task, "speedup_vs_eager"), "x") + "), torch.compile " +
             format_ms(number_at(task, "torch_compile_ms")) + " (" +
             format_ratio(number_at(task, "speedup_vs_compile"), "x") + ")");
  std::string counts;
  if (const json::object* c = object_at(task, "counts"))
    for (const auto& [status, count] : *c)
      if (count.is_number() && count.to_number<double>() > 0)
        counts += (counts.empty() ? "" : ", ") + std::string(status) + " " +
                  number(count.to_number<double>(), 8);
  fact(m, "nodes",
       std::to_string(array_at(task, "nodes").size()) +
           (counts.empty() ? "" : " (" + counts + ")"));
  m.close();
}

// Writes the analyst's verdict on the winner, its evidence and the counters behind it.
void write_diagnosis(markup& m, const json::object& task) {
  const json::object* winner = object_at(task, "winner");
  if (winner == nullptr)
    return;
  const json::object* node = node_with_id(task, static_cast<int64_t>(number_at(*winner, "node")));
  const json::object* diagnosis = node != nullptr ? object_at(*node, "diagnosis") : nullptr;
  m.element("h4", {}, "Counter diagnosis of the winner");
  if (diagnosis == nullptr) {
    m.element("p", {}, "The winner was not profiled ([search] profile).");
    return;
  }
  std::string bound = string_at(*diagnosis, "bound");
  m.open("p");
  m.element("strong", {}, bound.empty() ? "undiagnosed" : bound);
  m.text(": " + string_at(*diagnosis, "text"));
  m.close();
  if (const json::array& evidence = array_at(*diagnosis, "evidence"); !evidence.empty()) {
    m.open("table");
    m.element("caption", {}, "The evidence for the verdict");
    m.open("thead").open("tr");
    for (std::string_view h : {"metric", "value", "relation", "threshold"})
      m.element("th", {{"scope", "col"}}, h);
    m.close().close().open("tbody");
    for (const json::value& e : evidence) {
      if (!e.is_object())
        continue;
      const json::object& o = e.get_object();
      m.open("tr");
      m.element("th", {{"scope", "row"}}, string_at(o, "metric"));
      m.element("td", {{"class", "num"}}, number(number_at(o, "value"), 4));
      m.element("td", {}, string_at(o, "relation"));
      m.element("td", {{"class", "num"}}, number(number_at(o, "threshold"), 4));
      m.close();
    }
    m.close().close();
  }
  if (const json::object* hardware = object_at(*diagnosis, "hardware")) {
    m.open("details");
    m.element("summary", {}, "Hardware counters of its hottest kernel");
    m.open("table").open("tbody");
    for (const auto& [key, value] : *hardware) {
      if (!value.is_number() && !value.is_string())
        continue;
      m.open("tr");
      m.element("th", {{"scope", "row"}}, key);
      m.element("td", {},
                value.is_number() ? number(value.to_number<double>(), 5)
                                  : std::string(value.get_string()));
      m.close();
    }
    m.close().close().close();
  }
}

} // namespace

void write_task_section(markup& m, const json::object& task,
                        const std::map<std::string, std::string>& sources, bool dry_run,
                        const std::vector<final_round>* rounds) {
  const std::string name = string_at(task, "name");
  const std::string id = "task-" + id_part(name);
  m.open("section", {{"id", id}, {"class", "task"}, {"aria-labelledby", id + "-h"}});
  m.element("h3", {{"id", id + "-h"}}, name);
  write_facts(m, task);
  m.element("h4", {}, "Search tree");
  write_search_tree(m, task, id);
  if (dry_run) {
    m.open("details", {{"open", "open"}});
    m.element("summary", {}, "What the dry run did");
    std::string lines;
    for (const json::value& line : array_at(task, "dry_run_lines"))
      if (line.is_string())
        lines += std::string(line.get_string()) + "\n";
    m.element("pre", {}, lines);
    m.close();
    m.close();
    return;
  }
  m.element("h4", {}, "Search progress");
  write_progress_plot(m, task, id);
  write_spread_plot(m, task, id, rounds);
  write_diagnosis(m, task);
  if (auto source = sources.find(name); source != sources.end()) {
    const json::object* winner = object_at(task, "winner");
    m.open("details");
    m.element("summary", {},
              "The winner's source (" + (winner != nullptr ? string_at(*winner, "file") : "") +
                  ")");
    m.open("pre").element("code", {}, source->second).close();
    m.close();
  }
  m.close();
}

} // namespace ks::report
