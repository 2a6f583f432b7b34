// The reporter: what a person watching a campaign sees. Two displays, chosen by whether stderr
// is a terminal (console::live):
//
//   - on a terminal, a block redrawn in place every second: a headline (elapsed time, tasks
//     done, candidates planned / compiled / verified / timed, bench jobs queued, ETA), a line
//     per task and a line per GPU;
//   - off a terminal (a log file, CI), the headline alone as a plain line every interval, and
//     only when something in it changed, so that a log of a long campaign stays readable.
//
// Either way a task's result is printed the moment the task ends, not only in the final table.
//
// The ETA comes from the budget: each unfinished task may still plan up to its candidate
// budget; at the rate candidates have settled so far, that much work takes the time shown,
// capped by what is left of the campaign's wall time. Tasks often stop sooner (patience, the
// roofline), so it is an upper estimate, and shown as one ("<=").

#include "actors/reporter_actor.hpp"

#include "actors/actor_error.hpp"
#include "engine/search_tree.hpp"
#include "report/console.hpp"
#include "report/report_format.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

namespace ks::actors {

namespace console = report::console;

namespace {

using clock_type = std::chrono::steady_clock;
using engine::node_status;

std::string fixed(double x, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, x);
  return buffer;
}

int64_t count_of(const task_progress& p, std::initializer_list<node_status> statuses) {
  int64_t n = 0;
  for (node_status s : statuses) {
    auto i = static_cast<size_t>(s);
    if (i < p.by_status.size())
      n += p.by_status[i];
  }
  return n;
}

/// What a task's candidates have been through, summed from their statuses.
struct candidate_counts {
  int64_t planned = 0;
  int64_t compiled = 0; ///< built (whatever came after)
  int64_t failed_to_compile = 0;
  int64_t verified = 0; ///< verification ran (whatever it found)
  int64_t timed = 0;
  int64_t settled = 0; ///< reached a final status

  candidate_counts& operator+=(const candidate_counts& o) {
    planned += o.planned;
    compiled += o.compiled;
    failed_to_compile += o.failed_to_compile;
    verified += o.verified;
    timed += o.timed;
    settled += o.settled;
    return *this;
  }
};

candidate_counts counts_of(const task_progress& p) {
  candidate_counts c;
  for (int64_t n : p.by_status)
    c.planned += n;
  c.timed = count_of(p, {node_status::timed, node_status::rejected, node_status::accepted});
  c.verified = c.timed + count_of(p, {node_status::verified});
  c.compiled = c.verified + count_of(p, {node_status::compiled, node_status::failed,
                                         node_status::crashed, node_status::timed_out});
  c.failed_to_compile = count_of(p, {node_status::compile_failed});
  c.settled = c.failed_to_compile +
              count_of(p, {node_status::failed, node_status::crashed, node_status::timed_out,
                           node_status::rejected, node_status::accepted});
  return c;
}

struct reporter_state {
  reporter_setup setup;
  clock_type::time_point start = clock_type::now();
  clock_type::time_point last_write = clock_type::now();
  std::vector<task_progress> last; ///< by supervisor; kept when one has ended
  std::vector<bool> ended;         ///< by supervisor
  bench_stats stats;
  std::string last_plain; ///< the last plain headline without its time, not to repeat it

  double elapsed_s() const {
    return std::chrono::duration<double>(clock_type::now() - start).count();
  }

  std::string name_of(size_t i) const {
    return last[i].name.empty() ? setup.tasks[i] : last[i].name;
  }

  int64_t tasks_ended() const { return std::count(ended.begin(), ended.end(), true); }

  // Returns the ETA as text ("<= 4m10s"), or empty while nothing has settled to measure by.
  std::string eta() const {
    double elapsed = elapsed_s();
    double left_work = 0;
    double done_work = 0;
    for (size_t i = 0; i < last.size(); ++i) {
      candidate_counts c = counts_of(last[i]);
      if (setup.dry_run) {
        // A dry run compiles the reference and one round of candidates per task.
        // A task not planned yet still has its whole round (its budget) ahead.
        done_work += static_cast<double>(c.compiled + c.failed_to_compile);
        if (!ended[i])
          left_work += static_cast<double>(std::max<int64_t>(
              0, std::max(last[i].budget, c.planned) - c.compiled - c.failed_to_compile));
        continue;
      }
      done_work += static_cast<double>(c.settled);
      if (!ended[i]) {
        int64_t budget = last[i].budget > 0 ? last[i].budget : c.planned;
        left_work += static_cast<double>(std::max<int64_t>(budget, c.planned) - c.settled);
      }
    }
    if (tasks_ended() == static_cast<int64_t>(last.size()))
      return {};
    bool by_wall = false;
    double seconds = -1;
    if (done_work > 0)
      seconds = elapsed * left_work / done_work;
    if (setup.wall_time_s > 0) {
      double wall_left = std::max(0.0, setup.wall_time_s - elapsed);
      if (seconds < 0 || wall_left < seconds) {
        seconds = wall_left;
        by_wall = true;
      }
    }
    if (seconds < 0)
      return {};
    return "ETA <= " + report::format_elapsed(seconds) + (by_wall ? " (wall-time budget)" : "");
  }

