#include "report/plot_axis.hpp"

#include <algorithm>
#include <cmath>

namespace ks::report {

double axis::at(double v) const {
  double fraction = 0;
  if (logarithmic) {
    double l = std::log10(lo);
    double h = std::log10(hi);
    fraction = h > l && v > 0 ? (std::log10(v) - l) / (h - l) : 0;
  } else {
    fraction = hi > lo ? (v - lo) / (hi - lo) : 0;
  }
  fraction = std::clamp(fraction, 0.0, 1.0);
  return from + fraction * (to - from);
}

std::vector<double> axis::ticks() const {
  std::vector<double> out;
  if (logarithmic) {
    int first = static_cast<int>(std::lround(std::log10(lo)));
    int last = static_cast<int>(std::lround(std::log10(hi)));
    // At most about eight labelled decades: a wide range labels every second or third one.
    int stride = std::max(1, (last - first + 7) / 8);
    for (int e = first; e <= last; e += stride)
      out.push_back(std::pow(10.0, e));
    return out;
  }
  double step = 0;
  double span = hi - lo;
  double magnitude = std::pow(10.0, std::floor(std::log10(span > 0 ? span : 1)));
  for (double m : {0.1, 0.2, 0.5, 1.0, 2.0, 5.0})
    if (span / (m * magnitude) <= 6) {
      step = m * magnitude;
      break;
    }
  if (step <= 0)
    step = magnitude;
  for (double v = lo; v <= hi + step / 1000; v += step)
    out.push_back(std::abs(v) < step / 1000 ? 0 : v);
  return out;
}

axis log_axis(double min, double max, double from, double to) {
  min = min > 0 ? min : 1;
  max = max > min ? max : min * 10;
  axis a;
  a.logarithmic = true;
  a.lo = std::pow(10.0, std::floor(std::log10(min)));
  a.hi = std::pow(10.0, std::ceil(std::log10(max)));
  if (a.hi <= a.lo)
    a.hi = a.lo * 10;
  a.from = from;
  a.to = to;
  return a;
}

axis linear_axis(double min, double max, double from, double to) {
  if (!(max > min)) {
    max = min + (min == 0 ? 1 : std::abs(min));
  }
  double span = max - min;
  double magnitude = std::pow(10.0, std::floor(std::log10(span)));
  double step = magnitude;
  for (double m : {0.1, 0.2, 0.5, 1.0, 2.0, 5.0})
    if (span / (m * magnitude) <= 6) {
      step = m * magnitude;
      break;
    }
  axis a;
  a.lo = std::floor(min / step) * step;
  a.hi = std::ceil(max / step) * step;
  if (a.hi <= a.lo)
    a.hi = a.lo + step;
  a.from = from;
  a.to = to;
  return a;
}

std::string tick_label(double value) {
  return number(value, 3);
}

void open_figure(markup& m, const plot_text& text, const plot_frame& frame) {
  const std::string title_id = text.id + "-title";
  const std::string description_id = text.id + "-desc";
  m.open("svg", {{"class", "plot"},
                 {"data-plot", text.kind},
                 {"id", text.id},
                 {"role", "img"},
                 {"aria-labelledby", title_id + " " + description_id},
                 {"width", coordinate(frame.width)},
                 {"height", coordinate(frame.height)},
                 {"viewBox", "0 0 " + coordinate(frame.width) + " " + coordinate(frame.height)}});
  m.element("title", {{"id", title_id}}, text.title);
  m.element("desc", {{"id", description_id}}, text.description);
}

void draw_axes(markup& m, const plot_text& text, const plot_frame& frame, const axis& x,
               const axis& y, bool y_ticks) {
  m.element("rect", {{"class", "frame"},
                     {"x", coordinate(frame.plot_left())},
                     {"y", coordinate(frame.plot_top())},
                     {"width", coordinate(frame.plot_right() - frame.plot_left())},
                     {"height", coordinate(frame.plot_bottom() - frame.plot_top())}});
  m.open("g", {{"class", "axis"}, {"aria-hidden", "true"}});
  for (double v : x.ticks()) {
    std::string px = coordinate(x.at(v));
    m.element("line", {{"class", "grid"},
                       {"x1", px},
                       {"x2", px},
                       {"y1", coordinate(frame.plot_top())},
                       {"y2", coordinate(frame.plot_bottom())}});
    m.element("text",
              {{"x", px}, {"y", coordinate(frame.plot_bottom() + 16)}, {"text-anchor", "middle"}},
              tick_label(v));
  }
  if (y_ticks)
    for (double v : y.ticks()) {
      std::string py = coordinate(y.at(v));
      m.element("line", {{"class", "grid"},
                         {"x1", coordinate(frame.plot_left())},
                         {"x2", coordinate(frame.plot_right())},
                         {"y1", py},
                         {"y2", py}});
      m.element("text",
                {{"x", coordinate(frame.plot_left() - 6)},
                 {"y", py},
                 {"text-anchor", "end"},
                 {"dominant-baseline", "middle"}},
                tick_label(v));
    }
  m.element("text",
            {{"class", "label"},
             {"x", coordinate((frame.plot_left() + frame.plot_right()) / 2)},
             {"y", coordinate(frame.height - 8)},
             {"text-anchor", "middle"}},
            text.x_label);
  const std::string mid_y = coordinate((frame.plot_top() + frame.plot_bottom()) / 2);
  m.element("text",
            {{"class", "label"},
             {"x", "14"},
             {"y", mid_y},
             {"text-anchor", "middle"},
             {"transform", "rotate(-90 14 " + mid_y + ")"}},
            text.y_label);
  m.close();
}

void open_plot(markup& m, const plot_text& text, const plot_frame& frame, const axis& x,
               const axis& y) {
  open_figure(m, text, frame);
  draw_axes(m, text, frame, x, y);
}

} // namespace ks::report
