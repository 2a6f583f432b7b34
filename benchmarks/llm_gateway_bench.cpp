// ks-llm-gateway-bench: what the model gateway costs, against a local endpoint (the tests'
// fake_model_server on 127.0.0.1), so that the numbers are the gateway's and not a model's.
//
//   overhead      sequential requests with an instant answer: a plain blocking curl request
//                 per call (curl_easy_perform, a fresh connection each, as the gateway makes),
//                 the gateway called directly, and the gateway through its actor (llm_call
//                 from a scoped actor); the difference per request is the gateway's overhead.
//   in flight     64 requests in flight at once through the gateway actor (each answered after
//                 200 ms), while another actor is pinged every millisecond: the ping's round
//                 trip (p50, p99, max) says whether the gateway holds up the scheduler.
//
// Usage: ks-llm-gateway-bench [--requests N] [--in-flight N] [--delay-ms MS]

#include "actors/llm_gateway_actor.hpp"
#include "actors/messages.hpp"
#include "agents/llm_gateway.hpp"
#include "tests/agents/fake_model_server.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace ks;
using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<size_t>(std::llround(p * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

agents::model_request request() {
  agents::model_request r;
  r.role = "coder";
  r.task = "bench";
  r.messages = {{"system", "You are a benchmark."}, {"user", std::string(2000, 'x')}};
  r.max_tokens = 16;
  return r;
}

size_t discard(char*, size_t size, size_t count, void*) {
  return size * count;
}

// One plain curl request per call: the floor the gateway is compared with.
double plain_curl_ms(const std::string& endpoint, int64_t n) {
  agents::http_request http =
      agents::make_http_request(agents::api_kind::openai, endpoint, "bench", "", request());
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : http.headers)
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  headers = curl_slist_append(headers, "Expect:");
  auto start = clock_type::now();
  for (int64_t i = 0; i < n; ++i) {
    CURL* e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, http.url.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, http.body.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_perform(e);
    curl_easy_cleanup(e);
  }
  double total = ms_since(start);
  curl_slist_free_all(headers);
  return total / static_cast<double>(n);
}

} // namespace

int main(int argc, char** argv) {
  int64_t requests = 500;
  int64_t in_flight = 64;
  double delay_ms = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--requests") == 0)
      requests = std::stoll(argv[i + 1]);
    else if (std::strcmp(argv[i], "--in-flight") == 0)
      in_flight = std::stoll(argv[i + 1]);
    else if (std::strcmp(argv[i], "--delay-ms") == 0)
      delay_ms = std::stod(argv[i + 1]);
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  test::fake_model_server server(agents::api_kind::openai);
  const std::string reply_body = test::chat_body(agents::api_kind::openai, "ok", 500, 1);
  server.set_responder([&](const test::received_request&) {
    test::scripted_reply r;
    r.body = reply_body;
    return r;
  });

  agents::gateway_options o;
  o.endpoint = server.endpoint();
  o.model = "bench";
  o.max_concurrency = in_flight;
  auto gateway = std::make_shared<agents::llm_gateway>(o);

  // -- overhead ------------------------------------------------------------------------------
  double plain = plain_curl_ms(server.endpoint(), requests);
  auto start = clock_type::now();
  for (int64_t i = 0; i < requests; ++i)
    (void)gateway->complete(request()); // the time is measured, not the answer
  double direct = ms_since(start) / static_cast<double>(requests);

  caf::actor_system_config cfg;
  caf::actor_system sys(cfg);
  auto gateway_actor = actors::spawn_llm_gateway(sys, gateway);
  double through_actor = 0;
  {
    caf::scoped_actor self(sys);
    start = clock_type::now();
    for (int64_t i = 0; i < requests; ++i)
      self->request(gateway_actor, caf::infinite, actors::llm_call{request()})
          .receive([](actors::llm_answer&) {}, [](caf::error&) {});
    through_actor = ms_since(start) / static_cast<double>(requests);
  }
  std::printf("overhead: %lld sequential requests, instant answers, 2 kB prompt, a fresh "
              "connection each\n",
              static_cast<long long>(requests));
  std::printf("  %-34s %8.3f ms per request\n", "plain curl_easy_perform", plain);
  std::printf("  %-34s %8.3f ms per request (+%.3f)\n", "gateway, called directly", direct,
              direct - plain);
  std::printf("  %-34s %8.3f ms per request (+%.3f)\n", "gateway actor (llm_call)", through_actor,
              through_actor - plain);

  // -- 64 in flight ----------------------------------------------------------------------------
  server.set_responder([&](const test::received_request&) {
    test::scripted_reply r;
    r.body = reply_body;
    r.delay_s = delay_ms / 1000;
    return r;
  });
  caf::actor ping = sys.spawn(
      [](caf::event_based_actor*) -> caf::behavior { return {[](int32_t x) { return x; }}; });
  std::vector<double> idle_rtt;
  std::vector<double> busy_rtt;
  {
    caf::scoped_actor pinger(sys);
    auto ping_once = [&] {
      auto t = clock_type::now();
      pinger->request(ping, caf::infinite, int32_t{1}).receive([](int32_t) {}, [](caf::error&) {});
      return ms_since(t);
    };
    for (int i = 0; i < 500; ++i) {
      idle_rtt.push_back(ping_once());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    caf::scoped_actor client(sys);
    auto sent = clock_type::now();
    for (int64_t i = 0; i < in_flight; ++i)
      client->send(gateway_actor, actors::llm_call{request()});
    int64_t answered = 0;
    double max_in_flight_seen = 0;
    while (answered < in_flight) {
      busy_rtt.push_back(ping_once());
      max_in_flight_seen =
          std::max(max_in_flight_seen, static_cast<double>(gateway->stats().in_flight));
      // At most one answer per round, so that the pings go on while answers arrive.
      client->receive([&](actors::llm_answer&) { ++answered; }, [&](caf::error&) { ++answered; },
                      caf::after(std::chrono::milliseconds(1)) >> [] {});
    }
    double all = ms_since(sent);
    std::printf("\nin flight: %lld requests at once through the gateway actor, each answered "
                "after %.0f ms; all answered in %.0f ms (max %g in flight at once)\n",
                static_cast<long long>(in_flight), delay_ms, all, max_in_flight_seen);
    std::printf("  another actor's message round trip  idle: p50 %.3f ms, p99 %.3f ms, max "
                "%.3f ms (%zu pings)\n",
                percentile(idle_rtt, 0.5), percentile(idle_rtt, 0.99),
                *std::max_element(idle_rtt.begin(), idle_rtt.end()), idle_rtt.size());
    std::printf("                                      busy: p50 %.3f ms, p99 %.3f ms, max "
                "%.3f ms (%zu pings)\n",
                percentile(busy_rtt, 0.5), percentile(busy_rtt, 0.99),
                *std::max_element(busy_rtt.begin(), busy_rtt.end()), busy_rtt.size());
  }
  caf::anon_send_exit(gateway_actor, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(ping, caf::exit_reason::user_shutdown);
  return 0;
}
