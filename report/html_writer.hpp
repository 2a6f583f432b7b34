#pragma once

// The HTML and SVG of report.html, element by element. Every attribute value and every text
// goes through escape(), so a task name, a plan's description or a compiler's message shows
// as written and never as markup; only raw() takes text as is, for the page's own constant
// style and script.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ks::report {

/// Returns `text` with &, <, >, " and ' written as character references.
std::string escape(std::string_view text);

/// Returns `value` with at most `digits` significant digits, as printf's %g writes it.
std::string number(double value, int digits = 4);

/// Returns `value` rounded to one decimal, for coordinates: short, and precise enough.
std::string coordinate(double value);

/// An element's attributes: names as written, values escaped by the writer.
using attributes = std::vector<std::pair<std::string_view, std::string>>;

/// Builds a document element by element; open() and close() nest.
class markup {
public:
  /// Opens element `tag` with `attrs`.
  markup& open(std::string_view tag, const attributes& attrs = {});

  /// Closes the element opened last.
  markup& close();

  /// Writes element `tag` with `attrs` holding `text` (escaped), and closes it.
  markup& element(std::string_view tag, const attributes& attrs = {}, std::string_view text = {});

  /// Writes a void HTML element (<meta>, <br>): no content, no end tag.
  markup& void_element(std::string_view tag, const attributes& attrs = {});

  /// Writes `text`, escaped.
  markup& text(std::string_view text);

  /// Writes `trusted` as it is: only for the page's constant style and script.
  markup& raw(std::string_view trusted);

  /// Returns how many elements are open.
  size_t depth() const noexcept { return open_.size(); }

  /// Returns the document written so far, closing every element still open.
  std::string take();

private:
  void start_tag(std::string_view tag, const attributes& attrs);

  std::string out_;
  std::vector<std::string> open_;
};

} // namespace ks::report
