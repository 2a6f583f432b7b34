#include "report/report_format.hpp"

#include <cmath>
#include <cstdint>
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

std::string format_elapsed(double seconds) {
  auto s = static_cast<int64_t>(std::llround(seconds > 0 ? seconds : 0));
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%llds", static_cast<long long>(s));
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else
    std::snprintf(text, sizeof text, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s % 3600) / 60));
  return text;
}

std::string format_seconds(double seconds) {
  if (seconds >= 60)
    return format_elapsed(seconds);
  char text[32];
  std::snprintf(text, sizeof text, "%gs", seconds);
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
