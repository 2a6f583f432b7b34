// Encoding and decoding of the worker protocol (grammar in worker_protocol.hpp).
//
// Decoding is strict about what it needs and lenient about what it does not: a missing or
// mistyped required field is a protocol error naming the field, while unknown extra fields
// are ignored so that a newer peer of the same version can add diagnostics. Numbers are
// read with Boost.JSON's to_number, which accepts an integer where a double is expected.

#include "gpu/worker_protocol.hpp"

#include "gpu/device_json.hpp"
#include "json/decode.hpp"
#include "json/encode.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace json = boost::json;

namespace ks::gpu {

namespace {

// -- decoding helpers ----------------------------------------------------------------------

// json/decode.hpp's field readers throw decode::malformed inside this file only; decode_*
// turn it (and every other exception) into an errc::protocol error.
using decode_error = decode::malformed;
using decode::as_array;
using decode::as_object;
using decode::field;

json::object parse_object(std::string_view line) {
  json::error_code ec;
  auto v = json::parse(line, ec);
  if (ec)
    throw decode_error("not a JSON line (" + ec.message() + ")");
  if (!v.is_object())
    throw decode_error("a protocol line must be a JSON object");
  auto& obj = v.get_object();
  auto version = decode::number<int64_t>(obj, "v");
  if (version != protocol_version)
    throw decode_error("protocol version " + std::to_string(version) + ", expected " +
                       std::to_string(protocol_version));
  return std::move(obj);
}

// -- tasks ---------------------------------------------------------------------------------

json::object encode_tensor(const engine::tensor_spec& t) {
  json::array shape;
  for (auto d : t.shape)
    shape.emplace_back(d);
  return {{"name", t.name}, {"dtype", engine::to_string(t.type)},
          {"shape", shape}, {"init", engine::to_string(t.init)},
          {"low", t.low},   {"high", t.high}};
}

engine::tensor_spec decode_tensor(const json::value& v) {
  const auto& obj = as_object(v, "tensor");
  engine::tensor_spec t;
  t.name = decode::string_field(obj, "name");
  auto type_name = decode::string_field(obj, "dtype");
  auto type = engine::parse_dtype(type_name);
  if (!type)
    throw decode_error("unknown dtype '" + type_name + "'");
  t.type = *type;
  for (const auto& d : as_array(field(obj, "shape"), "shape")) {
    if (!d.is_int64() && !d.is_uint64())
      throw decode_error("shape entries must be integers");
    t.shape.push_back(d.is_int64() ? d.get_int64() : static_cast<int64_t>(d.get_uint64()));
  }
  auto init_name = decode::string_field_or(obj, "init", "normal");
  auto init = engine::parse_init_kind(init_name);
  if (!init)
    throw decode_error("unknown init '" + init_name + "'");
  t.init = *init;
  t.low = decode::number_or<int64_t>(obj, "low", 0);
  t.high = decode::number_or<int64_t>(obj, "high", 2);
  return t;
}

json::object encode_task(const engine::task& t) {
  json::array inputs, outputs;
  for (const auto& x : t.inputs)
    inputs.emplace_back(encode_tensor(x));
  for (const auto& y : t.outputs)
    outputs.emplace_back(encode_tensor(y));
  return {{"name", t.name},
          {"inputs", inputs},
          {"outputs", outputs},
          {"tolerance", {{"atol", t.tol.atol}, {"rtol", t.tol.rtol}, {"norm_rel", t.tol.norm_rel}}},
          {"cost", {{"flops", t.cost.flops}, {"bytes", t.cost.bytes}}}};
}

engine::task decode_task(const json::value& v) {
  const auto& obj = as_object(v, "task");
  engine::task t;
  t.name = decode::string_field(obj, "name");
  for (const auto& x : as_array(field(obj, "inputs"), "inputs"))
    t.inputs.push_back(decode_tensor(x));
  for (const auto& y : as_array(field(obj, "outputs"), "outputs"))
    t.outputs.push_back(decode_tensor(y));
  const auto& tol = as_object(field(obj, "tolerance"), "tolerance");
  t.tol.atol = decode::number<double>(tol, "atol");
  t.tol.rtol = decode::number<double>(tol, "rtol");
  t.tol.norm_rel = decode::number<double>(tol, "norm_rel");
  if (obj.contains("cost")) {
    const auto& cost = as_object(obj.at("cost"), "cost");
    t.cost.flops = decode::number_or<double>(cost, "flops", 0);
    t.cost.bytes = decode::number_or<double>(cost, "bytes", 0);
  }
  return t;
}

// -- results -------------------------------------------------------------------------------

json::object encode_payload(const device_info& d) {
  return device_info_json(d);
}

json::object encode_payload(const calibration& c) {
  return calibration_json(c);
}

// JSON has no NaN or infinity (Boost.JSON 1.81 would write the invalid tokens NaN and
// Infinity), so a NaN travels as null and an infinity as the string "inf" or "-inf".
json::value real(double v) {
  if (std::isnan(v))
    return nullptr;
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  return v;
}

// A list of paths, left out when empty (as before vendor libraries were reported).
void put_paths(json::object& o, std::string_view key, const std::vector<std::string>& paths) {
  if (paths.empty())
    return;
  json::array list;
  for (const std::string& p : paths)
    list.emplace_back(p);
  o[key] = std::move(list);
}

std::vector<std::string> get_paths(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (!o.contains(key))
    return out;
  for (const auto& p : as_array(o.at(key), key)) {
    if (!p.is_string())
      throw decode_error("'" + std::string(key) + "' must hold strings");
    out.emplace_back(p.get_string());
  }
  return out;
}

vendor_policy get_vendor_policy(const json::object& o) {
  auto name = decode::string_field_or(o, "vendor_libraries", "refuse");
  if (name == to_string(vendor_policy::allow))
    return vendor_policy::allow;
  if (name == to_string(vendor_policy::refuse))
    return vendor_policy::refuse;
  throw decode_error("'vendor_libraries' must be \"refuse\" or \"allow\", not '" + name + "'");
}

json::object encode_payload(const verify_result& r) {
  json::object o{{"passed", r.passed},
                 {"trials", r.trials},
                 {"max_abs_err", real(r.max_abs_err)},
                 {"max_rel_err", real(r.max_rel_err)},
                 {"norm_rel_err", real(r.norm_rel_err)},
                 {"bad_count", r.bad_count},
                 {"nan_count", r.nan_count},
                 {"first_bad_index", r.first_bad_index},
                 {"bad_output", r.bad_output},
                 {"bad_trial", r.bad_trial},
                 {"expected", real(r.expected)},
                 {"actual", real(r.actual)},
                 {"input_changed", r.input_changed}};
  put_paths(o, "vendor_libraries", r.vendor_libraries);
  return o;
}

// Reads a number written by real(): null is NaN, "inf" and "-inf" are infinities.
double get_double_or_nan(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it != o.end() && it->value().is_null())
    return std::numeric_limits<double>::quiet_NaN();
  if (it != o.end() && it->value().is_string()) {
    auto text = it->value().get_string();
    if (text == "inf")
      return std::numeric_limits<double>::infinity();
    if (text == "-inf")
      return -std::numeric_limits<double>::infinity();
  }
  return decode::number<double>(o, key);
}

verify_result decode_verify_result(const json::object& o) {
  verify_result r;
  r.passed = decode::bool_field_or(o, "passed", false);
  r.trials = decode::number<int32_t>(o, "trials");
  r.max_abs_err = get_double_or_nan(o, "max_abs_err");
  r.max_rel_err = get_double_or_nan(o, "max_rel_err");
  r.norm_rel_err = get_double_or_nan(o, "norm_rel_err");
  r.bad_count = decode::number_or<int64_t>(o, "bad_count", 0);
  r.nan_count = decode::number_or<int64_t>(o, "nan_count", 0);
  r.first_bad_index = decode::number_or<int64_t>(o, "first_bad_index", -1);
  r.bad_output = decode::string_field_or(o, "bad_output", "");
  r.bad_trial = decode::number_or<int32_t>(o, "bad_trial", -1);
  r.expected = o.contains("expected") ? get_double_or_nan(o, "expected") : 0.0;
  r.actual = o.contains("actual") ? get_double_or_nan(o, "actual") : 0.0;
  r.input_changed = decode::bool_field_or(o, "input_changed", false);
  r.vendor_libraries = get_paths(o, "vendor_libraries");
  return r;
}

json::object encode_payload(const timing_result& t) {
  json::object o{{"median_ms", t.median_ms},
                 {"p10_ms", t.p10_ms},
                 {"p90_ms", t.p90_ms},
                 {"min_ms", t.min_ms},
                 {"mean_ms", t.mean_ms},
                 {"trials", t.trials},
                 {"host_ms_per_call", t.host_ms_per_call},
                 {"device_tail_ms", t.device_tail_ms},
                 {"escaped", t.escaped},
                 {"batch", t.batch},
                 {"input_sets", t.input_sets},
                 {"checked_calls", t.checked_calls},
                 {"audit", t.audit},
                 {"audit_note", t.audit_note},
                 {"l2_resets", t.l2_resets}};
  put_paths(o, "vendor_libraries", t.vendor_libraries);
  if (!t.samples_ms.empty()) {
    json::array samples;
    for (double s : t.samples_ms)
      samples.emplace_back(s);
    o["samples_ms"] = std::move(samples);
  }
  return o;
}

timing_result decode_timing_result(const json::object& o) {
  timing_result t;
  t.median_ms = decode::number<double>(o, "median_ms");
  t.p10_ms = decode::number<double>(o, "p10_ms");
  t.p90_ms = decode::number<double>(o, "p90_ms");
  t.min_ms = decode::number_or<double>(o, "min_ms", 0);
  t.mean_ms = decode::number_or<double>(o, "mean_ms", 0);
  t.trials = decode::number<int32_t>(o, "trials");
  t.host_ms_per_call = decode::number_or<double>(o, "host_ms_per_call", 0);
  t.device_tail_ms = decode::number_or<double>(o, "device_tail_ms", 0);
  t.escaped = decode::bool_field_or(o, "escaped", false);
  t.batch = decode::number_or<int32_t>(o, "batch", 0);
  t.input_sets = decode::number_or<int32_t>(o, "input_sets", 0);
  t.checked_calls = decode::number_or<int32_t>(o, "checked_calls", 0);
  t.audit = decode::string_field_or(o, "audit", "");
  t.audit_note = decode::string_field_or(o, "audit_note", "");
  t.l2_resets = decode::number_or<int32_t>(o, "l2_resets", 0);
  t.vendor_libraries = get_paths(o, "vendor_libraries");
  if (o.contains("samples_ms")) {
    const auto& samples = as_array(o.at("samples_ms"), "samples_ms");
    if (samples.size() > timing_result::max_reported_samples)
      throw decode_error("'samples_ms' holds " + std::to_string(samples.size()) +
                         " values, more than " +
                         std::to_string(timing_result::max_reported_samples));
    for (const auto& s : samples) {
      double ms = s.is_number() ? s.to_number<double>() : -1;
      if (!std::isfinite(ms) || ms < 0)
        throw decode_error("'samples_ms' must hold non-negative finite numbers");
      t.samples_ms.push_back(ms);
    }
  }
  return t;
}

// -- profiles ------------------------------------------------------------------------------

json::object encode_metrics(const std::map<std::string, double>& metrics) {
  json::object out;
  for (const auto& [name, value] : metrics)
    if (std::isfinite(value))
      out[name] = value;
  return out;
}

std::map<std::string, double> decode_metrics(const json::object& o, std::string_view key) {
  std::map<std::string, double> out;
  if (!o.contains(key))
    return out;
  for (const auto& [name, value] : as_object(o.at(key), key)) {
    if (value.is_null())
      continue; // not a finite number where it was measured: left out
    if (!value.is_number())
      throw decode_error("metric '" + std::string(name) + "' must be a number");
    out[std::string(name)] = value.to_number<double>();
  }
  return out;
}

json::array encode_triple(const std::array<int32_t, 3>& v) {
  return json::array{v[0], v[1], v[2]};
}

std::array<int32_t, 3> decode_triple(const json::object& o, std::string_view key) {
  std::array<int32_t, 3> out{1, 1, 1};
  if (!o.contains(key))
    return out;
  const auto& a = as_array(o.at(key), key);
  if (a.size() != 3)
    throw decode_error("'" + std::string(key) + "' must hold 3 integers");
  for (size_t i = 0; i < 3; ++i) {
    if (!a[i].is_int64() && !a[i].is_uint64())
      throw decode_error("'" + std::string(key) + "' must hold 3 integers");
    out[i] = static_cast<int32_t>(a[i].is_int64() ? a[i].get_int64() : a[i].get_uint64());
  }
  return out;
}

json::object encode_kernel(const engine::kernel_profile& k) {
  return {{"name", k.name},
          {"launches", k.launches},
          {"duration_ms", k.duration_ms},
          {"grid", encode_triple(k.grid)},
          {"block", encode_triple(k.block)},
          {"registers", k.registers},
          {"static_shared_bytes", k.static_shared_bytes},
          {"dynamic_shared_bytes", k.dynamic_shared_bytes},
          {"local_bytes_per_thread", k.local_bytes_per_thread},
          {"metrics", encode_metrics(k.metrics)}};
}

engine::kernel_profile decode_kernel(const json::value& v) {
  const auto& o = as_object(v, "kernel");
  engine::kernel_profile k;
  k.name = decode::string_field(o, "name");
  k.launches = decode::number_or<int64_t>(o, "launches", 1);
  k.duration_ms = decode::number_or<double>(o, "duration_ms", 0);
  k.grid = decode_triple(o, "grid");
  k.block = decode_triple(o, "block");
  k.registers = decode::number_or<int32_t>(o, "registers", 0);
  k.static_shared_bytes = decode::number_or<int64_t>(o, "static_shared_bytes", 0);
  k.dynamic_shared_bytes = decode::number_or<int64_t>(o, "dynamic_shared_bytes", 0);
  k.local_bytes_per_thread = decode::number_or<int64_t>(o, "local_bytes_per_thread", 0);
  k.metrics = decode_metrics(o, "metrics");
  return k;
}

json::object encode_payload(const engine::profile& p) {
  json::array kernels, notes;
  for (const auto& k : p.kernels)
    kernels.push_back(encode_kernel(k));
  for (const auto& n : p.notes)
    notes.push_back(json::string(n));
  const engine::device_limits& d = p.device;
  return {{"launches", p.launches},
          {"copies", p.copies},
          {"kernel_ms", p.kernel_ms},
          {"span_ms", p.span_ms},
          {"counters", p.counters},
          {"counters_unavailable", p.counters_unavailable},
          {"range", p.range},
          {"replay", p.replay},
          {"passes", p.passes},
          {"metrics", encode_metrics(p.metrics)},
          {"notes", std::move(notes)},
          {"device",
           {{"sms", d.sms},
            {"max_warps_per_sm", d.max_warps_per_sm},
            {"max_blocks_per_sm", d.max_blocks_per_sm},
            {"registers_per_sm", d.registers_per_sm},
            {"max_registers_per_block", d.max_registers_per_block},
            {"shared_bytes_per_sm", d.shared_bytes_per_sm},
            {"shared_bytes_per_block_optin", d.shared_bytes_per_block_optin},
            {"reserved_shared_bytes_per_block", d.reserved_shared_bytes_per_block}}},
          {"profile_ms", p.profile_ms},
          {"kernels", std::move(kernels)}};
}

engine::profile decode_profile_object(const json::object& o) {
  engine::profile p;
  p.launches = decode::number<int64_t>(o, "launches");
  p.copies = decode::number_or<int64_t>(o, "copies", 0);
  p.kernel_ms = decode::number_or<double>(o, "kernel_ms", 0);
  p.span_ms = decode::number_or<double>(o, "span_ms", 0);
  p.counters = decode::bool_field_or(o, "counters", false);
  p.counters_unavailable = decode::string_field_or(o, "counters_unavailable", "");
  p.range = decode::string_field_or(o, "range", "");
  p.replay = decode::string_field_or(o, "replay", "");
  p.passes = decode::number_or<int32_t>(o, "passes", 0);
  p.metrics = decode_metrics(o, "metrics");
  if (o.contains("notes"))
    for (const auto& n : as_array(o.at("notes"), "notes")) {
      if (!n.is_string())
        throw decode_error("'notes' must hold strings");
      p.notes.emplace_back(n.get_string());
    }
  if (o.contains("device")) {
    const auto& d = as_object(o.at("device"), "device");
    engine::device_limits& l = p.device;
    l.sms = decode::number_or<int32_t>(d, "sms", l.sms);
    l.max_warps_per_sm = decode::number_or<int32_t>(d, "max_warps_per_sm", l.max_warps_per_sm);
    l.max_blocks_per_sm = decode::number_or<int32_t>(d, "max_blocks_per_sm", l.max_blocks_per_sm);
    l.registers_per_sm = decode::number_or<int32_t>(d, "registers_per_sm", l.registers_per_sm);
    l.max_registers_per_block =
        decode::number_or<int32_t>(d, "max_registers_per_block", l.max_registers_per_block);
    l.shared_bytes_per_sm =
        decode::number_or<int64_t>(d, "shared_bytes_per_sm", l.shared_bytes_per_sm);
    l.shared_bytes_per_block_optin = decode::number_or<int64_t>(d, "shared_bytes_per_block_optin",
                                                                l.shared_bytes_per_block_optin);
    l.reserved_shared_bytes_per_block = decode::number_or<int64_t>(
        d, "reserved_shared_bytes_per_block", l.reserved_shared_bytes_per_block);
  }
  p.profile_ms = decode::number_or<double>(o, "profile_ms", 0);
  if (o.contains("kernels"))
    for (const auto& k : as_array(o.at("kernels"), "kernels"))
      p.kernels.push_back(decode_kernel(k));
  return p;
}

// -- stability probes ----------------------------------------------------------------------

json::object encode_payload(const probe_result& p) {
  return {{"bytes", p.bytes},   {"samples", p.samples}, {"median_ms", p.median_ms},
          {"p10_ms", p.p10_ms}, {"p90_ms", p.p90_ms},   {"min_ms", p.min_ms},
          {"max_ms", p.max_ms}};
}

probe_result decode_probe_result(const json::object& o) {
  probe_result p;
  p.bytes = decode::number<int64_t>(o, "bytes");
  p.samples = decode::number<int32_t>(o, "samples");
  p.median_ms = decode::number<double>(o, "median_ms");
  p.p10_ms = decode::number<double>(o, "p10_ms");
  p.p90_ms = decode::number<double>(o, "p90_ms");
  p.min_ms = decode::number_or<double>(o, "min_ms", 0);
  p.max_ms = decode::number_or<double>(o, "max_ms", 0);
  for (double ms : {p.median_ms, p.p10_ms, p.p90_ms})
    if (!std::isfinite(ms) || ms < 0)
      throw decode_error("a probe's times must be non-negative finite numbers");
  return p;
}

json::object encode_failure(const failure& f) {
  json::object obj{{"kind", to_string(f.kind)}, {"message", f.message}};
  if (f.return_code)
    obj["return_code"] = *f.return_code;
  if (!f.cuda_error.empty())
    obj["cuda_error"] = f.cuda_error;
  if (f.verify)
    obj["verify"] = encode_payload(*f.verify);
  return obj;
}

failure decode_failure(const json::object& o) {
  failure f;
  auto kind_name = decode::string_field(o, "kind");
  auto kind = parse_failure_kind(kind_name);
  if (!kind)
    throw decode_error("unknown failure kind '" + kind_name + "'");
  f.kind = *kind;
  f.message = decode::string_field(o, "message");
  if (o.contains("return_code"))
    f.return_code = decode::number<int32_t>(o, "return_code");
  f.cuda_error = decode::string_field_or(o, "cuda_error", "");
  if (o.contains("verify"))
    f.verify = decode_verify_result(as_object(o.at("verify"), "verify"));
  return f;
}

std::optional<job_kind> parse_job(std::string_view name) {
  for (auto job : all_job_kinds)
    if (name == to_string(job))
      return job;
  return std::nullopt;
}

} // namespace

