// Encoding and decoding of the store's records (grammar in record_codec.hpp). Decoding throws
// decode::malformed (json/decode.hpp's field readers) inside this file and turns it into a
// decoded<T> error at each decode_* entry point, so that the field readers stay one line each.

#include "memory/record_codec.hpp"

#include "json/decode.hpp"
#include "json/encode.hpp"
#include "memory/json_text.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace json = boost::json;

namespace ks::memory::records {

namespace {

// -- decoding helpers --------------------------------------------------------------------------

using corrupt_value = decode::malformed;
using decode::field;
using decode::integer_field;
using decode::object_field;
using decode::string_field;

// Reads what real() wrote: a number, null (NaN), "inf" or "-inf".
double real_value(const json::value& v, std::string_view key) {
  if (v.is_number())
    return v.to_number<double>();
  if (v.is_null())
    return std::numeric_limits<double>::quiet_NaN();
  if (v.is_string() && v.get_string() == "inf")
    return std::numeric_limits<double>::infinity();
  if (v.is_string() && v.get_string() == "-inf")
    return -std::numeric_limits<double>::infinity();
  throw corrupt_value("field '" + std::string(key) + "' must be a number");
}

double real(const json::object& o, std::string_view key) {
  return real_value(field(o, key), key);
}

template <class Enum>
Enum enum_field(const json::object& o, std::string_view key,
                std::optional<Enum> (*parse)(std::string_view) noexcept) {
  std::string name = string_field(o, key);
  std::optional<Enum> e = parse(name);
  if (!e)
    throw corrupt_value("field '" + std::string(key) + "' has unknown value '" + name + "'");
  return *e;
}

// Reads a task's phase: its number, or its name (how stores written by name hold it).
engine::task_phase task_phase_field(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  std::optional<engine::task_phase> phase;
  if (v.is_int64())
    phase = engine::task_phase_from_number(v.get_int64());
  else if (v.is_string())
    phase = engine::parse_task_phase(v.get_string());
  else
    throw corrupt_value("field '" + std::string(key) + "' must be an integer");
  if (!phase)
    throw corrupt_value("field '" + std::string(key) + "' has unknown value " +
                        encode::serialize(v));
  return *phase;
}

std::optional<engine::expansion_state> parse_expansion_state(std::string_view name) noexcept {
  if (name == "open")
    return engine::expansion_state::open;
  if (name == "exhausted")
    return engine::expansion_state::exhausted;
  return std::nullopt;
}

const char* to_string(engine::expansion_state s) noexcept {
  return s == engine::expansion_state::exhausted ? "exhausted" : "open";
}

template <class T, class F>
decoded<T> decode_with(std::string_view value, std::string_view tag, F read,
                       int64_t format_version = version) {
  try {
    if constexpr (std::is_void_v<T>) {
      read(open_record(value, tag, format_version));
      return {};
    } else {
      return read(open_record(value, tag, format_version));
    }
  } catch (const corrupt_value& e) {
    return tl::unexpected(std::string(e.what()));
  }
}

// -- encoding helpers --------------------------------------------------------------------------

// JSON has no NaN or infinity (Boost.JSON 1.81 would write the invalid tokens NaN and
// Infinity): as in the worker protocol, NaN is null and an infinity the string "inf"/"-inf".
json::value real(double v) {
  if (std::isnan(v))
    return nullptr;
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  return v;
}

json::object header(std::string_view tag) {
  return json::object{{"v", version}, {"type", tag}};
}

json::object plan_json(const engine::plan& p) {
  json::object params;
  for (const auto& [k, v] : p.params)
    params[k] = v;
  json::object o{{"skill", p.skill}, {"description", p.description}, {"params", params}};
  // The genotype's other half, written only when known: a plan without them reads back as
  // its skill and parameters alone.
  if (p.skill_version != 0)
    o["skill_version"] = p.skill_version;
  if (!p.template_name.empty())
    o["template"] = p.template_name;
  return o;
}

engine::plan read_plan(const json::object& o) {
  engine::plan p;
  p.skill = string_field(o, "skill");
  p.description = string_field(o, "description");
  for (const auto& [k, v] : object_field(o, "params")) {
    if (!v.is_string())
      throw corrupt_value("plan parameter '" + std::string(k) + "' must be a string");
    p.params[std::string(k)] = std::string(v.get_string());
  }
  if (o.contains("skill_version"))
    p.skill_version = integer_field(o, "skill_version");
  if (o.contains("template"))
    p.template_name = string_field(o, "template");
  return p;
}

json::object timing_json(const engine::timing& t) {
  json::array samples;
  samples.reserve(t.samples_ms.size());
  for (double s : t.samples_ms)
    samples.push_back(real(s));
  return json::object{{"median_ms", real(t.median_ms)},
                      {"p10_ms", real(t.p10_ms)},
                      {"p90_ms", real(t.p90_ms)},
                      {"trials", t.trials},
                      {"samples_ms", samples}};
}

engine::timing read_timing(const json::object& o) {
  engine::timing t;
  t.median_ms = real(o, "median_ms");
  t.p10_ms = real(o, "p10_ms");
  t.p90_ms = real(o, "p90_ms");
  t.trials = integer_field(o, "trials");
  const json::value& samples = field(o, "samples_ms");
  if (!samples.is_array())
    throw corrupt_value("field 'samples_ms' must be an array");
  for (const json::value& s : samples.get_array())
    t.samples_ms.push_back(real_value(s, "samples_ms"));
  return t;
}

std::string hex_of(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xf];
  }
  return out;
}

