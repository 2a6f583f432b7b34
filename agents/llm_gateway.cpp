// The gateway's method: one thread owns a curl multi handle and every request's state, so no
// lock is held across I/O and no caller waits on the network. Callers hand requests over
// through a mutex-guarded inbox and wake the thread with curl_multi_wakeup; the thread loops:
//
//   take the inbox (and a cancel, if one was asked for)
//   start due requests while fewer than max_concurrency run (budgets checked before each)
//   curl_multi_perform; for each finished transfer: success -> done; a retryable failure ->
//     back to the waiting set with its time to retry; a final failure -> done
//   curl_multi_poll until a socket is ready, the next retry is due (at most 1 s) or a wakeup
//
// Waiting requests are kept by id, so slots go to the oldest due request first: a retry
// waiting out its backoff never holds a slot, and a flood of new requests cannot starve it.
// Each callback runs on this thread once the counters are updated and the transcript is
// written, outside the lock: a callback that calls back into the gateway (submit, stats)
// cannot deadlock, and one that blocks would stall every request, hence the rule that it
// must not.

#include "agents/llm_gateway.hpp"

#include "agents/usage_file.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <future>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace ks::agents {

using engine::errc;
using engine::fail;
using clock_type = std::chrono::steady_clock;

namespace {

std::once_flag curl_ready;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The most header bytes one answer may send: curl bounds each header line, not their number.
constexpr size_t max_header_bytes = size_t{256} * 1024;

} // namespace

// -- the state of one request ------------------------------------------------------------------

struct request_state {
  int64_t id = 0;
  model_request request;
  http_request http;
  model_service::callback done;
  clock_type::time_point submitted;
  std::string started_at;
  clock_type::time_point not_before;
  std::vector<attempt_record> attempts;
  // The attempt in flight.
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string response;
  std::string retry_after;
  size_t header_bytes = 0;
  size_t reply_limit = max_reply_bytes;
  bool too_large = false; ///< the answer passed reply_limit or max_header_bytes: cut there
  clock_type::time_point attempt_start;

  void release_transfer(CURLM* multi) {
    if (easy != nullptr) {
      curl_multi_remove_handle(multi, easy);
      curl_easy_cleanup(easy);
      easy = nullptr;
    }
    if (headers != nullptr) {
      curl_slist_free_all(headers);
      headers = nullptr;
    }
  }
};

namespace {

// Returning less than it was given makes curl end the transfer (CURLE_WRITE_ERROR): a flooding
// endpoint costs at most reply_limit bytes of memory (issue 27: 4.2 GB in 3 s before).
size_t append_body(char* data, size_t size, size_t count, void* target) {
  auto* r = static_cast<request_state*>(target);
  if (r->response.size() + size * count > r->reply_limit) {
    r->too_large = true;
    return 0;
  }
  r->response.append(data, size * count);
  return size * count;
}

size_t read_header(char* data, size_t size, size_t count, void* target) {
  auto* r = static_cast<request_state*>(target);
  std::string_view line(data, size * count);
  r->header_bytes += line.size();
  if (r->header_bytes > max_header_bytes) {
    r->too_large = true;
    return 0;
  }
  constexpr std::string_view name = "retry-after:";
  if (line.size() > name.size()) {
    bool match = true;
    for (size_t i = 0; i < name.size() && match; ++i)
      match = std::tolower(static_cast<unsigned char>(line[i])) == name[i];
    if (match)
      r->retry_after = std::string(line.substr(name.size()));
  }
  return size * count;
}

// Failures of the transfer itself that say nothing about the endpoint's state: another try
// cannot help, so they end the request at once.
bool permanent(CURLcode code) {
  return code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_URL_MALFORMAT ||
         code == CURLE_NOT_BUILT_IN || code == CURLE_BAD_FUNCTION_ARGUMENT ||
         code == CURLE_OUT_OF_MEMORY || code == CURLE_SSL_CERTPROBLEM ||
         code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE;
}

std::string seconds_text(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g s", s);
  return buffer;
}

} // namespace

