// The roofline of each GPU: a task's arithmetic intensity (its useful flops over the fewest
// bytes it must move, both from its op family) places it on the x axis, and each of its times
// becomes the throughput it reached, flops over time. The ceiling is the GPU's own measured
// DRAM bandwidth times the intensity, up to its measured FP32 peak (the calibration that the
// worker ran on that card, in results.json's environment), so a point's distance to the
// ceiling is the share of the limit its kernel left unused. A task sits on the GPU that timed
// its reference (its home); a task without a cost (a results.json of an older kernelskill) or
// without flops cannot be placed on a log axis and is named below the plot instead.

#include "report/plot_axis.hpp"
#include "report/report_format.hpp"
#include "report/report_parts.hpp"

#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <vector>

namespace ks::report {

namespace json = boost::json;

namespace {

/// The box a label of the roofline takes, in the plot's coordinates.
struct label_box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;

  bool overlaps(const label_box& o) const {
    return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1;
  }
};

/// One of the four times a task is placed by.
struct marker_kind {
  std::string_view key;    ///< CSS class
  std::string_view legend; ///< words
};

constexpr std::array<marker_kind, 4> marker_kinds{{{"m-reference", "reference kernel"},
                                                   {"m-best", "best kernel"},
                                                   {"m-eager", "torch eager"},
                                                   {"m-compile", "torch.compile"}}};

/// A task as its GPU's roofline shows it.
struct placed_task {
  std::string name;
  double intensity = 0;       ///< flop per byte
  double flops = 0;           ///< per run
  std::array<double, 4> ms{}; ///< by marker_kinds; 0: none
  double floor_ms = 0;
};

double gflops_at(double flops, double ms) {
  return ms > 0 ? flops / (ms * 1e6) : 0;
}

// Writes one marker's shape centred on (x, y): circle, diamond, square or triangle, so that
// the four differ without colour.
void write_marker(markup& m, size_t kind, double x, double y) {
  const std::string cx = coordinate(x);
  const std::string cy = coordinate(y);
  switch (kind) {
  case 0:
    m.element("circle", {{"cx", cx}, {"cy", cy}, {"r", "5"}});
    break;
  case 1:
    m.element("path",
              {{"d", "M" + coordinate(x) + " " + coordinate(y - 7) + " l7 7 l-7 7 l-7 -7 z"}});
    break;
  case 2:
    m.element(
        "rect",
        {{"x", coordinate(x - 4.5)}, {"y", coordinate(y - 4.5)}, {"width", "9"}, {"height", "9"}});
    break;
  default:
    m.element("path", {{"d", "M" + coordinate(x) + " " + coordinate(y - 6) + " l6 10 l-12 0 z"}});
  }
}

void write_legend(markup& m) {
  m.open("ul", {{"class", "legend"}});
  for (const marker_kind& k : marker_kinds) {
    m.open("li");
    m.element("span", {{"class", "swatch " + std::string(k.key)}, {"aria-hidden", "true"}});
    m.text(k.legend);
    m.close();
  }
  m.open("li");
  m.element("span", {{"class", "swatch ceiling-swatch"}, {"aria-hidden", "true"}});
  m.text("ceiling: measured DRAM bandwidth, then FP32 peak");
  m.close();
  m.close();
}

void write_data_table(markup& m, const std::vector<placed_task>& tasks) {
  m.open("details");
  m.element("summary", {}, "The roofline's numbers");
  m.open("table");
  m.open("thead").open("tr");
  for (std::string_view h :
       {"task", "FLOP/byte", "reference", "best", "torch eager", "torch.compile", "roofline floor"})
    m.element("th", {{"scope", "col"}}, h);
  m.close().close();
  m.open("tbody");
  for (const placed_task& t : tasks) {
    m.open("tr");
    m.element("th", {{"scope", "row"}}, t.name);
    m.element("td", {}, number(t.intensity, 3));
    for (double ms : t.ms)
      m.element("td", {},
                ms > 0 ? format_ms(ms) + " (" + number(gflops_at(t.flops, ms), 4) + " GFLOP/s)"
                       : "-");
    m.element("td", {}, format_ms(t.floor_ms));
    m.close();
  }
  m.close().close().close();
}

void write_roofline(markup& m, const std::string& gpu_name, int64_t index, double gbps,
                    double peak_gflops, const std::vector<placed_task>& tasks) {
  double min_i = 1e300;
  double max_i = peak_gflops / gbps; // the ridge point is always in view
  double min_y = peak_gflops;
  for (const placed_task& t : tasks) {
    min_i = std::min(min_i, t.intensity);
    max_i = std::max(max_i, t.intensity);
    for (double ms : t.ms)
      if (ms > 0)
        min_y = std::min(min_y, gflops_at(t.flops, ms));
  }
  plot_frame frame;
  frame.width = 720;
  frame.height = 380;
  axis x = log_axis(min_i / 2, max_i * 2, frame.plot_left(), frame.plot_right());
  axis y = log_axis(min_y / 2, peak_gflops * 1.5, frame.plot_bottom(), frame.plot_top());
  plot_text text;
  text.id = "roofline-gpu" + std::to_string(index);
  text.kind = "roofline";
  text.title = "Roofline of GPU " + std::to_string(index) + " (" + gpu_name + ")";
  text.description = std::to_string(tasks.size()) +
                     " task(s) as throughput against arithmetic intensity, under the ceiling of "
                     "the measured DRAM bandwidth (" +
                     number(gbps, 4) + " GB/s) and FP32 peak (" + number(peak_gflops, 4) +
                     " GFLOP/s); the table below the plot holds the same numbers.";
  text.x_label = "arithmetic intensity (FLOP/byte, log)";
  text.y_label = "throughput (GFLOP/s, log)";
  m.open("figure");
  open_plot(m, text, frame, x, y);

  // The ceiling: bandwidth times intensity up to the ridge, then the peak.
  const double ridge = peak_gflops / gbps;
  const double start = std::max(x.lo, y.lo / gbps);
  std::string points = coordinate(x.at(start)) + "," + coordinate(y.at(start * gbps)) + " " +
                       coordinate(x.at(ridge)) + "," + coordinate(y.at(peak_gflops)) + " " +
                       coordinate(x.at(x.hi)) + "," + coordinate(y.at(peak_gflops));
  m.element("polyline", {{"class", "ceiling"}, {"points", points}});
  // The ceilings' names, and the boxes they take, which the tasks' names keep clear of.
  std::vector<label_box> labels;
  auto ceiling_label = [&](double lx, double ly, const std::string& name) {
    m.element("text", {{"class", "ceiling-label"}, {"x", coordinate(lx)}, {"y", coordinate(ly)}},
              name);
    labels.push_back({lx, ly - 10, lx + 6.2 * static_cast<double>(name.size()), ly + 3});
  };
  ceiling_label(x.at(ridge) + 6, y.at(peak_gflops) - 5,
                "FP32 " + number(peak_gflops, 4) + " GFLOP/s");
  ceiling_label(x.at(start) + 6, y.at(start * gbps) - 8, "DRAM " + number(gbps, 4) + " GB/s");

  for (const placed_task& t : tasks) {
    const double px = x.at(t.intensity);
    // The reference's and the best kernel's points joined: how far the search moved the task.
    if (t.ms[0] > 0 && t.ms[1] > 0)
      m.element("line", {{"class", "gain"},
                         {"x1", coordinate(px)},
                         {"y1", coordinate(y.at(gflops_at(t.flops, t.ms[0])))},
                         {"x2", coordinate(px)},
                         {"y2", coordinate(y.at(gflops_at(t.flops, t.ms[1])))}});
    for (size_t k = 0; k < marker_kinds.size(); ++k) {
      if (t.ms[k] <= 0)
        continue;
      const double gflops = gflops_at(t.flops, t.ms[k]);
      m.open("g", {{"class", "point " + std::string(marker_kinds[k].key)}});
      m.element(
          "title", {},
          t.name + ", " + std::string(marker_kinds[k].legend) + ": " + format_ms(t.ms[k]) + ", " +
              number(gflops, 4) + " GFLOP/s at " + number(t.intensity, 3) + " FLOP/byte" +
              (t.floor_ms > 0 ? ", " + format_percent(t.floor_ms / t.ms[k]) + " of the roofline"
                              : std::string()));
      write_marker(m, k, px, y.at(gflops));
      m.close();
    }
    if (t.ms[1] > 0 && tasks.size() <= 16) {
      // The best kernel's name beside it, right of the point or, where it would leave the
      // frame, left of it; a name that would cover one already written is left to the point's
      // tooltip and the table below (tasks of one family often share a place).
      const double width = 6.2 * static_cast<double>(t.name.size()); // 11px sans, about
      const double py = y.at(gflops_at(t.flops, t.ms[1]));
      const bool left = px + 9 + width > frame.width;
      const label_box box{left ? px - 9 - width : px + 9, py - 8, left ? px - 9 : px + 9 + width,
                          py + 6};
      if (std::none_of(labels.begin(), labels.end(),
                       [&](const label_box& b) { return b.overlaps(box); })) {
        labels.push_back(box);
        m.element("text",
                  {{"class", "point-label"},
                   {"x", coordinate(left ? px - 9 : px + 9)},
                   {"y", coordinate(py + 4)},
                   {"text-anchor", left ? "end" : "start"}},
                  t.name);
      }
    }
  }
  m.close(); // svg
  m.element("figcaption", {}, text.title + ": " + text.description);
  m.close(); // figure
  write_legend(m);
  write_data_table(m, tasks);
}

} // namespace

