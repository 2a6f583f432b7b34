#include "report/report_parts.hpp"

#include <boost/json/value.hpp>

namespace ks::report {

namespace json = boost::json;

double number_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_number() ? v->to_number<double>() : 0;
}

std::string string_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

const json::object* object_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

const json::array& array_at(const json::object& o, std::string_view key) {
  static const json::array none;
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_array() ? v->get_array() : none;
}

double median_of(const json::object& n) {
  const json::object* timing = object_at(n, "timing");
  return timing != nullptr ? number_at(*timing, "median_ms") : 0;
}

std::vector<int64_t> lineage_of(const json::object& task) {
  std::vector<int64_t> ids;
  if (const json::object* winner = object_at(task, "winner"))
    for (const json::value& step : array_at(*winner, "lineage"))
      if (step.is_object())
        ids.push_back(static_cast<int64_t>(number_at(step.get_object(), "node")));
  return ids;
}

std::string id_part(std::string_view text) {
  std::string out;
  for (char c : text) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_';
    out += keep ? c : '_';
  }
  return out.empty() ? std::string("_") : out;
}

std::string_view status_group(const json::object& n) {
  const std::string status = string_at(n, "status");
  if (status == "accepted")
    return "accepted";
  if (status == "rejected")
    return "rejected";
  if (status == "compile_failed" || status == "failed" || status == "crashed" ||
      status == "timed_out" || string_at(n, "disposition") == "incorrect")
    return "failed";
  return "open";
}

std::string_view status_group_label(std::string_view group) {
  if (group == "accepted")
    return "accepted (faster than its parent)";
  if (group == "rejected")
    return "rejected (not faster than its parent)";
  if (group == "failed")
    return "failed (compile, verification or run)";
  return "not judged (in flight, or only compiled)";
}

} // namespace ks::report
