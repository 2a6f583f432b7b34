// The one-line summaries of dump(), for `kernelskill inspect`: each record decoded by its
// codec (so a summary never shows what a reader would reject) and shortened to one line.
// store::check() uses describe() to find the records that do not decode.

#include "memory/json_text.hpp"
#include "memory/record_codec.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <cstdio>

namespace json = boost::json;

namespace ks::memory::records {

namespace {

// Returns `s` cut to `n` characters, on one line, for a summary.
std::string snippet(std::string_view s, size_t n = 60) {
  std::string out;
  for (char c : s.substr(0, n))
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (s.size() > n)
    out += "...";
  return out;
}

std::string number(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "?";
}

} // namespace

decoded<std::string> describe(std::string_view value) {
  // The tag picks the decoder; the decoder then checks everything, the tag included.
  std::string why;
  json::value v = parse_exact(value, why);
  std::string tag;
  if (v.is_object())
    if (auto it = v.get_object().find("type");
        it != v.get_object().end() && it->value().is_string())
      tag = std::string(it->value().get_string());
  auto corrupt = [](const std::string& reason) -> decoded<std::string> {
    return tl::unexpected(reason);
  };

  if (tag == "store") {
    auto r = decode_store_header(value);
    if (!r)
      return corrupt(r.error());
    return "store header, format " + std::to_string(version) +
           (*r == seal::rule::required
                ? ", records checksummed (" + std::string(seal::checksum_name) + ")"
                : ", records written before checksums");
  }
  if (tag == "campaign") {
    auto r = decode_campaign(value);
    if (!r)
      return corrupt(r.error());
    return "campaign started_at=" + r->started_at + " runs=" + std::to_string(r->runs) +
           " config=" + std::to_string(r->config_text.size()) + " bytes";
  }
  if (tag == "task") {
    auto r = decode_task(value);
    if (!r)
      return corrupt(r.error());
    return "task " + r->name + " phase=" + engine::to_string(r->phase) +
           " winner=" + std::to_string(r->winner) +
           " winner_median_ms=" + number(r->winner_median_ms) +
           (r->stop_reason.empty() ? "" : " stop=" + r->stop_reason);
  }
  if (tag == "node") {
    auto r = decode_node(value);
    if (!r)
      return corrupt(r.error());
    return "node id=" + std::to_string(r->id) + " parent=" + std::to_string(r->parent) +
           " depth=" + std::to_string(r->depth) + " plan=" + engine::plan_key(r->plan) +
           (r->plan.skill_version != 0 ? " skill_version=" + std::to_string(r->plan.skill_version)
                                       : "") +
           " status=" + engine::to_string(r->status) +
           " disposition=" + engine::to_string(r->disposition) +
           " median_ms=" + number(r->time.median_ms) +
           (r->failure_kind.empty() ? "" : " failure=" + r->failure_kind);
  }
  if (tag == "detail") {
    auto r = decode_detail(value);
    if (!r)
      return corrupt(r.error());
    return "detail message=\"" + snippet(r->message) +
           "\" diagnostics=" + std::to_string(r->diagnostics.size()) + " bytes";
  }
  if (tag == "source") {
    auto r = decode_source(value);
    if (!r)
      return corrupt(r.error());
    return "source " + std::to_string(r->size()) + " bytes";
  }
  if (tag == "outcome") {
    auto r = decode_outcome(value);
    if (!r)
      return corrupt(r.error());
    return "outcome plan=" + engine::plan_key(r->plan) + " child=" + std::to_string(r->child) +
           " outcome=" + engine::to_string(r->outcome) + " gain=" + number(r->gain) +
           (r->failure_kind.empty() ? "" : " failure=" + r->failure_kind);
  }
  if (tag == "repair") {
    auto r = decode_repair(value);
    if (!r)
      return corrupt(r.error());
    return "repair round=" + std::to_string(r->round) + " error=\"" + snippet(r->error_text) + "\"";
  }
  if (tag == "calibration") {
    auto r = decode_calibration(value);
    if (!r)
      return corrupt(r.error());
    return "calibration " + std::to_string(r->size()) + " bytes";
  }
  if (tag == "skill_stat") {
    auto r = decode_skill_stat(value);
    if (!r)
      return corrupt(r.error());
    return "skill_stat tries=" + std::to_string(r->tries) +
           " successes=" + std::to_string(r->successes) + " total_gain=" + number(r->total_gain);
  }
  if (tag == transcript_tag) {
    auto r = decode_transcript(value);
    if (!r)
      return corrupt(r.error());
    char latency[32] = "";
    std::snprintf(latency, sizeof latency, "%.1f", r->latency_ms);
    return "transcript role=" + r->role + " model=" + r->model + " outcome=" + r->outcome +
           " tokens=" + std::to_string(r->input_tokens) + "+" + std::to_string(r->output_tokens) +
           " latency_ms=" + latency + " cost=" + number(r->cost) +
           " request=" + std::to_string(r->id);
  }
  if (!why.empty())
    return corrupt("not JSON (" + why + ")");
  return corrupt(tag.empty() ? "no type tag" : "unknown type '" + tag + "'");
}

std::string summarize(std::string_view value) {
  auto d = describe(value);
  return d ? std::move(*d) : "corrupt: " + d.error();
}

} // namespace ks::memory::records