void write_rooflines(markup& m, const json::object& results) {
  const json::object* campaign = object_at(results, "campaign");
  const json::object* environment =
      campaign != nullptr ? object_at(*campaign, "environment") : nullptr;
  const json::array& gpus =
      environment != nullptr ? array_at(*environment, "gpus") : array_at(results, "no gpus");
  int64_t drawn = 0;
  std::vector<std::string> unplaced;
  for (size_t g = 0; g < gpus.size(); ++g) {
    if (!gpus[g].is_object())
      continue;
    const json::object& gpu = gpus[g].get_object();
    const auto index = static_cast<int64_t>(number_at(gpu, "index"));
    const json::object* calibration = object_at(gpu, "calibration");
    const double gbps = calibration != nullptr ? number_at(*calibration, "dram_gbps") : 0;
    const double peak = calibration != nullptr ? number_at(*calibration, "fp32_gflops") : 0;
    std::vector<placed_task> placed;
    for (const json::value& v : array_at(results, "tasks")) {
      if (!v.is_object())
        continue;
      const json::object& task = v.get_object();
      const json::object* reference = object_at(task, "reference");
      if (reference == nullptr)
        continue;
      // A task whose home is not known yet sits on the first GPU, as its reference will.
      const auto home = static_cast<int64_t>(number_at(*reference, "home_gpu"));
      if (home != index && !(home < 0 && g == 0))
        continue;
      placed_task t;
      t.name = string_at(task, "name");
      t.flops = number_at(*reference, "flops");
      const double bytes = number_at(*reference, "bytes");
      if (t.flops <= 0 || bytes <= 0) {
        unplaced.push_back(t.name);
        continue;
      }
      t.intensity = t.flops / bytes;
      t.floor_ms = number_at(*reference, "roofline_floor_ms");
      t.ms[0] = number_at(*reference, "median_ms");
      if (const json::object* winner = object_at(task, "winner"))
        t.ms[1] = number_at(*winner, "median_ms");
      t.ms[2] = number_at(task, "torch_eager_ms");
      t.ms[3] = number_at(task, "torch_compile_ms");
      if (std::any_of(t.ms.begin(), t.ms.end(), [](double ms) { return ms > 0; }))
        placed.push_back(std::move(t));
    }
    if (placed.empty())
      continue;
    if (gbps <= 0 || peak <= 0) {
      m.element("p", {},
                "GPU " + std::to_string(index) +
                    " has no calibration (measured bandwidth and peak): no roofline.");
      continue;
    }
    write_roofline(m, string_at(gpu, "name"), index, gbps, peak, placed);
    ++drawn;
  }
  if (drawn == 0)
    m.element("p", {},
              "No roofline: no task has been timed on a calibrated GPU yet (a dry run measures "
              "nothing).");
  if (!unplaced.empty()) {
    std::string names;
    for (const std::string& n : unplaced)
      names += (names.empty() ? "" : ", ") + n;
    m.element("p", {},
              "Not on a roofline (no floating-point work, or no cost in results.json): " + names +
                  ".");
  }
}

} // namespace ks::report
