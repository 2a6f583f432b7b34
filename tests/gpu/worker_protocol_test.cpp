#include "gpu/worker_protocol.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace ks;
using namespace ks::gpu;

namespace {

engine::task sample_task() {
  engine::task t;
  t.name = "relu";
  engine::tensor_spec x;
  x.name = "x";
  x.type = engine::dtype::bf16;
  x.shape = {4096, 393216};
  x.init = engine::init_kind::randint;
  x.low = -3;
  x.high = 9;
  engine::tensor_spec y;
  y.name = "y";
  y.shape = {4096, 393216};
  t.inputs = {x};
  t.outputs = {y};
  t.tol = {1e-6, 2e-6, 3e-6};
  t.cost = {1.5e9, 2.5e10};
  return t;
}

} // namespace

TEST_CASE("a verify request survives a round trip with its task", "[protocol]") {
  request r;
  r.id = 42;
  r.job = job_kind::verify;
  r.task = sample_task();
  r.reference = "/cache/ref.so";
  r.candidate = "/cache/cand.so";
  r.verify.trials = 5;
  r.verify.seed = 1234567890123ull;
  auto line = encode(r);
  CHECK(line.find('\n') == std::string::npos);
  auto back = decode_request(line);
  REQUIRE(back);
  CHECK(back->id == 42);
  CHECK(back->job == job_kind::verify);
  CHECK(back->reference == "/cache/ref.so");
  CHECK(back->candidate == "/cache/cand.so");
  CHECK(back->verify.trials == 5);
  CHECK(back->verify.seed == 1234567890123ull);
  REQUIRE(back->task);
  CHECK(back->task->cost.flops == 1.5e9);
  CHECK(back->task->cost.bytes == 2.5e10);
  const auto& x = back->task->inputs.at(0);
  CHECK(x.type == engine::dtype::bf16);
  CHECK(x.shape == std::vector<int64_t>{4096, 393216});
  CHECK(x.init == engine::init_kind::randint);
  CHECK(x.low == -3);
  CHECK(x.high == 9);
  CHECK(back->task->tol.norm_rel == 3e-6);
}

TEST_CASE("a time request keeps every timing option", "[protocol]") {
  request r;
  r.id = 7;
  r.job = job_kind::time;
  r.task = sample_task();
  r.kernel = "/k.so";
  r.reference = "/ref.so";
  r.timing.warmup_ms = 11;
  r.timing.min_trials = 13;
  r.timing.max_trials = 17;
  r.timing.max_ms = 19;
  r.timing.stable_rel = 0.25;
  r.timing.host_check_batch = 23;
  r.timing.flush_l2 = false;
  auto back = decode_request(encode(r));
  REQUIRE(back);
  CHECK(back->kernel == "/k.so");
  CHECK(back->reference == "/ref.so");
  CHECK(back->timing.warmup_ms == 11);
  CHECK(back->timing.min_trials == 13);
  CHECK(back->timing.max_trials == 17);
  CHECK(back->timing.max_ms == 19);
  CHECK(back->timing.stable_rel == 0.25);
  CHECK(back->timing.host_check_batch == 23);
  CHECK_FALSE(back->timing.flush_l2);
}

TEST_CASE("a probe request carries its size and samples, and refuses a sample count out of "
          "range",
          "[protocol]") {
  request r;
  r.id = 12;
  r.job = job_kind::probe;
  r.probe.bytes = 64 << 20;
  r.probe.samples = 16;
  auto back = decode_request(encode(r));
  REQUIRE(back);
  CHECK(back->job == job_kind::probe);
  CHECK(back->probe.bytes == 64 << 20);
  CHECK(back->probe.samples == 16);
  CHECK(std::string(to_string(job_kind::probe)) == "probe");
  CHECK_FALSE(decode_request(R"({"v":1,"id":1,"job":"probe","probe":{"samples":0}})"));
}

