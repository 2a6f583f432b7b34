#include "report/node_json.hpp"

#include <boost/json.hpp>

namespace ks::report {

namespace json = boost::json;

// Returns the vendor libraries a node's verification names (verify_json), if any.
std::vector<std::string> vendor_libraries_of(const std::string& verify_json) {
  std::vector<std::string> out;
  json::error_code ec;
  json::value v = json::parse(verify_json, ec);
  if (ec || !v.is_object())
    return out;
  const json::object& o = v.as_object();
  if (auto it = o.find("vendor_libraries"); it != o.end() && it->value().is_array())
    for (const json::value& library : it->value().as_array())
      if (library.is_string())
        out.emplace_back(library.as_string());
  return out;
}

json::array json_strings(const std::vector<std::string>& texts) {
  json::array out;
  for (const std::string& text : texts)
    out.emplace_back(text);
  return out;
}

// Returns `text` parsed as JSON, or as a string when it is not JSON; null when empty.
json::value json_or_text(const std::string& text) {
  if (text.empty())
    return nullptr;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec)
    return json::string(text);
  return v;
}

json::object plan_json(const engine::plan& p) {
  json::object params;
  for (const auto& [key, value] : p.params)
    params[key] = value;
  return {{"skill", p.skill},
          {"skill_version", p.skill_version},
          {"template", p.template_name},
          {"description", p.description},
          {"params", std::move(params)},
          {"key", engine::plan_key(p)}};
}

json::value positive_or_null(double value) {
  return value > 0 ? json::value(value) : json::value(nullptr);
}

namespace {

// A node's genotype: what long-term memory credits or blames for it (the skill, its version,
// the template and the values of its parameters) and the node it was derived from.
json::object genotype_json(const engine::node_record& n) {
  json::object params;
  for (const auto& [key, value] : n.plan.params)
    params[key] = value;
  return {{"skill", n.plan.skill},
          {"skill_version", n.plan.skill_version},
          {"template", n.plan.template_name},
          {"params", std::move(params)},
          {"parent", n.parent == engine::no_node ? json::value(nullptr) : json::value(n.parent)}};
}

json::value timing_json(const engine::timing& t) {
  if (t.trials == 0)
    return nullptr;
  return json::object{
      {"median_ms", t.median_ms}, {"p10_ms", t.p10_ms}, {"p90_ms", t.p90_ms}, {"trials", t.trials}};
}

} // namespace

json::object node_json(const engine::node_record& n, const std::optional<memory::node_detail>& d) {
  json::object o{
      {"id", n.id},
      {"parent", n.parent == engine::no_node ? json::value(nullptr) : json::value(n.parent)},
      {"depth", n.depth},
      {"expansion", n.expansion},
      {"plan", plan_json(n.plan)},
      {"genotype", genotype_json(n)},
      {"source_hash", n.source_hash},
      {"status", engine::to_string(n.status)},
      {"disposition", engine::to_string(n.disposition)},
      {"final", engine::is_final(n)},
      {"failure_kind", n.failure_kind.empty() ? json::value(nullptr) : json::value(n.failure_kind)},
      {"failure_message",
       d && !d->message.empty() ? json::value(d->message) : json::value(nullptr)},
      {"timing", timing_json(n.time)},
      {"fraction_of_roofline", n.fraction_of_roofline},
      {"expansion_state",
       n.expansion_state == engine::expansion_state::open ? "open" : "exhausted"},
  };
  if (d) {
    if (!d->resources_json.empty())
      o["resources"] = json_or_text(d->resources_json);
    if (!d->verify_json.empty())
      o["verify"] = json_or_text(d->verify_json);
    if (auto used = vendor_libraries_of(d->verify_json); !used.empty())
      o["vendor_libraries"] = json_strings(used);
    // What the counters said, and the analyst's class with its evidence.
    if (!d->profile_json.empty())
      o["profile"] = json_or_text(d->profile_json);
    if (!d->diagnosis_json.empty())
      o["diagnosis"] = json_or_text(d->diagnosis_json);
    // Which card gave the timing: a child is judged against its parent on that card.
    if (d->timed_gpu >= 0)
      o["timed_gpu"] = d->timed_gpu;
    // Compiler diagnostics can be long: kept for the nodes they explain.
    if (n.status == engine::node_status::compile_failed && !d->diagnostics.empty())
      o["diagnostics"] = d->diagnostics;
  }
  return o;
}

} // namespace ks::report
