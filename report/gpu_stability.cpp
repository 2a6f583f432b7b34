#include "report/gpu_stability.hpp"

#include "report/atomic_file.hpp"
#include "report/report_format.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

namespace ks::report {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view format_name = "kernelskill-gpu-stability";

std::string fixed(double x, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, x);
  return buffer;
}

// Returns the UTC time of `unix_s` as "2026-05-03 12:00:42 UTC"; empty for 0.
std::string utc(double unix_s) {
  if (!(unix_s > 0))
    return {};
  auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr)
    return {};
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

std::string gpu_name(const card_stability_record& c) {
  return "GPU " + std::to_string(c.gpu) + (c.name.empty() ? "" : " (" + c.name + ")");
}

// Returns how much an episode was out of bounds: the drift, the split, or both.
std::string how_much(const engine::instability_episode& e, const engine::stability_options& o) {
  std::string out;
  if (e.worst_ratio > 1 + o.drift_bound)
    out = "its probe took up to " + fixed(e.worst_ratio, 2) + "x its quiet time of " +
          fixed(e.quiet_ms, 3) + " ms";
  if (e.worst_spread > 1 + o.split_bound)
    out += std::string(out.empty() ? "its probe's" : ", and its") +
           " samples split into levels up to " + fixed(e.worst_spread, 2) +
           "x apart (p90 over p10)";
  return out;
}

json::value real_or_null(double v) {
  return std::isfinite(v) ? json::value(v) : json::value(nullptr);
}

json::object card_json(const card_stability_record& c) {
  const engine::card_monitor& m = c.monitor;
  json::array episodes;
  for (const engine::instability_episode& e : m.episodes())
    episodes.push_back(
        json::object{{"condition", engine::to_string(e.condition)},
                     {"start_s", e.start_s},
                     {"end_s", e.end_s >= 0 ? json::value(e.end_s) : json::value(nullptr)},
                     {"worst_ratio", real_or_null(e.worst_ratio)},
                     {"worst_spread", real_or_null(e.worst_spread)},
                     {"quiet_ms", real_or_null(e.quiet_ms)},
                     {"probes", e.probes},
                     {"gave_up", e.gave_up}});
  json::array labels;
  for (const std::string& l : c.flagged_labels)
    labels.emplace_back(l);
  json::value last = nullptr;
  if (m.probes() > 0)
    last = json::object{{"at_s", m.last().at_s},
                        {"bytes", m.last().bytes},
                        {"median_ms", real_or_null(m.last().median_ms)},
                        {"p10_ms", real_or_null(m.last().p10_ms)},
                        {"p90_ms", real_or_null(m.last().p90_ms)},
                        {"ratio", real_or_null(m.last_assessment().ratio)},
                        {"spread", real_or_null(m.last_assessment().spread)}};
  return {{"gpu", c.gpu},
          {"name", c.name},
          {"state", m.off() ? std::string("off") : std::string(engine::to_string(m.trust()))},
          {"off_reason", m.off_reason()},
          {"probes", m.probes()},
          {"quiet_ms", real_or_null(m.quiet_ms(m.last().bytes))},
          {"last", std::move(last)},
          {"episodes", std::move(episodes)},
          {"retimed", c.retimed},
          {"flagged", c.flagged},
          {"flagged_labels", std::move(labels)}};
}

json::object run_json(const stability_run& run) {
  engine::stability_options o =
      run.cards.empty() ? engine::stability_options{} : run.cards.front().monitor.options();
  json::array gpus;
  for (const card_stability_record& c : run.cards)
    gpus.push_back(card_json(c));
  json::array warnings;
  for (const std::string& w : stability_warnings(run))
    warnings.emplace_back(w);
  return {{"run", run.number},
          {"started_unix_s", run.started_unix_s},
          {"unreliable", run.unreliable()},
          {"bounds",
           {{"probe_interval_s", o.probe_interval_s},
            {"drift", o.drift_bound},
            {"split", o.split_bound},
            {"pause_s", o.pause_s},
            {"limit_s", o.limit_s},
            {"max_retimes", o.max_retimes}}},
          {"gpus", std::move(gpus)},
          {"warnings", std::move(warnings)}};
}

// Returns the file's document, or null when it is absent or is not one.
json::value read_document(const fs::path& file) {
  std::ifstream in(file);
  if (!in)
    return nullptr;
  std::ostringstream text;
  text << in.rdbuf();
  json::error_code ec;
  json::value v = json::parse(text.str(), ec);
  if (ec || !v.is_object())
    return nullptr;
  const json::object& o = v.get_object();
  const json::value* format = o.if_contains("format");
  const json::value* runs = o.if_contains("runs");
  if (format == nullptr || !format->is_string() || format->get_string() != format_name ||
      runs == nullptr || !runs->is_array())
    return nullptr;
  return v;
}

} // namespace

bool stability_run::unreliable() const {
  for (const card_stability_record& c : cards)
    for (const engine::instability_episode& e : c.monitor.episodes())
      if (e.gave_up)
        return true;
  return false;
}