TEST_CASE("responses of every job survive a round trip", "[protocol]") {
  SECTION("info") {
    device_info d;
    d.name = "NVIDIA H100 80GB HBM3";
    d.arch = "sm_90a";
    d.sms = 132;
    d.memory_bytes = 85'520'809'984;
    d.device_count = 2;
    auto back = decode_response(encode(response{3, true, d, {}}), job_kind::info);
    REQUIRE(back);
    REQUIRE(back->ok);
    const auto& got = std::get<device_info>(back->result);
    CHECK(got.name == d.name);
    CHECK(got.sms == 132);
    CHECK(got.memory_bytes == d.memory_bytes);
    CHECK(got.device_count == 2);
  }
  SECTION("time") {
    timing_result t;
    t.median_ms = 1.25;
    t.p10_ms = 1.2;
    t.p90_ms = 1.4;
    t.trials = 64;
    t.escaped = true;
    t.samples_ms = {1.3, 1.2, 1.25};
    auto back = decode_response(encode(response{4, true, t, {}}), job_kind::time);
    REQUIRE(back);
    const auto& got = std::get<timing_result>(back->result);
    CHECK(got.median_ms == 1.25);
    CHECK(got.trials == 64);
    CHECK(got.escaped);
    CHECK(got.samples_ms == t.samples_ms);
  }
  SECTION("probe") {
    probe_result p{209715200, 32, 0.171, 0.170, 0.173, 0.169, 0.18};
    auto back = decode_response(encode(response{7, true, p, {}}), job_kind::probe);
    REQUIRE(back);
    const auto& got = std::get<probe_result>(back->result);
    CHECK(got.bytes == 209715200);
    CHECK(got.samples == 32);
    CHECK(got.median_ms == 0.171);
    CHECK(got.p90_ms == 0.173);
    // A probe without its times is no probe.
    auto bad = decode_response(R"({"v":1,"id":7,"ok":true,"result":{"bytes":1,"samples":2}})",
                               job_kind::probe);
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message(), Catch::Matchers::Contains("median_ms"));
  }
  SECTION("a wrong result carries its verify details, NaN included") {
    failure f;
    f.kind = failure_kind::wrong_result;
    f.message = "output 'y' is wrong";
    verify_result v;
    v.bad_output = "y";
    v.first_bad_index = 1048576;
    v.nan_count = 10;
    v.norm_rel_err = INFINITY;
    v.actual = NAN;
    v.expected = 0.5;
    f.verify = v;
    auto back = decode_response(encode(response{5, false, {}, f}), job_kind::verify);
    REQUIRE(back);
    REQUIRE_FALSE(back->ok);
    REQUIRE(back->fail);
    CHECK(back->fail->kind == failure_kind::wrong_result);
    REQUIRE(back->fail->verify);
    CHECK(back->fail->verify->first_bad_index == 1048576);
    CHECK(back->fail->verify->expected == 0.5);
    CHECK(std::isnan(back->fail->verify->actual));
    CHECK(back->fail->verify->norm_rel_err > 1e300);
  }
  SECTION("a launch error carries the return code") {
    failure f{failure_kind::launch_error, "returned 7", 7, "", {}};
    auto back = decode_response(encode(response{6, false, {}, f}), job_kind::verify);
    REQUIRE(back);
    CHECK(back->fail->return_code == 7);
  }
}