std::string bytes_of_hex(std::string_view hex) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    throw corrupt_value("field 'bytes_hex' holds a character that is no lowercase hex digit");
  };
  if (hex.size() % 2 != 0)
    throw corrupt_value("field 'bytes_hex' has an odd number of digits");
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2)
    out += static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1]));
  return out;
}

std::string text(json::object o) {
  return encode::serialize(o);
}

} // namespace

// -- keys --------------------------------------------------------------------------------------

std::string number_key(int64_t n) {
  std::string digits = std::to_string(n);
  return std::string(20 - std::min<size_t>(20, digits.size()), '0') + digits;
}

std::optional<int64_t> parse_number_key(std::string_view text) {
  int64_t n = 0;
  if (text.size() != 20)
    return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0)
    return std::nullopt;
  return n;
}

std::string join(std::string_view a, std::string_view b) {
  std::string key(a);
  key += '\0';
  key += b;
  return key;
}

std::string join(std::string_view a, std::string_view b, std::string_view c) {
  return join(join(a, b), c);
}

std::string node_key(int64_t node) {
  return node < 0 ? std::string("-1") : number_key(node);
}

std::optional<int64_t> parse_node_key(std::string_view text) {
  if (text == "-1")
    return -1;
  return parse_number_key(text);
}

std::string display_key(std::string_view db, std::string_view key) {
  std::string out(db);
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = std::min(key.find('\0', start), key.size());
    std::string_view part = key.substr(start, end - start);
    std::optional<int64_t> n = parse_number_key(part);
    out += '/';
    out += n ? std::to_string(*n) : std::string(part);
    start = end + 1;
  }
  return out;
}

// -- encoding ----------------------------------------------------------------------------------

std::string encode_store_header() {
  json::object o = header("store");
  o["magic"] = magic;
  o["checksum"] = seal::checksum_name;
  return text(std::move(o));
}

std::string encode(const campaign_record& r) {
  json::object o = header("campaign");
  o["config_text"] = r.config_text;
  o["started_at"] = r.started_at;
  o["environment"] = r.environment;
  o["runs"] = r.runs;
  return text(std::move(o));
}

std::string encode(const task_state& r) {
  json::object o = header("task");
  o["name"] = r.name;
  o["manifest"] = r.manifest;
  o["phase"] = static_cast<int64_t>(r.phase);
  o["stop_reason"] = r.stop_reason;
  o["stop_text"] = r.stop_text;
  o["winner"] = r.winner;
  o["winner_median_ms"] = real(r.winner_median_ms);
  o["reference_median_ms"] = real(r.reference_median_ms);
  o["roofline_floor_ms"] = real(r.roofline_floor_ms);
  o["home_gpu"] = r.home_gpu;
  o["home_load_ms"] = real(r.home_load_ms);
  o["cost_flops"] = real(r.cost_flops);
  o["cost_bytes"] = real(r.cost_bytes);
  return text(std::move(o));
}

std::string encode(const engine::node_record& r) {
  json::object o = header("node");
  o["id"] = r.id;
  o["parent"] = r.parent;
  o["depth"] = r.depth;
  o["expansion"] = r.expansion;
  o["plan"] = plan_json(r.plan);
  o["source_hash"] = r.source_hash;
  o["status"] = engine::to_string(r.status);
  o["disposition"] = engine::to_string(r.disposition);
  o["time"] = timing_json(r.time);
  o["fraction_of_roofline"] = real(r.fraction_of_roofline);
  o["failure_kind"] = r.failure_kind;
  o["expansion_state"] = to_string(r.expansion_state);
  return text(std::move(o));
}

