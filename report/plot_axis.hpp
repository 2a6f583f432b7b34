#pragma once

// The axes and frame every plot of report.html shares. An axis maps a data range onto a pixel
// range, linearly or by decades; its range is widened to round ticks (whole decades, or steps
// of 1, 2 or 5 times a power of ten), so that a point never sits on the frame. open_plot()
// writes a plot's <svg>: its title and description first (what a screen reader reads, and the
// text alternative of the picture), then the grid, the ticks and both axis labels; the caller
// adds the marks and closes the element.

#include "report/html_writer.hpp"

#include <string>
#include <vector>

namespace ks::report {

/// One axis: data values from `lo` to `hi` drawn from pixel `from` to pixel `to`.
struct axis {
  double lo = 0;
  double hi = 1;
  double from = 0;
  double to = 1;
  bool logarithmic = false;

  /// Returns the pixel of data value `v` (clamped into the axis's range).
  double at(double v) const;

  /// Returns the data values of the ticks, from `lo` to `hi`.
  std::vector<double> ticks() const;
};

/// Returns a logarithmic axis over whole decades that holds [`min`, `max`] (both above 0).
axis log_axis(double min, double max, double from, double to);

/// Returns a linear axis over round steps that holds [`min`, `max`].
axis linear_axis(double min, double max, double from, double to);

/// Returns a tick's label: "0.001", "20", "1e+04", short.
std::string tick_label(double value);

/// The frame of one plot, in pixels: its size and the margins its axes are drawn in.
struct plot_frame {
  double width = 640;
  double height = 300;
  double left = 70;
  double right = 20;
  double top = 16;
  double bottom = 46;

  double plot_left() const { return left; }
  double plot_right() const { return width - right; }
  double plot_top() const { return top; }
  double plot_bottom() const { return height - bottom; }
};

/// What a plot says of itself: for people who see it and for those who hear it.
struct plot_text {
  std::string id;          ///< unique in the page: the ids of its title and description
  std::string kind;        ///< data-plot's value: "roofline", "tree", "progress", ...
  std::string title;       ///< one line
  std::string description; ///< what the picture shows, in words (its text alternative)
  std::string x_label;
  std::string y_label;
};

/// Opens the <svg> of a figure of `frame`'s size and writes its title and description; the
/// caller draws the rest and closes it.
void open_figure(markup& m, const plot_text& text, const plot_frame& frame);

/// Writes the frame, grid, ticks and labels of axes `x` and `y` into an open figure; without
/// `y_ticks`, the y axis has a label but no ticks (the caller labels its rows).
void draw_axes(markup& m, const plot_text& text, const plot_frame& frame, const axis& x,
               const axis& y, bool y_ticks = true);

/// Opens the <svg> of a plot framed by `frame` with axes `x` and `y` and writes its title,
/// description, grid, ticks and axis labels; the caller writes the marks and closes it.
void open_plot(markup& m, const plot_text& text, const plot_frame& frame, const axis& x,
               const axis& y);

} // namespace ks::report