  // Returns how many tasks are done ("3/8 tasks done").
  std::string tasks_done() const {
    return std::string(setup.dry_run ? "dry run: " : "") + std::to_string(tasks_ended()) + "/" +
           std::to_string(last.size()) + " tasks done";
  }

  // Returns what the candidates of every task have been through, and the bench's queue.
  std::string candidate_summary() const {
    candidate_counts total;
    for (const task_progress& p : last)
      total += counts_of(p);
    if (setup.dry_run) {
      std::string out = std::to_string(total.planned) + " candidates planned, " +
                        std::to_string(total.compiled) + " compiled";
      if (total.failed_to_compile > 0)
        out += ", " + std::to_string(total.failed_to_compile) + " did not compile";
      return out;
    }
    return "candidates: " + std::to_string(total.planned) + " planned, " +
           std::to_string(total.compiled) + " compiled, " + std::to_string(total.verified) +
           " verified, " + std::to_string(total.timed) + " timed; " + std::to_string(stats.queued) +
           " bench jobs queued";
  }

  std::string task_line(size_t i) const {
    const task_progress& p = last[i];
    candidate_counts c = counts_of(p);
    std::string phase = !p.step.empty()                          ? p.step
                        : p.phase == engine::task_phase::pending ? std::string("waiting")
                                                                 : engine::to_string(p.phase);
    char head[96];
    std::snprintf(head, sizeof head, "  %-18s %-10s", name_of(i).c_str(), phase.c_str());
    std::string out = head;
    out += " " + std::to_string(c.planned) + " planned";
    if (setup.dry_run) {
      out += ", " + std::to_string(c.compiled) + " compiled";
      return out;
    }
    out += ", " + std::to_string(c.compiled) + " compiled, " + std::to_string(c.verified) +
           " verified, " + std::to_string(c.timed) + " timed";
    if (p.in_flight > 0)
      out += " (" + std::to_string(p.in_flight) + " in flight)";
    if (p.best_speedup > 0)
      out += "; best " + fixed(p.best_speedup, 2) + "x";
    if (p.best_fraction > 0)
      out += ", " + fixed(100 * p.best_fraction, 0) + "% of roofline";
    return out;
  }

  std::vector<std::string> gpu_lines(bool indent) const {
    std::vector<std::string> out;
    double wall_ms = 1000 * elapsed_s();
    for (size_t g = 0; g < stats.busy_ms.size(); ++g) {
      std::string name = g < setup.gpu_names.size() ? setup.gpu_names[g] : std::string();
      std::string trouble = g < stats.stability.size() ? stats.stability[g] : std::string();
      out.push_back(std::string(indent ? "  " : "") + "gpu" + std::to_string(g) +
                    (name.empty() ? "" : " (" + name + ")") + ": busy " +
                    fixed(wall_ms > 0 ? 100 * stats.busy_ms[g] / wall_ms : 0, 0) + "%, " +
                    std::to_string(g < stats.jobs.size() ? stats.jobs[g] : 0) + " jobs" +
                    (trouble.empty() ? "" : "; " + trouble));
    }
    return out;
  }

  // Redraws the block (on a terminal), or writes the headline if it changed (off one).
  void show() {
    std::string eta_text = eta();
    std::string when = "[" + report::format_elapsed(elapsed_s()) + "] ";
    if (console::live()) {
      // Two lines of headline: one line would be cut at a terminal's width.
      std::vector<std::string> lines{when + tasks_done() +
                                         (eta_text.empty() ? "" : ", " + eta_text),
                                     "  " + candidate_summary()};
      std::vector<std::string> gpus = gpu_lines(true);
      // The GPUs always show; the tasks get the rest of the screen, the ones that do not fit
      // counted on one line.
      int64_t room =
          std::max<int64_t>(1, console::height() - 2 - 2 - static_cast<int64_t>(gpus.size()));
      int64_t running = static_cast<int64_t>(last.size()) - tasks_ended();
      int64_t shown = 0;
      for (size_t i = 0; i < last.size(); ++i) {
        if (ended[i])
          continue;
        if (shown + 1 == room && running > room) {
          lines.push_back("  ... and " + std::to_string(running - shown) + " more tasks");
          break;
        }
        lines.push_back(task_line(i));
        ++shown;
      }
      for (std::string& g : gpus)
        lines.push_back(std::move(g));
      console::show(lines);
      return;
    }
    // The time, the ETA and the busy shares drift every interval: a line is written only
    // when what is done has changed, or a log would repeat itself.
    std::string compared = tasks_done() + ", " + candidate_summary();
    if (compared == last_plain)
      return;
    last_plain = compared;
    std::string plain = when + compared + (eta_text.empty() ? "" : ", " + eta_text);
    for (const std::string& g : gpu_lines(false))
      plain += "; " + g;
    console::line(console::stream::err, plain);
  }