const char* to_string(vendor_policy policy) noexcept {
  return policy == vendor_policy::allow ? "allow" : "refuse";
}

const char* to_string(job_kind job) noexcept {
  switch (job) {
  case job_kind::info:
    return "info";
  case job_kind::calibrate:
    return "calibrate";
  case job_kind::verify:
    return "verify";
  case job_kind::time:
    return "time";
  case job_kind::shutdown:
    return "shutdown";
  case job_kind::profile:
    return "profile";
  case job_kind::probe:
    return "probe";
  }
  return "unknown";
}

// -- encoding ------------------------------------------------------------------------------

std::string encode(const request& r) {
  json::object obj{{"v", protocol_version}, {"id", r.id}, {"job", to_string(r.job)}};
  if (r.task)
    obj["task"] = encode_task(*r.task);
  if (r.job == job_kind::verify) {
    obj["reference"] = r.reference;
    obj["candidate"] = r.candidate;
    obj["trials"] = r.verify.trials;
    obj["seed"] = r.verify.seed;
    obj["vendor_libraries"] = to_string(r.vendor_libraries);
  } else if (r.job == job_kind::time) {
    obj["kernel"] = r.kernel;
    obj["reference"] = r.reference;
    obj["timing"] = json::object{
        {"warmup_ms", r.timing.warmup_ms},   {"min_trials", r.timing.min_trials},
        {"max_trials", r.timing.max_trials}, {"max_ms", r.timing.max_ms},
        {"stable_rel", r.timing.stable_rel}, {"host_check_batch", r.timing.host_check_batch},
        {"flush_l2", r.timing.flush_l2}};
    obj["vendor_libraries"] = to_string(r.vendor_libraries);
  } else if (r.job == job_kind::profile) {
    obj["kernel"] = r.kernel;
    obj["seed"] = r.verify.seed;
    obj["profile"] = json::object{{"counters", r.profile.counters},
                                  {"max_ranges", r.profile.max_ranges},
                                  {"max_passes", r.profile.max_passes}};
    obj["vendor_libraries"] = to_string(r.vendor_libraries);
  } else if (r.job == job_kind::probe) {
    obj["probe"] = json::object{{"bytes", r.probe.bytes}, {"samples", r.probe.samples}};
  }
  return encode::serialize(obj);
}

