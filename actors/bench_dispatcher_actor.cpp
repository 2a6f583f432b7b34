#include "actors/bench_dispatcher_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/console.hpp"
#include "actors/messages.hpp"
#include "engine/bench_placement.hpp"
#include "engine/bench_schedule.hpp"
#include "report/bench_trace.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

namespace ks::actors {

namespace {

struct pending_job {
  bench_job job;
  caf::typed_response_promise<bench_result> promise;
  double queued_at_ms = 0; ///< on the dispatcher's clock
};

struct dispatcher_state {
  std::vector<bench_actor> gpus;
  std::vector<engine::card_state> cards; // busy, dead, and how long each worked
  std::deque<pending_job> queue;         // in the order the jobs came
  bool interrupted = false;              ///< a stop_msg interrupt came: no job starts any more
  std::vector<std::optional<caf::typed_response_promise<bench_result>>> running;
  std::vector<int64_t> serial;     // of the job each GPU runs: a late answer to an older one is
                                   // ignored
  std::vector<double> assigned_ms; // the load of the tasks whose home each GPU is
  bench_stats stats;
  bench_clock clock;
  double born_ms = 0;
  // The bench trace (report/bench_trace.hpp): the output folder's, and KS_BENCH_TRACE's.
  std::vector<std::unique_ptr<std::ofstream>> traces;

  size_t size() const { return gpus.size(); }

  bool alive_any() const {
    for (const engine::card_state& c : cards)
      if (!c.dead)
        return true;
    return false;
  }
};

using dispatcher_pointer = bench_dispatcher_actor::stateful_pointer<dispatcher_state>;

void dispatch(dispatcher_pointer self);

// Returns the first fields of a job's trace line. Labels and task names are ours (task file
// stems and "#id"), but are escaped all the same.
std::string trace_head(const dispatcher_state& st, const bench_job& job, double started_ms) {
  auto quoted = [](const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\')
        out += '\\';
      if (static_cast<unsigned char>(c) >= 0x20)
        out += c;
    }
    return out + "\"";
  };
  std::ostringstream line;
  line << "{\"gpu\": " << job.gpu << ", \"kind\": \"" << to_string(job.kind)
       << "\", \"purpose\": \"" << engine::to_string(job.purpose)
       << "\", \"task\": " << quoted(job.task) << ", \"label\": " << quoted(job.label)
       << ", \"start_s\": " << (started_ms - st.born_ms) / 1000;
  return line.str();
}

// Ends a job's trace line (`head`: trace_head's) with its outcome and writes it to every trace.
void write_trace_line(dispatcher_state& st, const std::string& head, double queued_ms,
                      const bench_result& r) {
  std::ostringstream line;
  line << head << ", \"end_s\": " << (st.clock() - st.born_ms) / 1000
       << ", \"queued_ms\": " << queued_ms << ", \"ok\": " << (r.ok ? "true" : "false");
  if (r.ok && r.kind == bench_kind::time)
    line << ", \"median_ms\": " << r.timing().median_ms << ", \"p10_ms\": " << r.timing().p10_ms
         << ", \"p90_ms\": " << r.timing().p90_ms << ", \"trials\": " << r.timing().trials;
  line << "}";
  for (const std::unique_ptr<std::ofstream>& trace : st.traces)
    *trace << line.str() << std::endl;
}

// Opens the traces a run appends to, each starting with the run's header line. A trace that
// cannot be opened is said and left out: the campaign runs without it.
void open_traces(dispatcher_state& st, const std::filesystem::path& in_output) {
  std::vector<std::filesystem::path> paths;
  if (!in_output.empty())
    paths.push_back(in_output);
  if (const char* path = std::getenv("KS_BENCH_TRACE"); path != nullptr && *path != '\0')
    paths.emplace_back(path);
  const double unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const std::filesystem::path& path : paths) {
    auto trace = std::make_unique<std::ofstream>(path, std::ios::app);
    if (!*trace) {
      console::line(console::stream::err, "kernelskill: cannot write the bench trace to " +
                                              path.string() + "; the campaign runs without it");
      continue;
    }
    *trace << report::trace_run_header(unix_s, static_cast<int64_t>(st.size())) << std::endl;
    st.traces.push_back(std::move(trace));
  }
}

