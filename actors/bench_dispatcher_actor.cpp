#include "actors/bench_dispatcher_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/bench_stability.hpp"
#include "actors/messages.hpp"
#include "engine/bench_placement.hpp"
#include "engine/bench_schedule.hpp"
#include "report/bench_trace.hpp"
#include "report/console.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

namespace ks::actors {

namespace console = report::console;

namespace {

struct pending_job {
  bench_job job;
  caf::typed_response_promise<bench_result> promise;
  double queued_at_ms = 0; ///< on the dispatcher's clock
  int64_t retimes = 0;     ///< times a probe out of bounds sent it back to the queue
};

/// A timing result waiting for its card's next probe (engine/card_stability.hpp).
struct held_result {
  pending_job job; ///< to queue it again when the probe is out of bounds
  bench_result result;
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
  // The card-stability monitor: each card's probes, the timing results waiting for the next
  // probe, a copy of the timing job each card runs (to hold its result), which cards probe now.
  std::unique_ptr<stability_watch> watch;
  std::vector<std::vector<held_result>> held;
  std::vector<std::optional<pending_job>> timing_run;
  std::vector<bool> probing;
  bool tick_pending = false; ///< a wake-up for an unstable card's next probe is on its way

  size_t size() const { return gpus.size(); }

  double now_s() const { return (clock() - born_ms) / 1000; }

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

// -- the card-stability monitor (engine/card_stability.hpp) ---------------------------------

/// What becomes of the timing results a card holds for its next probe.
enum class release {
  deliver, ///< handed on: the probe was within bounds, or no probe will come
  requeue, ///< their jobs go back to the queue, to be timed once the card is quiet again
  flag,    ///< handed on, flagged: the card is unstable past its limit
};

// Releases the timing results card `gpu` holds; returns how many jobs went back to the queue.
// A job sent back more than max_retimes times is handed on flagged instead; after an interrupt
// nothing goes back (nothing would start it).
int64_t release_held(dispatcher_pointer self, size_t gpu, release how) {
  auto& st = self->state;
  std::vector<held_result> held = std::move(st.held[gpu]);
  st.held[gpu].clear();
  int64_t requeued = 0;
  const int64_t max_retimes = st.watch->monitor(gpu).options().max_retimes;
  for (held_result& h : held) {
    if (how == release::requeue && !st.interrupted && h.job.retimes < max_retimes) {
      ++h.job.retimes;
      st.queue.push_back(std::move(h.job));
      ++requeued;
      continue;
    }
    if (how == release::flag || (how == release::requeue && !st.interrupted))
      st.watch->flag(gpu, h.job.job.label);
    h.job.promise.deliver(std::move(h.result));
  }
  st.stats.queued = static_cast<int64_t>(st.queue.size());
  return requeued;
}

// Takes timing result `r` of card `gpu` (its job is st.timing_run[gpu]): holds it for the card's
// next probe while the card is quiet (returns true), else leaves it to be handed on, flagged
// while the card is unstable past its limit (returns false).
bool hold_or_flag(dispatcher_pointer self, size_t gpu, bench_result& r) {
  auto& st = self->state;
  pending_job job = std::move(*st.timing_run[gpu]);
  st.timing_run[gpu].reset();
  const engine::card_monitor& m = st.watch->monitor(gpu);
  if (m.holds_results() && !st.interrupted) {
    st.held[gpu].push_back(held_result{std::move(job), std::move(r)});
    return true;
  }
  if (m.flags_results())
    st.watch->flag(gpu, job.job.label);
  return false;
}

// Card `gpu` ended a job whose result it holds: it is free for the next job or its probe.
void finish_held(dispatcher_pointer self, size_t gpu) {
  self->state.cards[gpu].busy = false;
  dispatch(self);
}

// Takes the answer of card `gpu`'s probe `serial`: the monitor decides, the held results go
// on, back to the queue or flagged, and people hear of a change.
void probed(dispatcher_pointer self, size_t gpu, int64_t serial, const bench_result& r) {
  auto& st = self->state;
  if (st.serial[gpu] != serial || !st.probing[gpu])
    return;
  st.probing[gpu] = false;
  st.cards[gpu].busy = false;
  st.stats.busy_ms[gpu] += r.busy_ms;
  st.cards[gpu].busy_ms += r.busy_ms;
  if (r.device_lost)
    retire_lost_card(self, gpu, r.message);
  if (!r.ok) {
    st.watch->probe_failed(gpu, r.message);
    release_held(self, gpu, release::deliver);
    dispatch(self);
    return;
  }
  const gpu::probe_result& p = r.probe();
  using engine::stability_event;
  stability_event event = st.watch->monitor(gpu).record(
      engine::probe_reading{st.now_s(), p.bytes, p.median_ms, p.p10_ms, p.p90_ms});
  int64_t requeued = 0;
  switch (event) {
  case stability_event::none:
  case stability_event::recovered:
    release_held(self, gpu, release::deliver);
    break;
  case stability_event::suspect:
    break; // the next probe, at once, decides
  case stability_event::false_alarm:
  case stability_event::unstable:
  case stability_event::still_unstable:
    requeued = release_held(self, gpu, release::requeue);
    break;
  case stability_event::gave_up:
    release_held(self, gpu, release::flag);
    break;
  }
  st.watch->announce(gpu, event, st.now_s(), requeued);
  dispatch(self);
}

// Runs the stability probe on card `gpu`, which is free.
void start_probe(dispatcher_pointer self, size_t gpu) {
  auto& st = self->state;
  st.cards[gpu].busy = true;
  st.probing[gpu] = true;
  int64_t serial = ++st.serial[gpu];
  bench_job job;
  job.kind = bench_kind::probe;
  job.gpu = static_cast<int32_t>(gpu);
  job.label = "stability probe";
  self->request(st.gpus[gpu], caf::infinite, std::move(job))
      .then([self, gpu, serial](bench_result& r) { probed(self, gpu, serial, r); },
            [self, gpu, serial](caf::error& e) {
              lose(self, gpu, serial, describe(e));
              dispatch(self);
            });
}

// Returns the cards that must be probed before what the schedule would start on them
// (`starts`, which loses those starts), and the free cards that must be probed now.
std::vector<bool> probes_due(dispatcher_state& st, std::vector<engine::job_start>& starts) {
  std::vector<bool> probe(st.size(), false);
  if (!st.watch->enabled())
    return probe;
  const double now_s = st.now_s();
  std::vector<bool> starting(st.size(), false);
  std::vector<engine::job_start> kept;
  for (const engine::job_start& s : starts) {
    auto g = static_cast<size_t>(s.card);
    starting[g] = true;
    engine::card_next next = st.queue[s.job].job.kind == bench_kind::time
                                 ? engine::card_next::timing
                                 : engine::card_next::other;
    if (st.watch->monitor(g).probe_due(now_s, !st.held[g].empty(), next))
      probe[g] = true;
    else
      kept.push_back(s);
  }
  starts = std::move(kept);
  for (size_t g = 0; g < st.size(); ++g)
    if (!starting[g] && !st.cards[g].busy && !st.cards[g].dead &&
        st.watch->monitor(g).probe_due(now_s, !st.held[g].empty(), engine::card_next::idle))
      probe[g] = true;
  return probe;
}

// An unstable card that idles is probed again pause_s after its last probe: wakes the
// dispatcher then (nothing else would).
void wake_for_probes(dispatcher_pointer self) {
  auto& st = self->state;
  if (!st.watch->enabled() || st.tick_pending)
    return;
  const double now_s = st.now_s();
  std::optional<double> wait_s;
  for (size_t g = 0; g < st.size(); ++g) {
    const engine::card_monitor& m = st.watch->monitor(g);
    if (st.cards[g].busy || st.cards[g].dead || m.off() || m.trust() == engine::card_trust::quiet)
      continue;
    double left = m.last().at_s + m.options().pause_s - now_s;
    wait_s = wait_s ? std::min(*wait_s, left) : left;
  }
  if (!wait_s)
    return;
  st.tick_pending = true;
  auto ms = std::max<int64_t>(10, std::llround(1000 * *wait_s));
  self->delayed_send(self, std::chrono::milliseconds(ms), tick_atom::value);
}

void start(dispatcher_pointer self, size_t gpu, pending_job p) {
  auto& st = self->state;
  st.cards[gpu].busy = true;
  st.running[gpu] = p.promise;
  int64_t serial = ++st.serial[gpu];
  // A timing job's result may wait for the card's next probe, or go back to the queue.
  st.timing_run[gpu].reset();
  if (st.watch->enabled() && p.job.kind == bench_kind::time)
    st.timing_run[gpu] = p; // as queued: placed as it came, should it go back to the queue
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
            if (r.ok && st.timing_run[gpu] && hold_or_flag(self, gpu, r)) {
              st.running[gpu].reset();
              finish_held(self, gpu);
              return;
            }
            st.running[gpu]->deliver(std::move(r));
            finish(self, gpu, serial);
          },
          [self, gpu, serial](caf::error& e) { lose(self, gpu, serial, describe(e)); });
}

// Marks GPU `gpu`'s bench actor dead and fails the job it ran: it takes no more jobs. Timing
// results it held for a probe are handed on as they are: no probe will come.
void lose(dispatcher_pointer self, size_t gpu, int64_t serial, const std::string& why) {
  auto& st = self->state;
  st.cards[gpu].dead = true;
  release_held(self, gpu, release::deliver);
  if (st.probing[gpu]) {
    st.probing[gpu] = false;
    st.cards[gpu].busy = false;
  }
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
                                        p.queued_at_ms, p.job.kind == bench_kind::time});
  // A card the stability monitor pauses takes no timing job (engine/bench_schedule.hpp).
  std::vector<engine::card_state> cards = st.cards;
  if (st.watch->enabled())
    for (size_t g = 0; g < st.size(); ++g)
      cards[g].timing_paused = st.watch->monitor(g).pauses_timing();
  std::vector<engine::job_start> starts = engine::schedule(queued, cards, st.clock());
  // A probe due on a card runs before the job the schedule gave it, which waits in the queue.
  std::vector<bool> probe = probes_due(st, starts);
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
  for (size_t g = 0; g < st.size(); ++g)
    if (probe[g])
      start_probe(self, g);
  st.stats.queued = static_cast<int64_t>(st.queue.size());
  wake_for_probes(self);
}