using request_ptr = std::unique_ptr<request_state>;

struct llm_gateway::impl {
  gateway_options options;
  std::atomic<bool> usage_unwritable{false}; // said once: a usage file that cannot be written
  CURLM* multi = nullptr;
  std::thread thread;

  // -- shared with callers, under `mutex` --------------------------------------------------
  mutable std::mutex mutex;
  std::vector<request_ptr> inbox;
  std::vector<request_ptr> to_cancel; ///< the inbox as a cancel found it
  bool cancel_asked = false;
  std::string cancel_why;
  bool stopping = false;
  int64_t next_id = 1;
  gateway_stats stats;

  // -- the gateway thread's own ---------------------------------------------------------------
  std::map<int64_t, request_ptr> waiting;
  std::map<CURL*, request_ptr> running;
  std::mt19937_64 jitter;

  explicit impl(gateway_options o) : options(std::move(o)) {
    std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi = curl_multi_init();
    jitter.seed(options.seed != 0 ? options.seed : std::random_device{}());
    options.max_concurrency = std::max<int64_t>(1, options.max_concurrency);
    // A resumed campaign goes on counting (and spending its budgets) where it stopped.
    stats = options.earlier;
    // Ids go on after the folder's: a resumed campaign's transcripts replace none of the files
    // of the runs before it.
    next_id = next_transcript_id(options.transcripts_dir);
    stats.in_flight = 0;
    stats.queued = 0;
    stats.budget_spent = spent_reason();
  }

  ~impl() {
    if (multi != nullptr)
      curl_multi_cleanup(multi);
  }

  /// Returns why no request may start, or empty; call under `mutex`.
  std::string spent_reason() const {
    const usage_totals& t = stats.total;
    int64_t used = saturating_add(t.input_tokens, t.output_tokens);
    if (options.token_budget > 0 && used >= options.token_budget)
      return "the campaign's token budget (" + std::to_string(options.token_budget) +
             " tokens) is spent: " + std::to_string(used) + " tokens used";
    if (options.cost_budget > 0 && t.cost >= options.cost_budget) {
      char text[160];
      std::snprintf(text, sizeof text, "the campaign's cost budget (%.6g) is spent: %.6g used",
                    options.cost_budget, t.cost);
      return text;
    }
    return {};
  }

  void count_queues() {
    std::lock_guard lock(mutex);
    stats.in_flight = static_cast<int64_t>(running.size());
    stats.queued = static_cast<int64_t>(waiting.size() + inbox.size());
  }

  // -- the loop ------------------------------------------------------------------------------

  void run() {
    for (;;) {
      std::vector<request_ptr> fresh;
      std::vector<request_ptr> cancelled;
      bool cancel = false;
      bool stop = false;
      std::string why;
      {
        std::lock_guard lock(mutex);
        fresh.swap(inbox);
        cancelled.swap(to_cancel);
        cancel = cancel_asked;
        cancel_asked = false;
        why = cancel_why;
        stop = stopping;
      }
      if (stop) {
        for (request_ptr& r : fresh)
          cancelled.push_back(std::move(r));
        cancel_all(std::move(cancelled), "the model gateway is shutting down");
        return;
      }
      if (cancel)
        cancel_all(std::move(cancelled), why);
      for (request_ptr& r : fresh) {
        int64_t id = r->id;
        waiting.emplace(id, std::move(r));
      }
      start_due();
      int still_running = 0;
      curl_multi_perform(multi, &still_running);
      collect();
      start_due();
      count_queues();
      curl_multi_poll(multi, nullptr, 0, wait_ms(), nullptr);
    }
  }