std::vector<std::string> stability_warnings(const stability_run& run) {
  std::vector<std::string> out;
  const std::string when = utc(run.started_unix_s);
  const std::string of_run = "run " + std::to_string(run.number) +
                             (when.empty() ? std::string() : " (started " + when + ")");
  for (const card_stability_record& c : run.cards) {
    const engine::card_monitor& m = c.monitor;
    const engine::stability_options& o = m.options();
    if (m.off() && !m.off_reason().empty())
      out.push_back(gpu_name(c) + ": the stability probe could not run (" + m.off_reason() +
                    "); its timings in " + of_run + " were not checked for an unstable card");
    for (const engine::instability_episode& e : m.episodes()) {
      std::string at = utc(run.started_unix_s + e.start_s);
      std::string line = gpu_name(c) + " was unstable " +
                         (e.end_s >= 0 ? "from " + format_elapsed(e.start_s) + " to " +
                                             format_elapsed(e.end_s) + " into " + of_run
                                       : "from " + format_elapsed(e.start_s) + " into " + of_run +
                                             " to its last probe") +
                         (at.empty() ? std::string() : ", first seen at " + at) + ": " +
                         how_much(e, o) + " (bounds: " + fixed(100 * o.drift_bound, 0) + "% and " +
                         fixed(100 * o.split_bound, 0) + "%)";
      if (e.gave_up)
        line += "; it stayed unstable past " + format_seconds(o.limit_s) +
                " (bench.stability_limit_s): its timings ran anyway, flagged";
      out.push_back(line);
    }
    if (c.retimed > 0)
      out.push_back(gpu_name(c) + ": " + std::to_string(c.retimed) +
                    (c.retimed == 1 ? " timing was" : " timings were") +
                    " made again once its probe was within bounds (" + of_run + ")");
    if (c.flagged > 0) {
      std::string labels;
      for (size_t i = 0; i < c.flagged_labels.size() && i < 8; ++i)
        labels += (i == 0 ? "" : ", ") + c.flagged_labels[i];
      if (c.flagged > 8)
        labels += ", ...";
      out.push_back(gpu_name(c) + ": " + std::to_string(c.flagged) +
                    (c.flagged == 1 ? " timing was" : " timings were") +
                    " made while it was unstable, or sent back " +
                    std::to_string(m.options().max_retimes) + " times, and stand flagged (" +
                    labels + ")");
    }
  }
  if (run.unreliable())
    out.push_back("The results of " + of_run +
                  " are unreliable: a GPU stayed unstable past bench.stability_limit_s and "
                  "timings made on it stand; run the campaign again on a quiet GPU to confirm "
                  "them");
  return out;
}

std::string card_stability_status(const card_stability_record& card, double now_s) {
  const engine::card_monitor& m = card.monitor;
  if (m.off() || m.episodes().empty() || m.trust() == engine::card_trust::quiet)
    return {};
  const engine::instability_episode& e = m.episodes().back();
  if (e.end_s >= 0)
    return {};
  std::string text =
      std::string(m.trust() == engine::card_trust::unreliable ? "UNRELIABLE" : "UNSTABLE") +
      " for " + format_elapsed(now_s - e.start_s);
  if (!m.last_assessment().text.empty())
    text += ": " + m.last_assessment().text;
  return text;
}

std::vector<std::string> prior_stability_runs(const fs::path& file) {
  std::vector<std::string> out;
  json::value doc = read_document(file);
  if (doc.is_null())
    return out;
  for (const json::value& run : doc.at("runs").get_array())
    if (run.is_object())
      out.push_back(json::serialize(run));
  return out;
}

engine::expected<void> write_gpu_stability(const fs::path& file,
                                           const std::vector<std::string>& prior,
                                           const stability_run& run) {
  json::array runs;
  bool unreliable = run.unreliable();
  for (const std::string& text : prior) {
    json::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec || !v.is_object())
      continue;
    if (const json::value* u = v.get_object().if_contains("unreliable"); u && u->is_bool())
      unreliable = unreliable || u->get_bool();
    runs.push_back(std::move(v));
  }
  runs.push_back(run_json(run));
  json::object doc{{"format", format_name},
                   {"version", 1},
                   {"unreliable", unreliable},
                   {"runs", std::move(runs)}};
  return write_atomically(file, json::serialize(doc) + "\n");
}

gpu_stability_notes read_gpu_stability(const fs::path& output_dir) {
  gpu_stability_notes notes;
  json::value doc = read_document(output_dir / gpu_stability_file);
  if (doc.is_null())
    return notes;
  notes.present = true;
  notes.json_text = json::serialize(doc);
  for (const json::value& run : doc.at("runs").get_array()) {
    if (!run.is_object())
      continue;
    const json::object& r = run.get_object();
    if (const json::value* u = r.if_contains("unreliable"); u && u->is_bool() && u->get_bool())
      notes.unreliable = true;
    if (const json::value* w = r.if_contains("warnings"); w && w->is_array())
      for (const json::value& line : w->get_array())
        if (line.is_string())
          notes.warnings.emplace_back(line.get_string());
  }
  return notes;
}

std::string gpu_stability_markdown(const gpu_stability_notes& notes) {
  if (notes.warnings.empty())
    return {};
  std::ostringstream out;
  out << "\n## GPU stability\n\n";
  if (notes.unreliable)
    out << "**The results are unreliable: a GPU stayed unstable past its limit (see below).**\n\n";
  for (const std::string& w : notes.warnings)
    out << "- " << w << "\n";
  out << "\nEach GPU is probed through the campaign with a fixed copy (docs/measurement.md, "
         "\"An unstable GPU\"); `"
      << gpu_stability_file << "` has the figures.\n";
  return out.str();
}

} // namespace ks::report