void lose(dispatcher_pointer self, size_t gpu, int64_t serial, const std::string& why);

// GPU `gpu` is gone (a host fault that says so): it takes no more jobs, and jobs placed on it
// run on the others, while another card lives. The last card is kept: the supervisors retry
// their steps on it and, when the fault persists, stop the campaign naming it.
void retire_lost_card(dispatcher_pointer self, size_t gpu, const std::string& why) {
  auto& st = self->state;
  size_t alive = 0;
  for (const engine::card_state& c : st.cards)
    alive += c.dead ? 0 : 1;
  if (st.cards[gpu].dead || alive <= 1)
    return;
  st.cards[gpu].dead = true;
  console::line(console::stream::err, "kernelskill: GPU " + std::to_string(gpu) + " is lost (" +
                                          why +
                                          "); no more jobs go to it, the other GPUs take them");
}

// Ends the job GPU `gpu` runs (if it is still job `serial`) and starts the next one.
void finish(dispatcher_pointer self, size_t gpu, int64_t serial) {
  auto& st = self->state;
  if (st.serial[gpu] != serial || !st.running[gpu])
    return;
  st.running[gpu].reset();
  st.cards[gpu].busy = false;
  dispatch(self);
}

void start(dispatcher_pointer self, size_t gpu, pending_job p) {
  auto& st = self->state;
  st.cards[gpu].busy = true;
  st.running[gpu] = p.promise;
  int64_t serial = ++st.serial[gpu];
  p.job.gpu = static_cast<int32_t>(gpu);
  double started_ms = st.clock();
  double queued_ms = started_ms - p.queued_at_ms;
  std::string traced = st.traces.empty() ? std::string() : trace_head(st, p.job, started_ms);
  self->request(st.gpus[gpu], caf::infinite, std::move(p.job))
      .then(
          [self, gpu, serial, queued_ms, traced](bench_result& r) {
            auto& st = self->state;
            if (st.serial[gpu] != serial || !st.running[gpu])
              return;
            if (!st.traces.empty())
              write_trace_line(st, traced, queued_ms, r);
            r.queued_ms = queued_ms;
            r.gpu = static_cast<int32_t>(gpu);
            if (r.device_lost)
              retire_lost_card(self, gpu, r.message);
            st.stats.busy_ms[gpu] += r.busy_ms;
            st.cards[gpu].busy_ms += r.busy_ms;
            st.stats.jobs[gpu] += 1;
            st.running[gpu]->deliver(std::move(r));
            finish(self, gpu, serial);
          },
          [self, gpu, serial](caf::error& e) { lose(self, gpu, serial, describe(e)); });
}

// Marks GPU `gpu`'s bench actor dead and fails the job it ran: it takes no more jobs.
void lose(dispatcher_pointer self, size_t gpu, int64_t serial, const std::string& why) {
  auto& st = self->state;
  st.cards[gpu].dead = true;
  if (st.serial[gpu] != serial || !st.running[gpu])
    return;
  st.running[gpu]->deliver(make_actor_error(
      actor_errc::bench, "the bench actor of GPU " + std::to_string(gpu) + " failed: " + why));
  finish(self, gpu, serial);
}

void dispatch(dispatcher_pointer self) {
  auto& st = self->state;
  if (!st.alive_any()) {
    while (!st.queue.empty()) {
      st.queue.front().promise.deliver(
          make_actor_error(actor_errc::bench, "no bench actor is left to run the job"));
      st.queue.pop_front();
    }
    st.stats.queued = 0;
    return;
  }
  // The engine's schedule says which queued jobs start now, and where.
  std::vector<engine::queued_job> queued;
  queued.reserve(st.queue.size());
  for (const pending_job& p : st.queue)
    queued.push_back(engine::queued_job{engine::placement{p.job.gpu, p.job.prefer}, p.job.priority,
                                        p.queued_at_ms});
  std::vector<engine::job_start> starts = engine::schedule(queued, st.cards, st.clock());
  std::vector<std::pair<size_t, pending_job>> to_start;
  std::vector<bool> leaving(st.queue.size(), false);
  for (const engine::job_start& s : starts) {
    to_start.emplace_back(static_cast<size_t>(s.card), std::move(st.queue[s.job]));
    leaving[s.job] = true;
  }
  std::deque<pending_job> staying;
  for (size_t i = 0; i < st.queue.size(); ++i)
    if (!leaving[i])
      staying.push_back(std::move(st.queue[i]));
  st.queue = std::move(staying);
  for (auto& [gpu, p] : to_start)
    start(self, gpu, std::move(p));
  st.stats.queued = static_cast<int64_t>(st.queue.size());
}

