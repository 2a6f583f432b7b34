// Where each GPU's time went: the bench jobs of the campaign's last run as bars on one lane per
// GPU, coloured by purpose (verify, reference and branch timings, re-timings, final rounds,
// profiles), so that idle time shows as the gaps between them. Busy time is the sum of a
// lane's bars (a GPU's bench actor runs one job at a time, so they never overlap), idle time
// the rest of the run up to its last job's end.

#include "report/plot_axis.hpp"
#include "report/report_parts.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace ks::report {

namespace {

constexpr double lane_height = 30;

/// Returns the CSS class of a job's purpose: its name kept to letters and '_'.
std::string purpose_class(const std::string& purpose) {
  return "p-" + (purpose.empty() ? std::string("other") : id_part(purpose));
}

std::string seconds(double s) {
  return number(s, 4) + " s";
}

} // namespace

void write_timeline(markup& m, const std::vector<trace_run>& trace) {
  const trace_run* run = nullptr;
  for (const trace_run& r : trace)
    if (!r.jobs.empty())
      run = &r;
  if (run == nullptr) {
    m.element("p", {},
              "No bench job in the bench trace (bench-trace.jsonl): nothing ran on a GPU yet, "
              "or the campaign was written by a kernelskill that kept no trace.");
    return;
  }
  int32_t lanes = run->gpus;
  double span = 0;
  std::map<int32_t, double> busy;
  std::map<int32_t, int64_t> jobs;
  std::set<std::string> purposes;
  for (const trace_job& j : run->jobs) {
    lanes = std::max(lanes, j.gpu + 1);
    span = std::max(span, j.end_s);
    busy[j.gpu] += std::max(0.0, j.end_s - j.start_s);
    ++jobs[j.gpu];
    purposes.insert(j.purpose);
  }
  span = std::max(span, 1e-3);

  plot_frame frame;
  frame.width = 900;
  frame.left = 90;
  frame.height = frame.top + frame.bottom + lane_height * lanes;
  axis x = linear_axis(0, span, frame.plot_left(), frame.plot_right());
  axis y = linear_axis(0, lanes, frame.plot_top(), frame.plot_bottom());
  plot_text text;
  text.id = "timeline";
  text.kind = "timeline";
  text.title = "Bench jobs per GPU over time";
  text.description = std::to_string(run->jobs.size()) + " bench job(s) on " +
                     std::to_string(lanes) + " GPU(s) over " + seconds(span) +
                     " of the last run; bars are jobs, coloured by purpose, gaps are idle time; "
                     "the table below gives each GPU's busy and idle time.";
  text.x_label = "seconds since the run started";
  text.y_label = "";
  m.open("figure");
  open_figure(m, text, frame);
  draw_axes(m, text, frame, x, y, false);
  for (int32_t g = 0; g < lanes; ++g) {
    const double top = frame.plot_top() + lane_height * g;
    m.element("rect", {{"class", "lane"},
                       {"x", coordinate(frame.plot_left())},
                       {"y", coordinate(top + 3)},
                       {"width", coordinate(frame.plot_right() - frame.plot_left())},
                       {"height", coordinate(lane_height - 6)}});
    m.element("text",
              {{"x", coordinate(frame.plot_left() - 8)},
               {"y", coordinate(top + lane_height / 2)},
               {"text-anchor", "end"},
               {"dominant-baseline", "middle"}},
              "GPU " + std::to_string(g));
  }
  for (const trace_job& j : run->jobs) {
    const double top = frame.plot_top() + lane_height * j.gpu;
    const double x0 = x.at(j.start_s);
    // A job shorter than a pixel still shows.
    const double width = std::max(x.at(j.end_s) - x0, 1.0);
    m.open("g", {{"class", "point job " + purpose_class(j.purpose) + (j.ok ? "" : " not-ok")}});
    m.element("title", {},
              "GPU " + std::to_string(j.gpu) + ": " + j.task + " " + j.label + ", " + j.purpose +
                  " (" + j.kind + "), " + seconds(j.start_s) + " to " + seconds(j.end_s) +
                  (j.ok ? "" : ", failed"));
    m.element("rect", {{"x", coordinate(x0)},
                       {"y", coordinate(top + 5)},
                       {"width", coordinate(width)},
                       {"height", coordinate(lane_height - 10)}});
    m.close();
  }
  m.close();
  m.element("figcaption", {}, text.title + ": " + text.description);
  m.close();

  m.open("ul", {{"class", "legend"}});
  for (const std::string& p : purposes) {
    m.open("li");
    m.element("span", {{"class", "swatch " + purpose_class(p)}, {"aria-hidden", "true"}});
    m.text(p.empty() ? "other" : p);
    m.close();
  }
  m.close();

  m.open("table");
  m.element("caption", {}, "Busy and idle time per GPU, last run");
  m.open("thead").open("tr");
  for (std::string_view h : {"GPU", "jobs", "busy", "idle", "busy share"})
    m.element("th", {{"scope", "col"}}, h);
  m.close().close();
  m.open("tbody");
  for (int32_t g = 0; g < lanes; ++g) {
    m.open("tr");
    m.element("th", {{"scope", "row"}}, "GPU " + std::to_string(g));
    m.element("td", {}, std::to_string(jobs[g]));
    m.element("td", {}, seconds(busy[g]));
    m.element("td", {}, seconds(std::max(0.0, span - busy[g])));
    m.element("td", {}, number(100 * busy[g] / span, 3) + "%");
    m.close();
  }
  m.close().close();
  if (trace.size() > 1)
    m.element("p", {},
              "The campaign ran " + std::to_string(trace.size()) +
                  " times (started, then resumed); the timeline shows the last run.");
}

} // namespace ks::report
