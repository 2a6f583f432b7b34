#include "report/html_writer.hpp"

#include <cmath>
#include <cstdio>

namespace ks::report {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      // Control characters other than tab and newline are no HTML text (a parse error in
      // strict parsers): a compiler's message may carry an escape sequence.
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
        out += ' ';
      else
        out += c;
    }
  }
  return out;
}

std::string number(double value, int digits) {
  if (!std::isfinite(value))
    return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

std::string coordinate(double value) {
  if (!std::isfinite(value))
    return "0";
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

void markup::start_tag(std::string_view tag, const attributes& attrs) {
  out_ += '<';
  out_ += tag;
  for (const auto& [name, value] : attrs) {
    out_ += ' ';
    out_ += name;
    out_ += "=\"";
    out_ += escape(value);
    out_ += '"';
  }
  out_ += '>';
}

markup& markup::open(std::string_view tag, const attributes& attrs) {
  start_tag(tag, attrs);
  open_.emplace_back(tag);
  return *this;
}

markup& markup::close() {
  if (open_.empty())
    return *this;
  out_ += "</" + open_.back() + ">";
  open_.pop_back();
  return *this;
}

markup& markup::element(std::string_view tag, const attributes& attrs, std::string_view text) {
  start_tag(tag, attrs);
  out_ += escape(text);
  out_ += "</";
  out_ += tag;
  out_ += '>';
  return *this;
}

markup& markup::void_element(std::string_view tag, const attributes& attrs) {
  start_tag(tag, attrs);
  return *this;
}

markup& markup::text(std::string_view text) {
  out_ += escape(text);
  return *this;
}

markup& markup::raw(std::string_view trusted) {
  out_ += trusted;
  return *this;
}

std::string markup::take() {
  while (!open_.empty())
    close();
  return std::move(out_);
}

} // namespace ks::report