std::string encode(const response& r) {
  json::object obj{{"v", protocol_version}, {"id", r.id}, {"ok", r.ok}};
  if (r.ok) {
    std::visit(
        [&](const auto& payload) {
          if constexpr (std::is_same_v<std::decay_t<decltype(payload)>, std::monostate>)
            obj["result"] = json::object{};
          else
            obj["result"] = encode_payload(payload);
        },
        r.result);
  } else {
    obj["failure"] = encode_failure(r.fail.value_or(failure{}));
  }
  if (r.retire)
    obj["retire"] = true;
  return encode::serialize(obj);
}

std::string encode(const hello& h) {
  return encode::serialize(json::object{
      {"v", protocol_version}, {"hello", "ks-bench-worker"}, {"pid", h.pid}, {"device", h.device}});
}

// -- decoding ------------------------------------------------------------------------------

engine::expected<request> decode_request(std::string_view line) {
  try {
    auto obj = parse_object(line);
    request r;
    r.id = decode::number<int64_t>(obj, "id");
    auto job_name = decode::string_field(obj, "job");
    auto job = parse_job(job_name);
    if (!job)
      throw decode_error("unknown job '" + job_name + "'");
    r.job = *job;
    if (r.job == job_kind::verify || r.job == job_kind::time || r.job == job_kind::profile) {
      r.task = decode_task(field(obj, "task"));
      r.vendor_libraries = get_vendor_policy(obj);
    }
    if (r.job == job_kind::verify) {
      r.reference = decode::string_field(obj, "reference");
      r.candidate = decode::string_field(obj, "candidate");
      r.verify.trials = decode::number_or<int32_t>(obj, "trials", r.verify.trials);
      r.verify.seed = decode::number_or<uint64_t>(obj, "seed", r.verify.seed);
    } else if (r.job == job_kind::time) {
      r.kernel = decode::string_field(obj, "kernel");
      r.reference = decode::string_field(obj, "reference");
      if (obj.contains("timing")) {
        const auto& t = as_object(obj.at("timing"), "timing");
        auto& o = r.timing;
        o.warmup_ms = decode::number_or<double>(t, "warmup_ms", o.warmup_ms);
        o.min_trials = decode::number_or<int32_t>(t, "min_trials", o.min_trials);
        o.max_trials = decode::number_or<int32_t>(t, "max_trials", o.max_trials);
        o.max_ms = decode::number_or<double>(t, "max_ms", o.max_ms);
        o.stable_rel = decode::number_or<double>(t, "stable_rel", o.stable_rel);
        o.host_check_batch = decode::number_or<int32_t>(t, "host_check_batch", o.host_check_batch);
        o.flush_l2 = decode::bool_field_or(t, "flush_l2", o.flush_l2);
      }
    } else if (r.job == job_kind::profile) {
      r.kernel = decode::string_field(obj, "kernel");
      r.verify.seed = decode::number_or<uint64_t>(obj, "seed", r.verify.seed);
      if (obj.contains("profile")) {
        const auto& p = as_object(obj.at("profile"), "profile");
        auto& o = r.profile;
        o.counters = decode::bool_field_or(p, "counters", o.counters);
        o.max_ranges = decode::number_or<int32_t>(p, "max_ranges", o.max_ranges);
        o.max_passes = decode::number_or<int32_t>(p, "max_passes", o.max_passes);
      }
    } else if (r.job == job_kind::probe && obj.contains("probe")) {
      const auto& p = as_object(obj.at("probe"), "probe");
      r.probe.bytes = decode::number_or<int64_t>(p, "bytes", r.probe.bytes);
      r.probe.samples = decode::number_or<int32_t>(p, "samples", r.probe.samples);
      if (r.probe.bytes < 0 || r.probe.samples < 1 || r.probe.samples > 4096)
        throw decode_error("a probe needs bytes >= 0 and 1 to 4096 samples");
    }
    return r;
  } catch (const std::exception& e) {
    return engine::fail(engine::errc::protocol, std::string("bad request: ") + e.what());
  }
}

