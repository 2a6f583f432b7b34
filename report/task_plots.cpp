// Two plots of a task's search. The progress plot: every timed candidate's median against the
// number of candidates tried so far (node ids count them: nodes are numbered as they are
// planned), and the best accepted time so far as a step line, Kernel Tuner's and the
// autotuners' tuning curve. The spread plot: the fastest accepted candidates and the reference,
// each as its median between the 10th and 90th percentiles of its trials, so that a gain
// smaller than the spread shows as such; the winner's median from the interleaved finals sits
// beside its own as a diamond. The finals' per-round samples are not stored, so the spread is
// each candidate's own timing's.

#include "report/plot_axis.hpp"
#include "report/report_format.hpp"
#include "report/report_parts.hpp"

#include <boost/json/value.hpp>

#include <algorithm>

namespace ks::report {

namespace json = boost::json;

namespace {

/// Returns the axis for times from `min_ms` to `max_ms`: by decades when they span more than
/// 20x, else linear from 0, where differences read as they are.
axis time_axis(double min_ms, double max_ms, double from, double to) {
  if (max_ms > 20 * min_ms)
    return log_axis(min_ms / 1.5, max_ms * 1.5, from, to);
  return linear_axis(0, max_ms * 1.1, from, to);
}

struct timed_node {
  int64_t id = 0;
  const json::object* node = nullptr;
  double ms = 0;
};

std::vector<timed_node> timed_nodes(const json::object& task) {
  std::vector<timed_node> out;
  for (const json::value& v : array_at(task, "nodes"))
    if (v.is_object())
      if (double ms = median_of(v.get_object()); ms > 0)
        out.push_back({static_cast<int64_t>(number_at(v.get_object(), "id")), &v.get_object(), ms});
  std::sort(out.begin(), out.end(),
            [](const timed_node& a, const timed_node& b) { return a.id < b.id; });
  return out;
}

std::string plan_key_of(const json::object& n) {
  const json::object* plan = object_at(n, "plan");
  std::string key = plan != nullptr ? string_at(*plan, "key") : std::string();
  return key.empty() ? std::string("the reference") : key;
}

} // namespace

void write_progress_plot(markup& m, const json::object& task, const std::string& id) {
  std::vector<timed_node> timed = timed_nodes(task);
  if (timed.empty())
    return;
  int64_t tried = 0;
  for (const json::value& v : array_at(task, "nodes"))
    if (v.is_object())
      tried = std::max(tried, static_cast<int64_t>(number_at(v.get_object(), "id")));
  double min_ms = timed.front().ms;
  double max_ms = timed.front().ms;
  for (const timed_node& t : timed) {
    min_ms = std::min(min_ms, t.ms);
    max_ms = std::max(max_ms, t.ms);
  }
  plot_frame frame;
  axis x = linear_axis(0, static_cast<double>(std::max<int64_t>(tried, 1)), frame.plot_left(),
                       frame.plot_right());
  axis y = time_axis(min_ms, max_ms, frame.plot_bottom(), frame.plot_top());
  plot_text text;
  text.id = id + "-progress";
  text.kind = "progress";
  text.title = "Best time against candidates tried, " + string_at(task, "name");
  text.description = std::to_string(timed.size()) + " timed node(s) of " +
                     std::to_string(tried + 1) +
                     "; the step line is the best accepted time so far, from " +
                     format_ms(timed.front().ms) + " (the reference) to " + format_ms(min_ms) + ".";
  text.x_label = "candidates tried (node id)";
  text.y_label = std::string("median time (ms") + (y.logarithmic ? ", log)" : ")");
  m.open("figure");
  open_plot(m, text, frame, x, y);

  // The best accepted time so far, as a step line over the ids.
  std::string steps;
  double best = 0;
  for (const timed_node& t : timed) {
    if (string_at(*t.node, "status") != "accepted" || (best > 0 && t.ms >= best))
      continue;
    if (best > 0)
      steps += coordinate(x.at(static_cast<double>(t.id))) + "," + coordinate(y.at(best)) + " ";
    best = t.ms;
    steps += coordinate(x.at(static_cast<double>(t.id))) + "," + coordinate(y.at(best)) + " ";
  }
  if (best > 0) {
    steps += coordinate(x.at(x.hi)) + "," + coordinate(y.at(best));
    m.element("polyline", {{"class", "best-so-far"}, {"points", steps}});
  }
  for (const timed_node& t : timed) {
    m.open("g", {{"class", "point g-" + std::string(status_group(*t.node))}});
    m.element("title", {},
              "node " + std::to_string(t.id) + ": " + plan_key_of(*t.node) + ", " +
                  format_ms(t.ms) + ", " + string_at(*t.node, "status"));
    m.element("circle", {{"cx", coordinate(x.at(static_cast<double>(t.id)))},
                         {"cy", coordinate(y.at(t.ms))},
                         {"r", "4"}});
    m.close();
  }
  m.close();
  m.element("figcaption", {}, text.title + ": " + text.description);
  m.close();
}

std::map<std::string, std::vector<final_round>>
final_rounds_of(const std::vector<trace_run>& trace) {
  std::map<std::string, std::vector<final_round>> all;
  for (const trace_run& run : trace) {
    std::map<std::string, std::vector<final_round>> this_run;
    for (const trace_job& j : run.jobs) {
      constexpr std::string_view tail = " (final)";
      const std::string& label = j.label;
      if (j.purpose != "final_round" || !j.ok || !(j.median_ms > 0) ||
          label.size() <= tail.size() ||
          label.compare(label.size() - tail.size(), tail.size(), tail) != 0)
        continue;
      const size_t hash = label.rfind('#');
      if (hash == std::string::npos)
        continue;
      const std::string digits = label.substr(hash + 1, label.size() - tail.size() - hash - 1);
      if (digits.empty() || digits.size() > 12 ||
          digits.find_first_not_of("0123456789") != std::string::npos)
        continue;
      this_run[j.task].push_back(final_round{std::stoll(digits), j.gpu, j.median_ms});
    }
    for (auto& [task, rounds] : this_run)
      all[task] = std::move(rounds);
  }
  return all;
}

void write_spread_plot(markup& m, const json::object& task, const std::string& id,
                       const std::vector<final_round>* rounds) {
  std::vector<timed_node> timed = timed_nodes(task);
  const json::object* winner = object_at(task, "winner");
  const auto winner_id = winner != nullptr ? static_cast<int64_t>(number_at(*winner, "node")) : -1;
  const double final_ms = winner != nullptr && winner->contains("declared") &&
                                  winner->at("declared").is_bool() &&
                                  winner->at("declared").get_bool()
                              ? number_at(*winner, "median_ms")
                              : 0;
  // The reference, then the fastest accepted candidates (the winner always among them).
  std::vector<timed_node> rows;
  std::vector<timed_node> accepted;
  for (const timed_node& t : timed) {
    if (t.id == 0)
      rows.push_back(t);
    else if (string_at(*t.node, "status") == "accepted")
      accepted.push_back(t);
  }
  std::sort(accepted.begin(), accepted.end(),
            [](const timed_node& a, const timed_node& b) { return a.ms < b.ms; });
  constexpr size_t shown = 6;
  for (size_t i = 0; i < accepted.size(); ++i)
    if (i < shown || accepted[i].id == winner_id)
      rows.push_back(accepted[i]);
  if (rows.empty())
    return;
  double lo = 1e300;
  double hi = 0;
  for (const timed_node& r : rows) {
    const json::object* timing = object_at(*r.node, "timing");
    lo = std::min({lo, r.ms, timing != nullptr ? number_at(*timing, "p10_ms") : r.ms});
    hi = std::max({hi, r.ms, timing != nullptr ? number_at(*timing, "p90_ms") : r.ms});
  }
  if (final_ms > 0) {
    lo = std::min(lo, final_ms);
    hi = std::max(hi, final_ms);
  }
  // Each shown finalist's rounds in the finals.
  std::map<int64_t, std::vector<double>> rounds_of;
  if (rounds != nullptr)
    for (const final_round& r : *rounds)
      for (const timed_node& row : rows)
        if (row.id == r.node) {
          rounds_of[r.node].push_back(r.ms);
          lo = std::min(lo, r.ms);
          hi = std::max(hi, r.ms);
        }
  plot_frame frame;
  frame.left = 200;
  constexpr double row_height = 26;
  frame.height = frame.top + frame.bottom + row_height * static_cast<double>(rows.size());
  axis x = time_axis(std::max(lo, 1e-9), hi, frame.plot_left(), frame.plot_right());
  axis y = linear_axis(0, static_cast<double>(rows.size()), frame.plot_top(), frame.plot_bottom());
  plot_text text;
  text.id = id + "-spread";
  text.kind = "spread";
  text.title = "The fastest candidates and their spread, " + string_at(task, "name");
  text.description = "the reference and up to " + std::to_string(shown) +
                     " fastest accepted candidates, each its median (dot) between the 10th and "
                     "90th percentiles of its trials (bar)" +
                     (final_ms > 0 ? "; the winner's median from the interleaved finals, " +
                                         format_ms(final_ms) + ", as a diamond"
                                   : "") +
                     (rounds_of.empty() ? "."
                                        : "; each finalist's rounds in the finals (re-timed in "
                                          "turn with the others) as ticks under its bar.");
  text.x_label = std::string("time (ms") + (x.logarithmic ? ", log)" : ")");
  text.y_label = "";
  m.open("figure");
  open_figure(m, text, frame);
  draw_axes(m, text, frame, x, y, false);
  for (size_t i = 0; i < rows.size(); ++i) {
    const timed_node& r = rows[i];
    const double cy = frame.plot_top() + row_height * (static_cast<double>(i) + 0.5);
    const json::object* timing = object_at(*r.node, "timing");
    const double p10 = timing != nullptr ? number_at(*timing, "p10_ms") : r.ms;
    const double p90 = timing != nullptr ? number_at(*timing, "p90_ms") : r.ms;
    std::string label = r.id == 0 ? "reference" : "node " + std::to_string(r.id);
    if (r.id == winner_id)
      label += " (winner)";
    m.element("text",
              {{"x", coordinate(frame.plot_left() - 8)},
               {"y", coordinate(cy)},
               {"text-anchor", "end"},
               {"dominant-baseline", "middle"}},
              label);
    m.open("g", {{"class", std::string("point spread") + (r.id == winner_id ? " winner" : "")}});
    m.element("title", {},
              label + ": " + plan_key_of(*r.node) + ", median " + format_ms(r.ms) + ", p10 " +
                  format_ms(p10) + ", p90 " + format_ms(p90));
    m.element("line", {{"x1", coordinate(x.at(p10))},
                       {"x2", coordinate(x.at(p90))},
                       {"y1", coordinate(cy)},
                       {"y2", coordinate(cy)}});
    m.element("circle", {{"cx", coordinate(x.at(r.ms))}, {"cy", coordinate(cy)}, {"r", "4.5"}});
    m.close();
    if (auto mine = rounds_of.find(r.id); mine != rounds_of.end()) {
      std::string times;
      for (double ms : mine->second)
        times += (times.empty() ? "" : ", ") + format_ms(ms);
      m.open("g", {{"class", "point round"}});
      m.element("title", {},
                label + ": " + std::to_string(mine->second.size()) +
                    " rounds in the finals: " + times);
      for (double ms : mine->second)
        m.element("line", {{"x1", coordinate(x.at(ms))},
                           {"x2", coordinate(x.at(ms))},
                           {"y1", coordinate(cy + 5)},
                           {"y2", coordinate(cy + 11)}});
      m.close();
    }
    if (r.id == winner_id && final_ms > 0) {
      m.open("g", {{"class", "point final"}});
      m.element("title", {}, "the winner's median in the finals: " + format_ms(final_ms));
      const double fx = x.at(final_ms);
      m.element("path",
                {{"d", "M" + coordinate(fx) + " " + coordinate(cy - 7) + " l7 7 l-7 7 l-7 -7 z"}});
      m.close();
    }
  }
  m.close();
  m.element("figcaption", {}, text.title + ": " + text.description);
  m.close();
}

} // namespace ks::report
