#include "actors/bench_dispatcher_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace ks::actors {

namespace {

using clock_type = std::chrono::steady_clock;

struct pending_job {
  bench_job job;
  caf::typed_response_promise<bench_result> promise;
  clock_type::time_point queued_at;
};

struct dispatcher_state {
  std::vector<bench_actor> gpus;
  std::vector<bool> busy;
  std::vector<bool> dead;
  std::deque<pending_job> queue;
  bool interrupted = false; ///< a stop_msg interrupt came: no job starts any more
  std::vector<std::optional<caf::typed_response_promise<bench_result>>> running;
  std::vector<int64_t> serial;     // of the job each GPU runs: a late answer to an older one is
                                   // ignored
  std::vector<double> assigned_ms; // the load of the tasks whose home each GPU is
  bench_stats stats;
  clock_type::time_point born = clock_type::now();
  std::unique_ptr<std::ofstream> trace; // KS_BENCH_TRACE: one JSON line per job, for people

  size_t size() const { return gpus.size(); }

  bool alive_any() const {
    for (bool d : dead)
      if (!d)
        return true;
    return false;
  }

  // Returns the idle GPU an unpinned job with no preference should take: the one fewest
  // queued jobs are pinned to (so a verification does not take the card a timing waits for),
  // then the one that worked least; -1 if none is idle.
  int32_t pick_idle() const {
    int32_t best = -1;
    int64_t best_pinned = 0;
    for (size_t g = 0; g < size(); ++g) {
      if (busy[g] || dead[g])
        continue;
      int64_t pinned = 0;
      for (const pending_job& p : queue)
        pinned += p.job.gpu == static_cast<int32_t>(g) ? 1 : 0;
      if (best < 0 || pinned < best_pinned ||
          (pinned == best_pinned && stats.busy_ms[g] < stats.busy_ms[static_cast<size_t>(best)])) {
        best = static_cast<int32_t>(g);
        best_pinned = pinned;
      }
    }
    return best;
  }

  // Returns the GPU job `j` may start on now, -1 if none: its pinned GPU, or the first of its
  // preferred ones, when idle; with no (live) preference, any idle GPU. With `elsewhere`, a
  // job whose preferred GPUs are busy takes another idle one: an idle card beats waiting, at
  // the price of a re-timing of the parent there.
  int32_t card_for(const bench_job& j, bool elsewhere) const {
    auto idle = [this](int32_t g) { return !busy[static_cast<size_t>(g)]; };
    if (j.gpu >= 0)
      return idle(j.gpu) ? j.gpu : -1;
    bool preference = false;
    for (int32_t g : j.prefer) {
      if (g < 0 || static_cast<size_t>(g) >= size() || dead[static_cast<size_t>(g)])
        continue;
      if (idle(g))
        return g;
      preference = true;
    }
    return !preference || elsewhere ? pick_idle() : -1;
  }