  // Prints the result of a task that has just ended.
  void print_result(const task_report& r) const {
    if (setup.dry_run)
      return; // a dry run's task printed its own lines
    std::string out = r.name + ": ";
    if (r.phase == engine::task_phase::failed) {
      out += "failed: " + (r.stop_text.empty() ? r.stop_reason : r.stop_text);
    } else if (r.stop_reason == "host_fault") {
      out += "stopped by a fault of the host with " + std::to_string(r.nodes) +
             " nodes (resumable): " + r.stop_text;
    } else if (r.stop_reason == "interrupted") {
      out += "interrupted with " + std::to_string(r.nodes) + " nodes";
      if (r.speedup > 0)
        out += " (best so far " + fixed(r.speedup, 2) + "x)";
    } else {
      out += "done";
      if (r.best_ms > 0 && r.reference_ms > 0)
        out += ": " + fixed(r.speedup, 2) + "x its reference (" + fixed(r.reference_ms, 3) +
               " ms -> " + fixed(r.best_ms, 3) + " ms)";
      if (r.fraction_of_roofline > 0)
        out += ", " + fixed(100 * r.fraction_of_roofline, 0) + "% of the roofline";
      out += ", " + std::to_string(r.nodes) + " nodes";
      if (!r.stop_reason.empty())
        out += "; stopped: " + (r.stop_text.empty() ? r.stop_reason : r.stop_text);
    }
    console::line(console::stream::err, out);
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

// Has the store write the outputs, then runs `then` with why they could not be written
// (empty when they were), whatever came of it.
void write(reporter_pointer self, std::function<void(std::string)> then) {
  auto& st = self->state;
  st.last_write = clock_type::now();
  if (st.setup.store == nullptr || st.setup.output_dir.empty()) {
    then({});
    return;
  }
  self->request(st.setup.store, caf::infinite, write_outputs{st.setup.output_dir})
      .then([then](ack&) { then({}); },
            [then](caf::error& e) {
              std::string why = describe(e);
              console::line(console::stream::err,
                            "kernelskill: cannot write the campaign's outputs: " + why);
              then(std::move(why));
            });
}

// Seconds between two displays: every second on a terminal, the interval off one.
double display_period(const reporter_setup& setup) {
  if (setup.interval_s <= 0)
    return 0;
  return console::live() ? std::min(setup.interval_s, 1.0) : setup.interval_s;
}

void schedule_tick(reporter_pointer self) {
  double period = display_period(self->state.setup);
  if (period > 0)
    self->delayed_send(self, std::chrono::milliseconds(static_cast<int64_t>(1000 * period)),
                       tick_atom::value);
}

reporter_actor::behavior_type reporter(reporter_pointer self, reporter_setup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  st.last.resize(st.setup.supervisors.size());
  st.ended.assign(st.setup.supervisors.size(), false);
  schedule_tick(self);
  return {
      [self](tick_atom) {
        collect(self, [self] {
          self->state.show();
          double since_write =
              std::chrono::duration<double>(clock_type::now() - self->state.last_write).count();
          if (self->state.setup.write_interval_s > 0 &&
              since_write >= self->state.setup.write_interval_s)
            write(self, [](const std::string&) {});
          schedule_tick(self);
        });
      },
      [self](const task_report& r) {
        auto& st = self->state;
        for (size_t i = 0; i < st.setup.tasks.size(); ++i)
          if (st.setup.tasks[i] == r.name) {
            task_progress& p = st.last[i];
            p.name = r.name;
            p.phase = r.phase;
            p.step.clear();
            p.nodes = r.nodes;
            p.in_flight = 0;
            p.best_speedup = r.speedup;
            p.best_fraction = r.fraction_of_roofline;
            if (!r.by_status.empty())
              p.by_status = r.by_status;
            st.ended[i] = true;
          }
        st.print_result(r);
        if (st.setup.interval_s > 0)
          st.show();
        // A task that ended is in the outputs at once (report.html included), not a write
        // interval later.
        if (st.setup.write_interval_s > 0)
          write(self, [](const std::string&) {});
      },
      [self](const report_now& m) {
        auto promise = self->make_response_promise<ack>();
        bool last = m.final;
        collect(self, [self, promise, last]() mutable {
          // The final table follows on stdout: the block leaves the screen to it.
          if (last)
            console::clear();
          // The last write's failure is the campaign's (run exits non-zero): the caller hears
          // of it as an error.
          write(self, [promise](std::string why) mutable {
            if (why.empty())
              promise.deliver(ack{});
            else
              promise.deliver(make_actor_error(actor_errc::store, std::move(why)));
          });
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