  int wait_ms() const {
    if (waiting.empty())
      return 1000;
    auto now = clock_type::now();
    double soonest = 1000;
    for (const auto& [id, r] : waiting)
      soonest = std::min(soonest, ms_between(now, r->not_before));
    // A due request with no free slot waits for a transfer to end, which wakes the poll.
    if (soonest <= 0)
      return running.size() < static_cast<size_t>(options.max_concurrency) ? 0 : 1000;
    return static_cast<int>(std::ceil(soonest));
  }

  void start_due() {
    auto now = clock_type::now();
    while (running.size() < static_cast<size_t>(options.max_concurrency)) {
      auto due = std::find_if(waiting.begin(), waiting.end(),
                              [&](const auto& entry) { return entry.second->not_before <= now; });
      if (due == waiting.end())
        return;
      request_ptr r = std::move(due->second);
      waiting.erase(due);
      std::string spent;
      {
        std::lock_guard lock(mutex);
        spent = spent_reason();
      }
      if (!spent.empty()) {
        finish(std::move(r), fail(errc::budget_spent, spent), "refused");
        continue;
      }
      start_attempt(std::move(r));
    }
  }

  void start_attempt(request_ptr r) {
    r->response.clear();
    r->retry_after.clear();
    r->header_bytes = 0;
    r->too_large = false;
    r->reply_limit = options.max_reply_bytes;
    r->attempt_start = clock_type::now();
    CURL* e = curl_easy_init();
    for (const auto& [name, value] : r->http.headers)
      r->headers = curl_slist_append(r->headers, (name + ": " + value).c_str());
    // No "Expect: 100-continue" round trip before a large body.
    r->headers = curl_slist_append(r->headers, "Expect:");
    curl_easy_setopt(e, CURLOPT_URL, r->http.url.c_str());
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->http.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r->http.body.size()));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r.get());
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, read_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r.get());
    // A compressed answer is limited after decompression (append_body sees decoded bytes).
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(r->reply_limit));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(std::max(1.0, 1000 * options.request_timeout_s)));
    // Signals would reach the whole process; curl's resolver threads need none.
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    // A fresh connection per attempt: on a reused one that died, curl would send the request
    // again by itself, and the retries the gateway counts (and its transcripts show) would no
    // longer be every request the endpoint saw. A handshake is nothing next to a model's reply.
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r.get());
    r->easy = e;
    curl_multi_add_handle(multi, e);
    {
      std::lock_guard lock(mutex);
      ++stats.attempts;
      if (!r->attempts.empty())
        ++stats.retries;
    }
    running.emplace(e, std::move(r));
  }

  void collect() {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE)
        continue;
      auto found = running.find(message->easy_handle);
      if (found == running.end())
        continue;
      request_ptr r = std::move(found->second);
      running.erase(found);
      CURLcode code = message->data.result;
      long status = 0;
      curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
      r->release_transfer(multi);
      settle_attempt(std::move(r), code, status);
    }
  }

  void settle_attempt(request_ptr r, CURLcode code, long status) {
    auto now = clock_type::now();
    attempt_record a;
    a.status = status;
    a.ms = ms_between(r->attempt_start, now);
    std::optional<double> retry_after;
    bool retry = false;
    engine::error final_error{errc::internal, ""};
    if (r->too_large || code == CURLE_FILESIZE_EXCEEDED) {
      // Final: another try would cost as much again, and the endpoint is not answering as a
      // chat API does.
      a.error = "the answer is larger than " + std::to_string(r->reply_limit) +
                " bytes (or its headers than " + std::to_string(max_header_bytes) +
                "); it was cut there";
      r->attempts.push_back(a);
      auto failed = fail(errc::protocol, "the model endpoint " + r->http.url + ": " + a.error);
      finish(std::move(r), std::move(failed), "failed");
      return;
    }
    if (code != CURLE_OK) {
      a.error = code == CURLE_OPERATION_TIMEDOUT
                    ? "no answer within " + seconds_text(options.request_timeout_s) +
                          " (agents.request_timeout_s)"
                    : std::string(curl_easy_strerror(code));
      retry = !permanent(code);
      final_error = engine::error{retry ? errc::transient : errc::invalid_input,
                                  "the model endpoint " + r->http.url + ": " + a.error};
    } else if (status >= 200 && status < 300) {
      auto reply = parse_model_reply(options.api, r->response, r->http.body.size());
      if (reply) {
        r->attempts.push_back(a);
        succeed(std::move(r), std::move(*reply));
        return;
      }
      // An answer that is not the API's JSON (cut short, garbled by a proxy) is worth
      // another try, as a dropped connection is.
      a.error = reply.error().message();
      retry = true;
      final_error = engine::error{errc::protocol, a.error};
    } else {
      a.error = "HTTP " + std::to_string(status) + ": " + error_summary(r->response);
      retry = retryable_status(status);
      if (retry) {
        retry_after = parse_retry_after(r->retry_after, std::time(nullptr));
        if (retry_after)
          a.retry_after_s = *retry_after;
      }
      final_error = engine::error{retry ? errc::transient : errc::invalid_input,
                                  "the model endpoint " + r->http.url + " refused the request (" +
                                      a.error + ")"};
    }
    r->attempts.push_back(a);
    const int64_t made = static_cast<int64_t>(r->attempts.size());
    if (!retry) {
      finish(std::move(r), tl::unexpected(final_error), "failed");
      return;
    }
    // Every final failure names the endpoint; the message is made before r is moved from.
    const std::string endpoint = "the model endpoint " + r->http.url;
    if (made > options.max_retries) {
      auto failed =
          fail(final_error.code() == errc::protocol ? errc::protocol : errc::transient,
               endpoint + " failed " + std::to_string(made) + (made == 1 ? " time" : " times") +
                   " (agents.max_retries = " + std::to_string(options.max_retries) +
                   "); the last: " + a.error);
      finish(std::move(r), std::move(failed), "failed");
      return;
    }
    if (retry_after && *retry_after > options.retry_max_s) {
      auto failed = fail(errc::transient, endpoint + " asks to wait " + seconds_text(*retry_after) +
                                              " (Retry-After), longer than agents.retry_max_s (" +
                                              seconds_text(options.retry_max_s) + "); " + a.error);
      finish(std::move(r), std::move(failed), "failed");
      return;
    }
    double delay = 0;
    if (retry_after) {
      delay = *retry_after;
    } else {
      double backoff = std::min(
          options.retry_max_s, options.retry_base_s * std::pow(2.0, static_cast<double>(made - 1)));
      delay = backoff * std::uniform_real_distribution<double>(0.5, 1.0)(jitter);
    }
    r->not_before = now + std::chrono::duration_cast<clock_type::duration>(
                              std::chrono::duration<double>(delay));
    int64_t id = r->id;
    waiting.emplace(id, std::move(r));
  }

  void succeed(request_ptr r, model_reply reply) {
    reply.attempts = static_cast<int64_t>(r->attempts.size());
    reply.latency_ms = ms_between(r->submitted, clock_type::now());
    reply.cost = cost_of(reply.input_tokens, reply.output_tokens, options.price);
    finish(std::move(r), std::move(reply), "ok");
  }

  void cancel_all(std::vector<request_ptr> extra, const std::string& why) {
    for (auto& [easy, r] : running) {
      r->release_transfer(multi);
      extra.push_back(std::move(r));
    }
    running.clear();
    for (auto& [id, r] : waiting)
      extra.push_back(std::move(r));
    waiting.clear();
    std::sort(extra.begin(), extra.end(),
              [](const request_ptr& a, const request_ptr& b) { return a->id < b->id; });
    for (request_ptr& r : extra)
      finish(std::move(r), fail(errc::cancelled, why), "cancelled");
  }

  /// Counts the outcome, writes the transcript, then calls back (outside the lock) with the
  /// outcome and the transcript's text.
  void finish(request_ptr r, engine::expected<model_reply> result, const char* outcome) {
    transcript t;
    t.id = r->id;
    t.role = r->request.role;
    t.task = r->request.task;
    t.node = r->request.node;
    t.api = to_string(options.api);
    t.model = options.model;
    t.endpoint = options.endpoint.empty() ? default_endpoint(options.api) : options.endpoint;
    t.started_at = r->started_at;
    t.latency_ms = ms_between(r->submitted, clock_type::now());
    t.attempts = r->attempts;
    t.outcome = outcome;
    t.messages = r->request.messages;
    if (result) {
      t.reply = result->text;
      t.finish_reason = result->finish_reason;
      t.input_tokens = result->input_tokens;
      t.output_tokens = result->output_tokens;
      t.cost = result->cost;
      if (!result->model.empty())
        t.model = result->model;
    } else {
      t.error = result.error().message();
    }
    gateway_stats now;
    {
      std::lock_guard lock(mutex);
      if (result) {
        ++stats.succeeded;
        for (usage_totals* u : {&stats.total, &stats.by_task[r->request.task]})
          u->add(*result);
      } else if (result.error().code() == errc::cancelled) {
        ++stats.cancelled;
      } else if (result.error().code() == errc::budget_spent) {
        ++stats.refused;
      } else {
        ++stats.failed;
        stats.last_error = result.error().message();
      }
      if (stats.budget_spent.empty())
        stats.budget_spent = spent_reason();
      now = stats;
    }
    if (!options.usage_file.empty())
      if (auto written = write_usage(options.usage_file, now, options.backend_name, options.model);
          !written && !usage_unwritable.exchange(true))
        std::cerr << "kernelskill: cannot write the model usage file (the campaign goes on): "
                  << written.error().message() << "\n";
    // One text, redacted once, for the file and for the caller (the store): the two copies
    // of a transcript are the same bytes.
    std::string text = transcript_json(t, options.api_key);
    if (!options.transcripts_dir.empty()) {
      auto written = write_transcript_text(options.transcripts_dir, t, text);
      if (written && result)
        result->transcript = written->string();
    }
    if (r->done)
      r->done(request_outcome{std::move(result), std::move(text)});
  }
};

