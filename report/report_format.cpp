#include "report/report_format.hpp"

#include <cstdio>

namespace ks::report {

std::string format_ms(double ms) {
  if (ms <= 0)
    return "-";
  char text[64];
  std::snprintf(text, sizeof text, ms >= 100 ? "%.0f ms" : ms >= 1 ? "%.3f ms" : "%.4g ms", ms);
  return text;
}

std::string format_ratio(double value, const char* suffix) {
  if (value <= 0)
    return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f%s", value, suffix);
  return text;
}

std::string format_percent(double fraction) {
  if (fraction <= 0)
    return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.1f%%", fraction * 100);
  return text;
}

std::string file_name_of(const std::string& name) {
  std::string out = name.empty() ? std::string("task") : name;
  for (char& c : out) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
    if (!keep)
      c = '_';
  }
  if (out.front() == '.')
    out.front() = '_';
  return out;
}

} // namespace ks::report