bench_dispatcher_actor::behavior_type dispatcher(dispatcher_pointer self,
                                                 std::vector<bench_actor> gpus, bench_clock clock,
                                                 const std::filesystem::path& trace,
                                                 stability_setup stability) {
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
  const double unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  st.watch = std::make_unique<stability_watch>(std::move(stability), st.size(), unix_s);
  st.held.resize(st.size());
  st.timing_run.resize(st.size());
  st.probing.assign(st.size(), false);
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
      [self](const bench_stats_request&) {
        bench_stats stats = self->state.stats;
        self->state.watch->fill(stats, self->state.now_s());
        return stats;
      },
      [self](tick_atom) {
        self->state.tick_pending = false;
        dispatch(self);
      },
      [self](const stop_msg& m) {
        // A budget that ran out still lets the queued jobs run (the finals need them); an
        // interrupt must not wait for jobs nobody will use before the resume.
        auto& st = self->state;
        if (m.kind != stop_kind::interrupt)
          return;
        st.interrupted = true;
        // Held timings are handed on as they are: the jobs that ran are written, as the ones
        // running now will be.
        for (size_t g = 0; g < st.size(); ++g)
          release_held(self, g, release::deliver);
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
                                              bench_clock clock, std::filesystem::path trace,
                                              stability_setup stability) {
  return sys.spawn(dispatcher, std::move(gpus), std::move(clock), std::move(trace),
                   std::move(stability));
}

} // namespace ks::actors