bench_dispatcher_actor::behavior_type dispatcher(dispatcher_pointer self,
                                                 std::vector<bench_actor> gpus, bench_clock clock,
                                                 const std::filesystem::path& trace) {
  auto& st = self->state;
  st.gpus = std::move(gpus);
  st.clock = std::move(clock);
  st.born_ms = st.clock();
  st.cards.assign(st.size(), engine::card_state{});
  st.running.resize(st.size());
  st.serial.assign(st.size(), 0);
  st.assigned_ms.assign(st.size(), 0);
  st.stats.busy_ms.assign(st.size(), 0);
  st.stats.jobs.assign(st.size(), 0);
  open_traces(st, trace);
  // A bench actor that dies mid-job never answers it: its down message ends the job instead.
  for (const bench_actor& g : st.gpus)
    self->monitor(g);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    for (size_t g = 0; g < st.size(); ++g)
      if (st.gpus[g].address() == down.source) {
        st.cards[g].dead = true;
        lose(self, g, st.serial[g], "it is gone (" + describe(down.reason) + ")");
        dispatch(self);
      }
  });
  return {
      [self](bench_job& job) -> caf::result<bench_result> {
        auto& st = self->state;
        if (job.gpu >= static_cast<int32_t>(st.size()))
          return make_actor_error(actor_errc::bench, "no GPU index " + std::to_string(job.gpu) +
                                                         " (the campaign has " +
                                                         std::to_string(st.size()) + ")");
        if (st.interrupted)
          return make_actor_error(actor_errc::interrupted,
                                  "not started: the campaign was interrupted");
        auto promise = self->make_response_promise<bench_result>();
        st.queue.push_back(pending_job{std::move(job), promise, st.clock()});
        dispatch(self);
        return promise;
      },
      [self](const bench_stats_request&) { return self->state.stats; },
      [self](const stop_msg& m) {
        // A budget that ran out still lets the queued jobs run (the finals need them); an
        // interrupt must not wait for jobs nobody will use before the resume.
        auto& st = self->state;
        if (m.kind != stop_kind::interrupt)
          return;
        st.interrupted = true;
        while (!st.queue.empty()) {
          st.queue.front().promise.deliver(make_actor_error(
              actor_errc::interrupted, "not started: the campaign was interrupted"));
          st.queue.pop_front();
        }
        st.stats.queued = 0;
      },
      [self](const assign_home& a) -> caf::result<int32_t> {
        auto& st = self->state;
        if (st.size() == 0)
          return make_actor_error(actor_errc::bench, "no GPU to be the home of " + a.task);
        int32_t gpu = engine::home_for(a.gpu, st.assigned_ms, st.cards);
        // A negative or NaN estimate would skew every later choice: it counts as nothing.
        st.assigned_ms[static_cast<size_t>(gpu)] += a.load_ms > 0 ? a.load_ms : 0;
        return gpu;
      },
  };
}

} // namespace

bench_clock steady_bench_clock() {
  return [] {
    auto since = std::chrono::steady_clock::now().time_since_epoch();
    return std::chrono::duration<double, std::milli>(since).count();
  };
}

bench_dispatcher_actor spawn_bench_dispatcher(caf::actor_system& sys, std::vector<bench_actor> gpus,
                                              bench_clock clock, std::filesystem::path trace) {
  return sys.spawn(dispatcher, std::move(gpus), std::move(clock), std::move(trace));
}

} // namespace ks::actors
