#include "agents/replay_service.hpp"

#include "agents/transcript.hpp"
#include "agents/usage_file.hpp"

#include <algorithm>
#include <ctime>
#include <iostream>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

namespace ks::agents {

using engine::errc;
using engine::fail;

namespace {

using request_key = std::tuple<std::string, std::string, int64_t>; // role, task, node

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

} // namespace

struct replay_service::impl {
  replay_options options;
  bool usage_unwritable = false; // said once: a usage file that cannot be written
  std::vector<transcript> recorded;
  std::vector<bool> used;
  std::map<request_key, std::vector<size_t>> by_key; ///< indexes into recorded, in order
  mutable std::mutex mutex;
  gateway_stats stats;
  int64_t next_id = 1;

  /// Returns the index of the reply for `r`, or nullopt; call under the mutex.
  std::optional<size_t> find(const model_request& r) {
    for (size_t i = 0; i < recorded.size(); ++i)
      if (!used[i] && recorded[i].role == r.role && recorded[i].messages == r.messages)
        return i;
    auto list = by_key.find(request_key{r.role, r.task, r.node});
    if (list != by_key.end())
      for (size_t i : list->second)
        if (!used[i])
          return i;
    return std::nullopt;
  }

  std::string spent_reason() const {
    const usage_totals& t = stats.total;
    if (options.token_budget > 0 && t.input_tokens + t.output_tokens >= options.token_budget)
      return "the campaign's token budget (" + std::to_string(options.token_budget) +
             " tokens) is spent";
    if (options.cost_budget > 0 && t.cost >= options.cost_budget)
      return "the campaign's cost budget is spent";
    return {};
  }
};

replay_service::replay_service(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

replay_service::~replay_service() = default;

engine::expected<std::unique_ptr<replay_service>> replay_service::open(replay_options options) {
  auto all = read_transcripts(options.recorded);
  if (!all)
    return tl::unexpected(all.error());
  auto p = std::make_unique<impl>();
  p->options = std::move(options);
  for (transcript& t : *all)
    if (t.outcome == "ok") {
      p->by_key[request_key{t.role, t.task, t.node}].push_back(p->recorded.size());
      p->recorded.push_back(std::move(t));
    }
  p->used.assign(p->recorded.size(), false);
  // As the gateway does: a resumed replay adds transcript files rather than replacing any.
  p->next_id = next_transcript_id(p->options.transcripts_dir);
  p->stats = p->options.earlier;
  p->stats.budget_spent = p->spent_reason();
  return std::unique_ptr<replay_service>(new replay_service(std::move(p)));
}

int64_t replay_service::submit(model_request request, callback done) {
  engine::expected<model_reply> result = fail(errc::internal, "unset");
  transcript t;
  {
    std::lock_guard lock(impl_->mutex);
    t.id = impl_->next_id++;
    ++impl_->stats.submitted;
    t.role = request.role;
    t.task = request.task;
    t.node = request.node;
    t.api = "replay";
    t.model = impl_->options.model;
    t.endpoint = impl_->options.recorded.string();
    t.started_at = utc_now();
    t.messages = request.messages;
    std::string spent = impl_->spent_reason();
    std::optional<size_t> found;
    if (!spent.empty()) {
      result = fail(errc::budget_spent, spent);
      t.outcome = "refused";
      ++impl_->stats.refused;
    } else if (!(found = impl_->find(request))) {
      result = fail(errc::invalid_input,
                    "the recorded transcripts in " + impl_->options.recorded.string() +
                        " hold no reply for the " + request.role + " of task '" + request.task +
                        "', node " + std::to_string(request.node) +
                        " (a replay answers only the requests the recorded run made)");
      t.outcome = "failed";
      ++impl_->stats.failed;
      impl_->stats.last_error = result.error().message();
    } else {
      impl_->used[*found] = true;
      const transcript& r = impl_->recorded[*found];
      model_reply reply;
      reply.text = r.reply;
      reply.model = r.model;
      reply.finish_reason = r.finish_reason;
      // A transcript is a file: counts outside 0..max_reply_tokens are held at its bounds.
      reply.input_tokens = std::clamp<int64_t>(r.input_tokens, 0, max_reply_tokens);
      reply.output_tokens = std::clamp<int64_t>(r.output_tokens, 0, max_reply_tokens);
      reply.cost = cost_of(reply.input_tokens, reply.output_tokens, impl_->options.price);
      reply.attempts = 1;
      ++impl_->stats.succeeded;
      ++impl_->stats.attempts;
      for (usage_totals* u : {&impl_->stats.total, &impl_->stats.by_task[request.task]})
        u->add(reply);
      if (impl_->stats.budget_spent.empty())
        impl_->stats.budget_spent = impl_->spent_reason();
      t.reply = reply.text;
      t.finish_reason = reply.finish_reason;
      t.input_tokens = reply.input_tokens;
      t.output_tokens = reply.output_tokens;
      t.cost = reply.cost;
      t.attempts.push_back(attempt_record{200, {}, 0, -1});
      result = std::move(reply);
    }
    if (!result)
      t.error = result.error().message();
    if (!impl_->options.usage_file.empty())
      if (auto written =
              write_usage(impl_->options.usage_file, impl_->stats, "replay", impl_->options.model);
          !written && !std::exchange(impl_->usage_unwritable, true))
        std::cerr << "kernelskill: cannot write the model usage file (the replay goes on): "
                  << written.error().message() << "\n";
  }
  std::string text = transcript_json(t, {});
  if (!impl_->options.transcripts_dir.empty()) {
    auto written = write_transcript_text(impl_->options.transcripts_dir, t, text);
    if (written && result)
      result->transcript = written->string();
  }
  if (done)
    done(request_outcome{std::move(result), std::move(text)});
  return t.id;
}

void replay_service::cancel(std::string) {
  // Nothing is ever in flight: every request is answered before submit returns.
}

gateway_stats replay_service::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

} // namespace ks::agents
