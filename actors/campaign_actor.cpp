#include "actors/campaign_actor.hpp"

#include "actors/actor_error.hpp"
#include "actors/reporter_actor.hpp"
#include "report/console.hpp"

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <chrono>

namespace ks::actors {

namespace console = report::console;

namespace {

using clock_type = std::chrono::steady_clock;

struct campaign_state {
  campaign_setup setup;
  std::vector<supervisor_actor> supervisors;
  reporter_actor reporter;
  std::vector<task_report> reports;
  size_t left = 0;
  bool started = false;
  bool interrupted = false;
  bool budget_spent = false;
  bool done = false;
  std::string outputs_error; ///< why the last write of the outputs failed
  std::string host_fault;    ///< the fault of the host that stopped a task, and so the campaign
  clock_type::time_point start;
  caf::typed_response_promise<campaign_report> promise;

  double elapsed_s() const {
    return std::chrono::duration<double>(clock_type::now() - start).count();
  }
};

using campaign_pointer = campaign_actor::stateful_pointer<campaign_state>;

void tell_all(campaign_pointer self, const stop_msg& m) {
  for (const supervisor_actor& s : self->state.supervisors)
    self->send(s, m);
}

void spend_budget(campaign_pointer self, std::string why) {
  if (self->state.budget_spent)
    return;
  self->state.budget_spent = true;
  tell_all(self, stop_msg{stop_kind::budget, std::move(why)});
}

// A task stopped because a fault of the host persisted: the other tasks would meet it too, so
// they stop as they do on Ctrl-C (queued bench jobs dropped, the work in flight written), and
// the campaign reports the fault.
void stop_for_host_fault(campaign_pointer self, const std::string& why) {
  auto& st = self->state;
  if (!st.host_fault.empty())
    return;
  st.host_fault = why;
  stop_msg m{stop_kind::interrupt, "a fault of the host: " + why};
  if (st.setup.dispatcher != nullptr)
    self->send(st.setup.dispatcher, m);
  tell_all(self, m);
}

void schedule_check(campaign_pointer self) {
  const campaign_setup& s = self->state.setup;
  bool model = s.model_budget && s.llm != nullptr;
  if ((s.wall_time_s > 0 || s.gpu_seconds > 0 || model) && !self->state.done)
    self->delayed_send(self,
                       std::chrono::milliseconds(static_cast<int64_t>(1000 * s.budget_check_s)),
                       tick_atom::value);
}

// The last report is printed and written before the campaign answers: a caller that reads the
// outputs once run_all is answered finds them complete.
void wrap_up(campaign_pointer self) {
  auto& st = self->state;
  st.done = true;
  auto deliver = [self](bench_stats stats) {
    auto& st = self->state;
    campaign_report report{
        std::move(st.reports), st.elapsed_s(), std::move(stats), st.interrupted, {},
        st.outputs_error,      st.host_fault};
    for (const task_report& t : report.tasks)
      for (const auto& [step, s] : t.perf) {
        base::step_stats& merged = report.perf[step];
        merged.count += s.count;
        merged.total_ms += s.total_ms;
        merged.max_ms = std::max(merged.max_ms, s.max_ms);
      }
    st.promise.deliver(std::move(report));
    self->send_exit(st.reporter, caf::exit_reason::user_shutdown);
    self->quit();
  };
  auto with_stats = [self, deliver] {
    auto& st = self->state;
    if (st.setup.dispatcher == nullptr) {
      deliver({});
      return;
    }
    self->request(st.setup.dispatcher, caf::infinite, bench_stats_request{})
        .then([deliver](bench_stats& s) { deliver(std::move(s)); },
              [deliver](caf::error&) { deliver({}); });
  };
  self->request(st.reporter, caf::infinite, report_now{true})
      .then([with_stats](ack&) { with_stats(); },
            [self, with_stats](caf::error& e) {
              self->state.outputs_error = describe(e);
              with_stats();
            });
}

void check_other_budgets(campaign_pointer self);

// Offers task i, which ended with a winner, to the distiller; the task counts as done once
// the distiller has answered, stored or not (its reason is printed either way).
void distill(campaign_pointer self, size_t i) {
  const supervisor_setup& t = self->state.setup.tasks[i];
  distill_task m{t.task, t.gpu_name, t.peak_gbps, t.peak_gflops};
  auto done = [self] {
    if (--self->state.left == 0)
      wrap_up(self);
  };
  self->request(self->state.setup.distiller, caf::infinite, std::move(m))
      .then(
          [self, i, done](distill_result& r) {
            const std::string& task = self->state.setup.tasks[i].task;
            console::line(console::stream::err,
                          r.stored ? task + ": learned skill " + r.skill + " (" + r.reason + ")"
                                   : task + ": no skill learned: " + r.reason);
            done();
          },
          [self, i, done](caf::error& e) {
            console::line(console::stream::err,
                          self->state.setup.tasks[i].task + ": no skill learned: " + describe(e));
            done();
          });
}

caf::result<campaign_report> run(campaign_pointer self) {
  auto& st = self->state;
  if (st.started)
    return make_actor_error(actor_errc::internal, "the campaign is already running");
  st.started = true;
  st.start = clock_type::now();
  st.promise = self->make_response_promise<campaign_report>();
  reporter_setup rs;
  for (const supervisor_setup& t : st.setup.tasks) {
    st.supervisors.push_back(spawn_supervisor(self->system(), t));
    rs.tasks.push_back(t.task);
  }
  rs.supervisors = st.supervisors;
  rs.dispatcher = st.setup.dispatcher;
  rs.gpu_names = st.setup.gpu_names;
  rs.store = st.setup.store;
  rs.output_dir = st.setup.output_dir;
  rs.interval_s = st.setup.progress_interval_s;
  rs.write_interval_s = st.setup.write_interval_s;
  rs.wall_time_s = st.setup.wall_time_s;
  st.reporter = spawn_reporter(self->system(), std::move(rs));
  st.reports.resize(st.supervisors.size());
  st.left = st.supervisors.size();
  if (st.left == 0) {
    wrap_up(self);
    return st.promise;
  }
  for (size_t i = 0; i < st.supervisors.size(); ++i) {
    // A stop that came before the start reaches the supervisors first.
    if (st.interrupted)
      self->send(st.supervisors[i], stop_msg{stop_kind::interrupt, "interrupted"});
    self->request(st.supervisors[i], caf::infinite, run_task{})
        .then(
            [self, i](task_report& r) {
              self->send(self->state.reporter, r);
              if (r.stop_reason == "host_fault")
                stop_for_host_fault(self, r.stop_text);
              bool learnable = r.phase == engine::task_phase::done && r.winner > 0 &&
                               r.speedup > 1 + self->state.setup.min_gain;
              self->state.reports[i] = std::move(r);
              if (learnable && self->state.setup.distiller != nullptr && !self->state.interrupted &&
                  self->state.host_fault.empty()) {
                distill(self, i);
                return;
              }
              if (--self->state.left == 0)
                wrap_up(self);
            },
            [self, i](caf::error& e) {
              task_report& r = self->state.reports[i];
              r.name = self->state.setup.tasks[i].task;
              r.phase = engine::task_phase::failed;
              r.stop_reason = "error";
              r.stop_text = describe(e);
              if (--self->state.left == 0)
                wrap_up(self);
            });
  }
  schedule_check(self);
  return st.promise;
}

void check_budgets(campaign_pointer self) {
  auto& st = self->state;
  if (st.done || st.budget_spent)
    return;
  if (st.setup.model_budget && st.setup.llm != nullptr) {
    // The gateway refuses requests once a model budget is spent; the supervisors learn it
    // from their roles' refusals, and here from its counters, whichever comes first.
    self->request(st.setup.llm, caf::infinite, llm_stats_request{})
        .then(
            [self](llm_stats& s) {
              if (!s.stats.budget_spent.empty())
                spend_budget(self, s.stats.budget_spent);
              else
                check_other_budgets(self);
            },
            [self](caf::error&) { check_other_budgets(self); });
    return;
  }
  check_other_budgets(self);
}

void check_other_budgets(campaign_pointer self) {
  auto& st = self->state;
  if (st.done || st.budget_spent)
    return;
  if (st.setup.wall_time_s > 0 && st.elapsed_s() >= st.setup.wall_time_s) {
    spend_budget(self, "the campaign's wall time (" + std::to_string(st.setup.wall_time_s) +
                           " s) ran out");
    return;
  }
  if (st.setup.gpu_seconds > 0 && st.setup.dispatcher != nullptr) {
    self->request(st.setup.dispatcher, caf::infinite, bench_stats_request{})
        .then(
            [self](bench_stats& s) {
              double busy_s = 0;
              for (double ms : s.busy_ms)
                busy_s += ms / 1000;
              if (busy_s >= self->state.setup.gpu_seconds)
                spend_budget(self, "the campaign's GPU time (" +
                                       std::to_string(self->state.setup.gpu_seconds) +
                                       " s) ran out");
              else
                schedule_check(self);
            },
            [self](caf::error&) { schedule_check(self); });
    return;
  }
  schedule_check(self);
}

campaign_actor::behavior_type campaign(campaign_pointer self, campaign_setup setup) {
  self->state.setup = std::move(setup);
  return {
      [self](const run_all&) { return run(self); },
      [self](const stop_msg& m) {
        if (m.kind == stop_kind::interrupt)
          self->state.interrupted = true;
        tell_all(self, m);
      },
      [self](tick_atom) { check_budgets(self); },
  };
}

} // namespace

campaign_actor spawn_campaign(caf::actor_system& sys, campaign_setup setup) {
  return sys.spawn(campaign, std::move(setup));
}

} // namespace ks::actors
