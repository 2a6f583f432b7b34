#include "report/bench_trace.hpp"

#include <boost/json.hpp>

#include <fstream>
#include <sstream>

namespace ks::report {

namespace json = boost::json;

namespace {

double number_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_number() ? v->to_number<double>() : 0;
}

std::string string_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

} // namespace

std::string trace_run_header(double unix_s, int64_t gpus) {
  std::ostringstream line;
  line.precision(15);
  line << "{\"run_started_unix_s\": " << unix_s << ", \"gpus\": " << gpus << "}";
  return line.str();
}

std::vector<trace_run> read_bench_trace(const std::filesystem::path& path) {
  std::vector<trace_run> runs;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object())
      continue;
    const json::object& o = v.get_object();
    if (o.contains("run_started_unix_s")) {
      trace_run run;
      run.started_unix_s = number_of(o, "run_started_unix_s");
      run.gpus = static_cast<int32_t>(number_of(o, "gpus"));
      runs.push_back(std::move(run));
      continue;
    }
    if (!o.contains("gpu") || !o.contains("start_s") || !o.contains("end_s"))
      continue;
    if (runs.empty())
      runs.emplace_back();
    trace_job job;
    job.gpu = static_cast<int32_t>(number_of(o, "gpu"));
    job.kind = string_of(o, "kind");
    job.purpose = string_of(o, "purpose");
    job.task = string_of(o, "task");
    job.label = string_of(o, "label");
    job.start_s = number_of(o, "start_s");
    job.end_s = number_of(o, "end_s");
    const json::value* ok = o.if_contains("ok");
    job.ok = ok == nullptr || !ok->is_bool() || ok->get_bool();
    if (o.contains("median_ms"))
      job.median_ms = number_of(o, "median_ms");
    runs.back().jobs.push_back(std::move(job));
  }
  return runs;
}

} // namespace ks::report