engine::expected<response> decode_response(std::string_view line, job_kind job) {
  try {
    auto obj = parse_object(line);
    response r;
    r.id = decode::number<int64_t>(obj, "id");
    const auto& ok = field(obj, "ok");
    if (!ok.is_bool())
      throw decode_error("field 'ok' must be true or false");
    r.ok = ok.get_bool();
    r.retire = decode::bool_field_or(obj, "retire", false);
    if (!r.ok) {
      r.fail = decode_failure(as_object(field(obj, "failure"), "failure"));
      return r;
    }
    const auto& result = as_object(field(obj, "result"), "result");
    switch (job) {
    case job_kind::info:
      r.result = device_info_from_json(result);
      break;
    case job_kind::calibrate:
      r.result = calibration_from_json(result);
      break;
    case job_kind::verify:
      r.result = decode_verify_result(result);
      break;
    case job_kind::time:
      r.result = decode_timing_result(result);
      break;
    case job_kind::shutdown:
      break;
    case job_kind::profile:
      r.result = decode_profile_object(result);
      break;
    case job_kind::probe:
      r.result = decode_probe_result(result);
      break;
    }
    return r;
  } catch (const std::exception& e) {
    return engine::fail(engine::errc::protocol,
                        std::string("bad ") + to_string(job) + " response: " + e.what());
  }
}

std::string encode_profile(const engine::profile& p) {
  return encode::serialize(encode_payload(p));
}

engine::expected<engine::profile> decode_profile(std::string_view text) {
  try {
    json::error_code ec;
    auto v = json::parse(text, ec);
    if (ec)
      throw decode_error("not JSON (" + ec.message() + ")");
    return decode_profile_object(as_object(v, "profile"));
  } catch (const std::exception& e) {
    return engine::fail(engine::errc::protocol, std::string("bad profile: ") + e.what());
  }
}

engine::expected<hello> decode_hello(std::string_view line) {
  try {
    auto obj = parse_object(line);
    if (decode::string_field(obj, "hello") != "ks-bench-worker")
      throw decode_error("not a ks-bench-worker hello");
    return hello{decode::number<int64_t>(obj, "pid"), decode::number<int32_t>(obj, "device")};
  } catch (const std::exception& e) {
    return engine::fail(engine::errc::protocol, std::string("bad hello line: ") + e.what());
  }
}

} // namespace ks::gpu