// -- llm_gateway -------------------------------------------------------------------------------

llm_gateway::llm_gateway(gateway_options options)
  : impl_(std::make_unique<impl>(std::move(options))) {
  impl_->thread = std::thread([this] { impl_->run(); });
}

llm_gateway::~llm_gateway() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  curl_multi_wakeup(impl_->multi);
  if (impl_->thread.joinable())
    impl_->thread.join();
}

int64_t llm_gateway::submit(model_request request, callback done) {
  auto r = std::make_unique<request_state>();
  r->http = make_http_request(impl_->options.api, impl_->options.endpoint, impl_->options.model,
                              impl_->options.api_key, request);
  r->request = std::move(request);
  r->done = std::move(done);
  r->submitted = clock_type::now();
  r->not_before = r->submitted;
  r->started_at = utc_now();
  int64_t id = 0;
  {
    std::lock_guard lock(impl_->mutex);
    id = r->id = impl_->next_id++;
    ++impl_->stats.submitted;
    ++impl_->stats.queued;
    impl_->inbox.push_back(std::move(r));
  }
  curl_multi_wakeup(impl_->multi);
  return id;
}

void llm_gateway::cancel(std::string why) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->cancel_asked = true;
    impl_->cancel_why = std::move(why);
    for (request_ptr& r : impl_->inbox)
      impl_->to_cancel.push_back(std::move(r));
    impl_->inbox.clear();
  }
  curl_multi_wakeup(impl_->multi);
}

gateway_stats llm_gateway::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

const gateway_options& llm_gateway::options() const noexcept {
  return impl_->options;
}

} // namespace ks::agents