std::string encode(const node_detail& r) {
  json::object o = header("detail");
  o["message"] = r.message;
  o["diagnostics"] = r.diagnostics;
  o["resources_json"] = r.resources_json;
  o["verify_json"] = r.verify_json;
  o["timed_gpu"] = r.timed_gpu;
  // Written only when known: a detail without them reads back with neither.
  if (!r.profile_json.empty())
    o["profile_json"] = r.profile_json;
  if (!r.diagnosis_json.empty())
    o["diagnosis_json"] = r.diagnosis_json;
  return text(std::move(o));
}

std::string encode_source(std::string_view source_text) {
  json::object o = header("source");
  // A JSON string holds only UTF-8; a source that is not (a Latin-1 comment) keeps its bytes.
  if (encode::is_valid_utf8(source_text)) {
    o["text"] = source_text;
  } else {
    o["text"] = encode::valid_utf8(source_text);
    o["bytes_hex"] = hex_of(source_text);
  }
  return text(std::move(o));
}

std::string encode(const engine::plan_outcome& r) {
  json::object o = header("outcome");
  o["plan"] = plan_json(r.plan);
  o["child"] = r.child;
  o["outcome"] = engine::to_string(r.outcome);
  o["failure_kind"] = r.failure_kind;
  o["gain"] = real(r.gain);
  return text(std::move(o));
}

std::string encode(const engine::repair_round& r) {
  json::object o = header("repair");
  o["round"] = r.round;
  o["error_text"] = r.error_text;
  o["diagnosis"] = r.diagnosis;
  o["fix_summary"] = r.fix_summary;
  o["source_hash"] = r.source_hash;
  o["repaired_hash"] = r.repaired_hash;
  return text(std::move(o));
}

std::string encode_calibration(std::string_view json_text) {
  json::object o = header("calibration");
  o["json"] = json_text;
  return text(std::move(o));
}

std::string encode(const skill_stat& r) {
  json::object o = header("skill_stat");
  o["tries"] = r.tries;
  o["successes"] = r.successes;
  o["total_gain"] = real(r.total_gain);
  return text(std::move(o));
}

// -- decoding ----------------------------------------------------------------------------------

decoded<seal::rule> decode_store_header(std::string_view value) {
  return decode_with<seal::rule>(value, "store", [](const json::object& o) {
    if (std::string m = string_field(o, "magic"); m != magic)
      throw corrupt_value("magic '" + m + "' where '" + std::string(magic) + "' belongs");
    if (!o.contains("checksum"))
      return seal::rule::optional;
    if (std::string c = string_field(o, "checksum"); c != seal::checksum_name)
      throw corrupt_value("its records carry a checksum this kernelskill does not know ('" + c +
                          "')");
    return seal::rule::required;
  });
}

decoded<campaign_record> decode_campaign(std::string_view value) {
  return decode_with<campaign_record>(value, "campaign", [](const json::object& o) {
    return campaign_record{string_field(o, "config_text"), string_field(o, "started_at"),
                           string_field(o, "environment"), integer_field(o, "runs")};
  });
}

decoded<task_state> decode_task(std::string_view value) {
  return decode_with<task_state>(value, "task", [](const json::object& o) {
    task_state t;
    t.name = string_field(o, "name");
    t.manifest = string_field(o, "manifest");
    t.phase = task_phase_field(o, "phase");
    t.stop_reason = string_field(o, "stop_reason");
    t.stop_text = string_field(o, "stop_text");
    t.winner = integer_field(o, "winner");
    t.winner_median_ms = real(o, "winner_median_ms");
    t.reference_median_ms = real(o, "reference_median_ms");
    t.roofline_floor_ms = real(o, "roofline_floor_ms");
    // A task record without a home: the task's home is chosen again.
    t.home_gpu = o.contains("home_gpu") ? static_cast<int32_t>(integer_field(o, "home_gpu")) : -1;
    t.home_load_ms = o.contains("home_load_ms") ? real(o, "home_load_ms") : 0;
    // A task record written before the costs were kept: its roofline point is left out.
    t.cost_flops = o.contains("cost_flops") ? real(o, "cost_flops") : 0;
    t.cost_bytes = o.contains("cost_bytes") ? real(o, "cost_bytes") : 0;
    return t;
  });
}

decoded<engine::node_record> decode_node(std::string_view value) {
  return decode_with<engine::node_record>(value, "node", [](const json::object& o) {
    engine::node_record n;
    n.id = integer_field(o, "id");
    n.parent = integer_field(o, "parent");
    n.depth = integer_field(o, "depth");
    n.expansion = integer_field(o, "expansion");
    n.plan = read_plan(object_field(o, "plan"));
    n.source_hash = string_field(o, "source_hash");
    n.status = enum_field(o, "status", &engine::parse_node_status);
    n.disposition = enum_field(o, "disposition", &engine::parse_disposition);
    n.time = read_timing(object_field(o, "time"));
    n.fraction_of_roofline = real(o, "fraction_of_roofline");
    n.failure_kind = string_field(o, "failure_kind");
    n.expansion_state = enum_field(o, "expansion_state", &parse_expansion_state);
    return n;
  });
}

