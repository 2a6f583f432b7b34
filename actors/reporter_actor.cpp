#include "actors/reporter_actor.hpp"

#include "actors/actor_error.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

namespace ks::actors {

namespace {

using clock_type = std::chrono::steady_clock;

std::string fixed(double x, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, x);
  return buffer;
}

struct reporter_state {
  reporter_setup setup;
  clock_type::time_point start = clock_type::now();
  clock_type::time_point last_write = clock_type::now();
  std::vector<task_progress> last; ///< by supervisor; kept when one has ended
  bench_stats stats;

  double elapsed_s() const {
    return std::chrono::duration<double>(clock_type::now() - start).count();
  }

  void print() const {
    std::string out = "[" + fixed(elapsed_s(), 0) + " s]\n";
    for (size_t i = 0; i < last.size(); ++i) {
      const task_progress& p = last[i];
      std::string name = p.name.empty() ? setup.tasks[i] : p.name;
      out += "  " + name + ": " + std::to_string(p.nodes) + " nodes";
      if (p.in_flight > 0)
        out += " (" + std::to_string(p.in_flight) + " in flight)";
      if (p.best_speedup > 0)
        out += ", best " + fixed(p.best_speedup, 2) + "x";
      if (p.best_fraction > 0)
        out += ", " + fixed(100 * p.best_fraction, 0) + "% of roofline";
      out += p.phase.empty() ? "" : " [" + p.phase + "]";
      out += "\n";
    }
    double wall_ms = 1000 * elapsed_s();
    for (size_t g = 0; g < stats.busy_ms.size(); ++g) {
      std::string name = g < setup.gpu_names.size() ? setup.gpu_names[g] : std::string();
      out += "  gpu" + std::to_string(g) + (name.empty() ? "" : " (" + name + ")") + ": busy " +
             fixed(wall_ms > 0 ? 100 * stats.busy_ms[g] / wall_ms : 0, 0) + "%, " +
             std::to_string(stats.jobs[g]) + " jobs";
      if (g == 0 && stats.queued > 0)
        out += ", " + std::to_string(stats.queued) + " queued";
      out += "\n";
    }
    std::cerr << out << std::flush;
  }
};

using reporter_pointer = reporter_actor::stateful_pointer<reporter_state>;

// Collects every supervisor's progress and the bench counters, then runs `then`.
void collect(reporter_pointer self, std::function<void()> then) {
  auto& st = self->state;
  auto left = std::make_shared<size_t>(st.setup.supervisors.size() + 1);
  auto one_done = [left, then] {
    if (--*left == 0)
      then();
  };
  for (size_t i = 0; i < st.setup.supervisors.size(); ++i)
    self->request(st.setup.supervisors[i], std::chrono::seconds(10), progress_request{})
        .then(
            [self, i, one_done](task_progress& p) {
              self->state.last[i] = std::move(p);
              one_done();
            },
            // A supervisor that has ended keeps its last line.
            [one_done](caf::error&) { one_done(); });
  if (st.setup.dispatcher == nullptr) {
    one_done();
    return;
  }
  self->request(st.setup.dispatcher, std::chrono::seconds(10), bench_stats_request{})
      .then(
          [self, one_done](bench_stats& s) {
            self->state.stats = std::move(s);
            one_done();
          },
          [one_done](caf::error&) { one_done(); });
}

// Has the store write the outputs, then runs `then` (whatever came of it).
void write(reporter_pointer self, std::function<void()> then) {
  auto& st = self->state;
  st.last_write = clock_type::now();
  if (st.setup.store == nullptr || st.setup.output_dir.empty()) {
    then();
    return;
  }
  self->request(st.setup.store, caf::infinite, write_outputs{st.setup.output_dir})
      .then([then](ack&) { then(); },
            [then](caf::error& e) {
              std::cerr << "kernelskill: cannot write the campaign's outputs: " << describe(e)
                        << "\n";
              then();
            });
}

void schedule_tick(reporter_pointer self) {
  if (self->state.setup.interval_s > 0)
    self->delayed_send(
        self, std::chrono::milliseconds(static_cast<int64_t>(1000 * self->state.setup.interval_s)),
        tick_atom::value);
}

reporter_actor::behavior_type reporter(reporter_pointer self, reporter_setup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  st.last.resize(st.setup.supervisors.size());
  schedule_tick(self);
  return {
      [self](tick_atom) {
        collect(self, [self] {
          self->state.print();
          double since_write =
              std::chrono::duration<double>(clock_type::now() - self->state.last_write).count();
          if (self->state.setup.write_interval_s > 0 &&
              since_write >= self->state.setup.write_interval_s)
            write(self, [] {});
          schedule_tick(self);
        });
      },
      [self](const task_report& r) {
        for (size_t i = 0; i < self->state.setup.tasks.size(); ++i)
          if (self->state.setup.tasks[i] == r.name) {
            task_progress& p = self->state.last[i];
            p.name = r.name;
            p.phase = r.phase;
            p.nodes = r.nodes;
            p.in_flight = 0;
            p.best_speedup = r.speedup;
            p.best_fraction = r.fraction_of_roofline;
          }
      },
      [self](const report_now& m) {
        auto promise = self->make_response_promise<ack>();
        bool print = m.final && self->state.setup.interval_s > 0;
        collect(self, [self, promise, print]() mutable {
          if (print)
            self->state.print();
          write(self, [promise]() mutable { promise.deliver(ack{}); });
        });
        return promise;
      },
  };
}

} // namespace

reporter_actor spawn_reporter(caf::actor_system& sys, reporter_setup setup) {
  return sys.spawn(reporter, std::move(setup));
}

} // namespace ks::actors