TEST_CASE("vendor libraries travel both ways: the policy in requests, the libraries and the "
          "retire flag in responses",
          "[protocol]") {
  for (auto job : {job_kind::verify, job_kind::time, job_kind::profile}) {
    CAPTURE(to_string(job));
    request r;
    r.id = 7;
    r.job = job;
    r.task = sample_task();
    r.reference = r.candidate = r.kernel = "/cache/k.so";
    auto refused = decode_request(encode(r));
    REQUIRE(refused);
    CHECK(refused->vendor_libraries == vendor_policy::refuse);
    r.vendor_libraries = vendor_policy::allow;
    auto allowed = decode_request(encode(r));
    REQUIRE(allowed);
    CHECK(allowed->vendor_libraries == vendor_policy::allow);
  }
  // An older engine says nothing: refused.
  auto silent = decode_request(
      R"({"v":1,"id":1,"job":"profile","kernel":"/k.so","task":{"name":"t","inputs":[],)"
      R"("outputs":[],"tolerance":{"atol":0,"rtol":0,"norm_rel":0}}})");
  REQUIRE(silent);
  CHECK(silent->vendor_libraries == vendor_policy::refuse);
  auto bad = decode_request(
      R"({"v":1,"id":1,"job":"profile","kernel":"/k.so","vendor_libraries":"sometimes",)"
      R"("task":{"name":"t","inputs":[],"outputs":[],"tolerance":{"atol":0,"rtol":0,)"
      R"("norm_rel":0}}})");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message().find("'vendor_libraries' must be") != std::string::npos);

  const std::vector<std::string> libraries{"/usr/lib/libcublas.so.13",
                                           "/usr/lib/libcublasLt.so.13"};
  verify_result v;
  v.passed = true;
  v.trials = 1;
  v.vendor_libraries = libraries;
  response ok{8, true, v, {}, true};
  auto verified = decode_response(encode(ok), job_kind::verify);
  REQUIRE(verified);
  CHECK(verified->retire);
  CHECK(std::get<verify_result>(verified->result).vendor_libraries == libraries);

  timing_result t;
  t.median_ms = 1;
  t.trials = 10;
  t.vendor_libraries = libraries;
  auto timed = decode_response(encode(response{9, true, t, {}}), job_kind::time);
  REQUIRE(timed);
  CHECK_FALSE(timed->retire);
  CHECK(std::get<timing_result>(timed->result).vendor_libraries == libraries);
  // Without libraries the field is left out, as before there were any.
  t.vendor_libraries.clear();
  CHECK(encode(response{9, true, t, {}}).find("vendor_libraries") == std::string::npos);

  failure f{failure_kind::vendor_library, "uses a vendor library: cublas", {}, "", {}};
  auto refused = decode_response(encode(response{10, false, {}, f, true}), job_kind::verify);
  REQUIRE(refused);
  REQUIRE(refused->fail);
  CHECK(refused->fail->kind == failure_kind::vendor_library);
  CHECK(refused->fail->message == "uses a vendor library: cublas");
  CHECK(refused->retire);
}

TEST_CASE("a malformed line is a protocol error that names the problem", "[protocol]") {
  auto cut = decode_response(R"({"v":1,"id":3,"ok":tr)", job_kind::info);
  REQUIRE_FALSE(cut);
  CHECK(cut.error().code() == engine::errc::protocol);
  CHECK(cut.error().message().find("not a JSON line") != std::string::npos);

  auto wrong_version = decode_request(R"({"v":2,"id":1,"job":"info"})");
  REQUIRE_FALSE(wrong_version);
  CHECK(wrong_version.error().message().find("protocol version 2") != std::string::npos);

  auto unknown_job = decode_request(R"({"v":1,"id":1,"job":"dance"})");
  REQUIRE_FALSE(unknown_job);
  CHECK(unknown_job.error().message().find("unknown job 'dance'") != std::string::npos);

  auto no_task = decode_request(R"({"v":1,"id":1,"job":"verify"})");
  REQUIRE_FALSE(no_task);
  CHECK(no_task.error().message().find("missing field 'task'") != std::string::npos);

  auto bad_kind = decode_response(
      R"({"v":1,"id":1,"ok":false,"failure":{"kind":"oops","message":""}})", job_kind::verify);
  REQUIRE_FALSE(bad_kind);
  CHECK(bad_kind.error().message().find("unknown failure kind 'oops'") != std::string::npos);

  timing_result flood;
  flood.median_ms = flood.p10_ms = flood.p90_ms = 1;
  flood.trials = 1000;
  flood.samples_ms.assign(timing_result::max_reported_samples + 1, 1.0);
  auto too_many = decode_response(encode(response{5, true, flood, {}}), job_kind::time);
  REQUIRE_FALSE(too_many);
  CHECK(too_many.error().message().find("'samples_ms' holds 129 values") != std::string::npos);
  flood.samples_ms = {1.0, -2.0};
  auto negative = decode_response(encode(response{6, true, flood, {}}), job_kind::time);
  REQUIRE_FALSE(negative);
  CHECK(negative.error().message().find("non-negative finite") != std::string::npos);
}

TEST_CASE("the hello line identifies the worker and its device", "[protocol]") {
  auto back = decode_hello(encode(hello{1234, 3}));
  REQUIRE(back);
  CHECK(back->pid == 1234);
  CHECK(back->device == 3);
  CHECK_FALSE(decode_hello(R"({"v":1,"hello":"someone-else","pid":1,"device":0})"));
}