decoded<node_detail> decode_detail(std::string_view value) {
  return decode_with<node_detail>(value, "detail", [](const json::object& o) {
    node_detail d;
    d.message = string_field(o, "message");
    d.diagnostics = string_field(o, "diagnostics");
    d.resources_json = string_field(o, "resources_json");
    d.verify_json = string_field(o, "verify_json");
    d.timed_gpu =
        o.contains("timed_gpu") ? static_cast<int32_t>(integer_field(o, "timed_gpu")) : -1;
    d.profile_json = o.contains("profile_json") ? string_field(o, "profile_json") : std::string();
    d.diagnosis_json =
        o.contains("diagnosis_json") ? string_field(o, "diagnosis_json") : std::string();
    return d;
  });
}

decoded<std::string> decode_source(std::string_view value) {
  return decode_with<std::string>(value, "source", [](const json::object& o) {
    std::string shown = string_field(o, "text");
    return o.contains("bytes_hex") ? bytes_of_hex(string_field(o, "bytes_hex")) : shown;
  });
}

decoded<engine::plan_outcome> decode_outcome(std::string_view value) {
  return decode_with<engine::plan_outcome>(value, "outcome", [](const json::object& o) {
    engine::plan_outcome r;
    r.plan = read_plan(object_field(o, "plan"));
    r.child = integer_field(o, "child");
    r.outcome = enum_field(o, "outcome", &engine::parse_outcome_kind);
    r.failure_kind = string_field(o, "failure_kind");
    r.gain = real(o, "gain");
    return r;
  });
}

decoded<engine::repair_round> decode_repair(std::string_view value) {
  return decode_with<engine::repair_round>(value, "repair", [](const json::object& o) {
    // A round written before rounds named their source has none: it matches no repeat.
    return engine::repair_round{
        integer_field(o, "round"),
        string_field(o, "error_text"),
        string_field(o, "diagnosis"),
        string_field(o, "fix_summary"),
        o.contains("source_hash") ? string_field(o, "source_hash") : std::string(),
        o.contains("repaired_hash") ? string_field(o, "repaired_hash") : std::string()};
  });
}

decoded<std::string> decode_calibration(std::string_view value) {
  return decode_with<std::string>(value, "calibration",
                                  [](const json::object& o) { return string_field(o, "json"); });
}

decoded<skill_stat> decode_skill_stat(std::string_view value) {
  return decode_with<skill_stat>(value, "skill_stat", [](const json::object& o) {
    return skill_stat{integer_field(o, "tries"), integer_field(o, "successes"),
                      real(o, "total_gain")};
  });
}

decoded<transcript_fields> decode_transcript(std::string_view value) {
  return decode_with<transcript_fields>(
      value, transcript_tag,
      [](const json::object& o) {
        // Every field of the grammar is read, those the store keeps no copy of too, so that a
        // text the replay or a person could not read is refused when written, not found later.
        transcript_fields t;
        t.id = integer_field(o, "id");
        t.role = string_field(o, "role");
        t.task = string_field(o, "task");
        t.node = integer_field(o, "node");
        if (t.node < -1)
          throw corrupt_value("field 'node' must be a node id >= 0 or -1 (none), not " +
                              std::to_string(t.node));
        for (std::string_view key :
             {"api", "endpoint", "started_at", "error", "reply", "finish_reason"})
          string_field(o, key);
        t.model = string_field(o, "model");
        t.outcome = string_field(o, "outcome");
        t.latency_ms = decode::number_field(o, "latency_ms");
        for (const json::value& a : decode::as_array(field(o, "attempts"), "attempts")) {
          const json::object& attempt = decode::as_object(a, "an attempt");
          integer_field(attempt, "status");
          string_field(attempt, "error");
          decode::number_field(attempt, "ms");
          decode::number_field(attempt, "retry_after_s");
        }
        for (const json::value& m : decode::as_array(field(o, "messages"), "messages")) {
          const json::object& message = decode::as_object(m, "a message");
          string_field(message, "role");
          string_field(message, "content");
        }
        t.input_tokens = integer_field(o, "input_tokens");
        t.output_tokens = integer_field(o, "output_tokens");
        t.cost = decode::number_field(o, "cost");
        return t;
      },
      transcript_version);
}

} // namespace ks::memory::records