  // Returns the home for a new task: the live GPU with the least load assigned so far, the
  // lowest index on a tie (a dead one only when all are dead).
  int32_t pick_home() const {
    int32_t best = -1;
    for (size_t g = 0; g < size(); ++g) {
      if (dead[g] && alive_any())
        continue;
      if (best < 0 || assigned_ms[g] < assigned_ms[static_cast<size_t>(best)])
        best = static_cast<int32_t>(g);
    }
    return best;
  }
};

using dispatcher_pointer = bench_dispatcher_actor::stateful_pointer<dispatcher_state>;

void dispatch(dispatcher_pointer self);

double seconds_since(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Returns the first fields of a job's trace line. Labels and task names are ours (task file
// stems and "#id"), but are escaped all the same.
std::string trace_head(const dispatcher_state& st, const bench_job& job,
                       clock_type::time_point started) {
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
       << "\", \"task\": " << quoted(job.task) << ", \"label\": " << quoted(job.label)
       << ", \"start_s\": " << seconds_since(st.born, started);
  return line.str();
}

void lose(dispatcher_pointer self, size_t gpu, int64_t serial, const std::string& why);

// Ends the job GPU `gpu` runs (if it is still job `serial`) and starts the next one.
void finish(dispatcher_pointer self, size_t gpu, int64_t serial) {
  auto& st = self->state;
  if (st.serial[gpu] != serial || !st.running[gpu])
    return;
  st.running[gpu].reset();
  st.busy[gpu] = false;
  dispatch(self);
}

void start(dispatcher_pointer self, size_t gpu, pending_job p) {
  auto& st = self->state;
  st.busy[gpu] = true;
  st.running[gpu] = p.promise;
  int64_t serial = ++st.serial[gpu];
  p.job.gpu = static_cast<int32_t>(gpu);
  auto started = clock_type::now();
  double queued_ms = std::chrono::duration<double, std::milli>(started - p.queued_at).count();
  std::string traced = st.trace ? trace_head(st, p.job, started) : std::string();
  self->request(st.gpus[gpu], caf::infinite, std::move(p.job))
      .then(
          [self, gpu, serial, queued_ms, traced](bench_result& r) {
            auto& st = self->state;
            if (st.serial[gpu] != serial || !st.running[gpu])
              return;
            if (st.trace)
              *st.trace << traced << ", \"end_s\": " << seconds_since(st.born, clock_type::now())
                        << ", \"queued_ms\": " << queued_ms
                        << ", \"ok\": " << (r.ok ? "true" : "false");
            if (st.trace && r.ok && r.kind == bench_kind::time)
              *st.trace << ", \"median_ms\": " << r.timing().median_ms
                        << ", \"p10_ms\": " << r.timing().p10_ms
                        << ", \"p90_ms\": " << r.timing().p90_ms
                        << ", \"trials\": " << r.timing().trials;
            if (st.trace)
              *st.trace << "}" << std::endl;
            r.queued_ms = queued_ms;
            r.gpu = static_cast<int32_t>(gpu);
            st.stats.busy_ms[gpu] += r.busy_ms;
            st.stats.jobs[gpu] += 1;
            st.running[gpu]->deliver(std::move(r));
            finish(self, gpu, serial);
          },
          [self, gpu, serial](caf::error& e) { lose(self, gpu, serial, describe(e)); });
}

// Marks GPU `gpu`'s bench actor dead and fails the job it ran: it takes no more jobs.
void lose(dispatcher_pointer self, size_t gpu, int64_t serial, const std::string& why) {
  auto& st = self->state;
  st.dead[gpu] = true;
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
  // A job pinned to a dead GPU runs anywhere rather than never.
  for (pending_job& p : st.queue)
    if (p.job.gpu >= 0 && st.dead[static_cast<size_t>(p.job.gpu)])
      p.job.gpu = -1;
  // Each round starts the queued job of highest priority that has a card to run on, until none
  // can start: first on the cards the jobs belong to, then on the idle cards left over. A job's
  // priority grows by the milliseconds it has waited (aging): a light task's job pinned to a
  // card cannot starve behind a heavy task's stream there (its task's next steps wait for it,
  // and another card may idle meanwhile), and among equals the earliest goes first.
  auto now = clock_type::now();
  auto effective = [now](const pending_job& p) {
    return p.job.priority + std::chrono::duration<double, std::milli>(now - p.queued_at).count();
  };
  for (bool elsewhere : {false, true}) {
    for (;;) {
      auto chosen = st.queue.end();
      int32_t chosen_gpu = -1;
      double chosen_priority = 0;
      for (auto i = st.queue.begin(); i != st.queue.end(); ++i) {
        double priority = effective(*i);
        if (chosen != st.queue.end() && !(priority > chosen_priority))
          continue;
        int32_t gpu = st.card_for(i->job, elsewhere);
        if (gpu < 0)
          continue;
        chosen = i;
        chosen_gpu = gpu;
        chosen_priority = priority;
      }
      if (chosen == st.queue.end())
        break;
      pending_job p = std::move(*chosen);
      st.queue.erase(chosen);
      start(self, static_cast<size_t>(chosen_gpu), std::move(p));
    }
  }
  st.stats.queued = static_cast<int64_t>(st.queue.size());
}

bench_dispatcher_actor::behavior_type dispatcher(dispatcher_pointer self,
                                                 std::vector<bench_actor> gpus) {
  auto& st = self->state;
  st.gpus = std::move(gpus);
  st.busy.assign(st.size(), false);
  st.dead.assign(st.size(), false);
  st.running.resize(st.size());
  st.serial.assign(st.size(), 0);
  st.assigned_ms.assign(st.size(), 0);
  st.stats.busy_ms.assign(st.size(), 0);
  st.stats.jobs.assign(st.size(), 0);
  if (const char* path = std::getenv("KS_BENCH_TRACE"); path != nullptr && *path != '\0') {
    st.trace = std::make_unique<std::ofstream>(path, std::ios::app);
    if (!*st.trace) {
      std::cerr << "kernelskill: cannot write the bench trace to " << path
                << " (KS_BENCH_TRACE); the campaign runs without it\n";
      st.trace.reset();
    }
  }
  // A bench actor that dies mid-job never answers it: its down message ends the job instead.
  for (const bench_actor& g : st.gpus)
    self->monitor(g);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    for (size_t g = 0; g < st.size(); ++g)
      if (st.gpus[g].address() == down.source) {
        st.dead[g] = true;
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
        st.queue.push_back(pending_job{std::move(job), promise, clock_type::now()});
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
        int32_t gpu =
            a.gpu >= 0 && a.gpu < static_cast<int32_t>(st.size()) ? a.gpu : st.pick_home();
        // A negative or NaN estimate would skew every later choice: it counts as nothing.
        st.assigned_ms[static_cast<size_t>(gpu)] += a.load_ms > 0 ? a.load_ms : 0;
        return gpu;
      },
  };
}

} // namespace

bench_dispatcher_actor spawn_bench_dispatcher(caf::actor_system& sys,
                                              std::vector<bench_actor> gpus) {
  return sys.spawn(dispatcher, std::move(gpus));
}

} // namespace ks::actors
