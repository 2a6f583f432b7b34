// One branch of a supervisor: a node's life from its plan to the judge's verdict.
//
//   planned -> coded -> compiled -> verified -> timed -> accepted | rejected
//
// Each step writes the node's new state to the store and waits for the ack before the next
// job is sent, so a killed campaign resumes from the last state written. Which step comes next
// is one table, engine::next_action (engine/node_action.hpp), read by the forward path and by
// the resume alike: a planned node is coded again, a coded, compiled or verified one is
// compiled again from its saved source (a cache hit) and goes on from there, a timed one is
// only judged (or timed again where its card is gone). A failed step ends in a
// repair (bounded by agents.repair_rounds, each round recorded in short-term memory and the
// store) that gives a new source, or in a final failure status. The reference (node 0) takes
// the same path with its own source, is never repaired, and is accepted once timed.
//
// Stopping: after an interrupt, each step that completes is written, and then no new job
// starts (paused()): the node stays unfinished for the resume.

#include "actors/actor_error.hpp"
#include "actors/supervisor_state.hpp"
#include "engine/skill_stats_key.hpp"
#include "gpu/failure.hpp"
#include "gpu/profile_report.hpp"
#include "report/records_json.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace ks::actors {

namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

// Returns the first line of `text` that is not blank.
std::string first_line(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos)
    return {};
  return text.substr(begin, text.find('\n', begin) - begin);
}

// Failures that tell about the machine or the worker, not about the candidate: a repair of
// the source cannot help.
bool environment_failure(gpu::failure_kind kind) {
  using gpu::failure_kind;
  return kind == failure_kind::no_device || kind == failure_kind::protocol_error ||
         kind == failure_kind::out_of_memory || kind == failure_kind::cuda_error;
}

engine::node_status status_after(branch_step step, gpu::failure_kind kind) {
  using gpu::failure_kind;
  if (step == branch_step::compile)
    return engine::node_status::compile_failed;
  switch (kind) {
  case failure_kind::wrong_result:
    return engine::node_status::verified;
  case failure_kind::crash:
  case failure_kind::illegal_address:
    return engine::node_status::crashed;
  case failure_kind::timeout:
    return engine::node_status::timed_out;
  default:
    return engine::node_status::failed;
  }
}

} // namespace

// -- start -------------------------------------------------------------------------------------

void supervisor_state::start_branch(engine::node_id id) {
  if (!paused(id))
    advance(id);
}

void supervisor_state::resume_branch(engine::node_id id) {
  branches[id];
  const engine::node_record& n = tree.node(id);
  auto go_on = [this, id] {
    // Timed by a card this run does not have (resumed on fewer GPUs): the node is timed again,
    // as a node left verified would be; nothing final is redone.
    if (tree.node(id).status == engine::node_status::timed && !card_available(id)) {
      if (paused(id))
        return;
      warn(label(id) + " was timed on GPU " + std::to_string(timed_gpu(id)) +
           ", which this run does not have; timing it again");
    }
    advance(id);
  };
  // A branch killed between its node and its outcome: its plan is tried all the same.
  if (id != 0 && !memory.was_tried(n.parent, n.plan)) {
    engine::plan_outcome pending{n.plan, id, engine::outcome_kind::pending, {}, 0};
    memory.record_outcome(n.parent, pending);
    store_then(put_outcome{setup.task, n.parent, pending}, go_on);
    return;
  }
  go_on();
}

engine::node_run_state supervisor_state::run_state(engine::node_id id) const {
  engine::node_run_state run;
  run.source_known = !source_of(tree.node(id).source_hash).empty();
  auto b = branches.find(id);
  run.compiled = b != branches.end() && !b->second.shared_object.empty();
  run.card_available = card_available(id);
  return run;
}

void supervisor_state::advance(engine::node_id id) {
  switch (engine::next_action(tree.node(id), run_state(id))) {
  case engine::node_action::code:
    code(id);
    return;
  case engine::node_action::compile:
    compile(id);
    return;
  case engine::node_action::verify:
    verify(id);
    return;
  case engine::node_action::time:
    time(id);
    return;
  case engine::node_action::judge:
    judge(id);
    return;
  case engine::node_action::none:
    end_branch(id);
    return;
  }
}

bool supervisor_state::paused(engine::node_id id) {
  if (!interrupted)
    return false;
  branches.erase(id);
  next_step();
  return true;
}

void supervisor_state::end_branch(engine::node_id id) {
  branches.erase(id);
  next_step();
}

// -- code --------------------------------------------------------------------------------------

void supervisor_state::code(engine::node_id id) {
  base::step_timer step("branch/code");
  if (id == 0) {
    take_source(0, sources[reference_hash], step);
    return;
  }
  const engine::node_record& n = tree.node(id);
  code_request request{setup.task,
                       n.plan,
                       tree.lineage(id).value(),
                       source_of(tree.node(n.parent).source_hash),
                       source_of(reference_hash),
                       id};
  request_then(
      member(setup.team.coders), std::move(request),
      [this, id, step](code_reply& r) { take_source(id, std::move(r.source), step); },
      [this, id](caf::error& e) {
        // Cancelled (Ctrl-C) or refused by a spent budget: the node was never coded; it
        // stays planned, for a resume to code.
        if (is_interrupted(e) || is(e, actor_errc::budget)) {
          if (is_interrupted(e))
            interrupted = true;
          else if (!budget_stop)
            budget_stop = describe(e);
          end_branch(id);
          return;
        }
        // A model's reply that could not be used is the branch's own failure kind.
        fail_final(id, branch_failure{engine::node_status::failed,
                                      is(e, actor_errc::bad_reply) ? "bad_reply" : "agent_error",
                                      "the coder failed: " + describe(e),
                                      {},
                                      false});
      });
}

void supervisor_state::take_source(engine::node_id id, std::string text,
                                   const base::step_timer& step, put_batch with) {
  step.done(perf);
  std::string hash = source_hash(text);
  engine::node_record n = tree.node(id);
  n.source_hash = hash;
  n.status = engine::node_status::coded;
  n.disposition = engine::disposition::not_verified;
  n.failure_kind.clear();
  n.time = {};
  n.fraction_of_roofline = 0;
  if (!update(n))
    return;
  details[id] = {};
  branches[id].shared_object.clear();
  sources[hash] = std::move(text);
  // The source and the node that names it are one write.
  with.sources.push_back(put_source{hash, sources[hash]});
  with.nodes.push_back(node_write(id));
  store_then(std::move(with), [this, id] {
    if (!paused(id))
      advance(id);
  });
}

// -- compile, verify, time ---------------------------------------------------------------------

void supervisor_state::compile(engine::node_id id) {
  base::step_timer step(id == 0 ? "reference/compile" : "branch/compile");
  const std::string& text = source_of(tree.node(id).source_hash);
  request_then(
      setup.team.compiler, compile_job{label(id), text},
      [this, id, step](compile_done& r) {
        step.done(perf);
        if (r.host_fault) {
          host_fault(id, "compiling " + label(id) + ": " + first_line(r.diagnostics));
          return;
        }
        if (!r.ok) {
          failed(id, branch_step::compile,
                 r.timed_out ? gpu::failure_kind::timeout : gpu::failure_kind::compile_error,
                 r.timed_out ? "nvcc ran past its timeout" : "nvcc rejected the source",
                 std::move(r.diagnostics));
          return;
        }
        branches[id].shared_object = r.shared_object;
        shared_objects[id] = r.shared_object;
        if (id == 0)
          reference_so = r.shared_object;
        usages[id] = r.usage;
        details[id].resources_json = std::move(r.resources_json);
        // A node that passed verification, or that is timed again, goes on at once; one
        // to be verified is written as compiled first.
        if (engine::next_action(tree.node(id), run_state(id)) != engine::node_action::verify) {
          advance(id);
          return;
        }
        engine::node_record n = tree.node(id);
        n.status = engine::node_status::compiled;
        n.disposition = engine::disposition::not_verified;
        if (!update(n))
          return;
        put_node_then(id, [this, id] {
          if (!paused(id))
            advance(id);
        });
      },
      [this, id](caf::error& e) {
        fail_final(id, branch_failure{engine::node_status::compile_failed,
                                      "internal",
                                      "the compile pool failed: " + describe(e),
                                      {},
                                      false});
      });
}

void supervisor_state::verify(engine::node_id id) {
  base::step_timer step(id == 0 ? "reference/verify" : "branch/verify");
  // The reference is checked against itself: a nondeterministic reference is a broken task.
  engine::placement_facts facts;
  facts.verified_cards = verified_cards;
  bench_job job = bench_job_for(engine::bench_purpose::verify, bench_kind::verify,
                                branches[id].shared_object, label(id), std::move(facts));
  request_then(
      setup.team.bench, std::move(job),
      [this, id, step](bench_result& r) {
        step.done(perf);
        auto kind = static_cast<gpu::failure_kind>(r.failure);
        // A wrong result was verified all the same: the card computed the reference.
        if (r.ok || kind == gpu::failure_kind::wrong_result) {
          if (id != 0)
            ++verified;
          details[id].verify_json = report::verify_json(r.verify());
          if (r.gpu >= 0 && std::find(verified_cards.begin(), verified_cards.end(), r.gpu) ==
                                verified_cards.end())
            verified_cards.push_back(r.gpu);
        }
        // The reference's verification is the task's load estimate for its home GPU.
        if (id == 0 && r.ok)
          reference_load_ms = r.busy_ms;
        if (!r.ok && gpu::is_host_fault(kind)) {
          host_fault(id, "verifying " + label(id) + " on GPU " + std::to_string(r.gpu) + ": " +
                             r.message);
          return;
        }
        if (!r.ok) {
          failed(id, branch_step::verify, kind, std::move(r.message), {});
          return;
        }
        engine::node_record n = tree.node(id);
        n.status = engine::node_status::verified;
        n.disposition = engine::disposition::passed;
        if (!update(n))
          return;
        put_node_then(id, [this, id] {
          if (!paused(id))
            advance(id);
        });
      },
      [this, id](caf::error& e) { bench_lost(id, e); });
}

void supervisor_state::time(engine::node_id id) {
  // The reference is timed on the home it is the first to need: choose it now.
  if (id == 0 && !home_chosen) {
    choose_home([this] {
      if (!paused(0))
        time(0);
    });
    return;
  }
  base::step_timer step(id == 0 ? "reference/time" : "branch/time");
  // The reference preferably on the home chosen for it (the card that times it becomes the
  // home), a branch preferably where its parent's time is known; the judge compares a child
  // with its parent on the card that timed the child (judge()).
  engine::placement_facts facts;
  if (id != 0)
    facts.timed_cards = timed_cards(tree.node(id).parent);
  bench_job job = bench_job_for(
      id == 0 ? engine::bench_purpose::reference_time : engine::bench_purpose::branch_time,
      bench_kind::time, branches[id].shared_object, label(id), std::move(facts));
  request_then(
      setup.team.bench, std::move(job),
      [this, id, step](bench_result& r) {
        step.done(perf);
        if (!r.ok && gpu::is_host_fault(static_cast<gpu::failure_kind>(r.failure))) {
          host_fault(id,
                     "timing " + label(id) + " on GPU " + std::to_string(r.gpu) + ": " + r.message);
          return;
        }
        if (!r.ok) {
          failed(id, branch_step::time, static_cast<gpu::failure_kind>(r.failure),
                 std::move(r.message), {});
          return;
        }
        // A timing without a positive median is no measurement: the worker misbehaved.
        if (!(r.timing().median_ms > 0) || r.timing().trials <= 0) {
          failed(id, branch_step::time, gpu::failure_kind::protocol_error,
                 "the bench worker reported a timing without a positive median", {});
          return;
        }
        if (id != 0)
          ++timed;
        int32_t card = r.gpu < 0 ? setup.home_gpu : r.gpu;
        if (id == 0 && card != setup.home_gpu)
          set_home(card);
        double floor = floor_on(card);
        engine::node_record n = tree.node(id);
        n.status = engine::node_status::timed;
        n.time.median_ms = r.timing().median_ms;
        n.time.p10_ms = r.timing().p10_ms;
        n.time.p90_ms = r.timing().p90_ms;
        n.time.trials = r.timing().trials;
        n.time.samples_ms = r.timing().samples_ms;
        n.fraction_of_roofline = floor > 0 ? floor / r.timing().median_ms : 0;
        if (!update(n))
          return;
        details[id].timed_gpu = card;
        // Judging needs no GPU unless the parent must be re-timed on this card: it goes on
        // after an interrupt when it can (judge()). The reference's node and the home it
        // fixed are one write.
        put_batch batch;
        batch.nodes.push_back(node_write(id));
        if (id == 0)
          batch.tasks.push_back(put_task{state});
        store_then(std::move(batch), [this, id] {
          if (wants_profile(id, profile_moment::timed))
            profile_then(id, [this, id] { advance(id); });
          else
            analyze_then(id, [this, id] { advance(id); });
        });
      },
      [this, id](caf::error& e) { bench_lost(id, e); });
}

void supervisor_state::bench_lost(engine::node_id id, const caf::error& e) {
  // Without a bench nothing more can be measured: stop, and leave the node to the resume. A
  // job dropped by an interrupt is no news.
  if (!is_interrupted(e))
    warn("the bench is gone (" + describe(e) + "); stopping");
  interrupted = true;
  paused(id);
}

// -- faults of the host --------------------------------------------------------------------------

void supervisor_state::host_fault(engine::node_id id, const std::string& what) {
  // Nothing is written: the node keeps the record of its last finished step, which is where a
  // retry, or the resume, takes it up.
  if (interrupted) {
    paused(id);
    return;
  }
  int64_t& tries = host_faults[id];
  if (tries >= setup.host_fault_retries) {
    std::string text = "a fault of the host, not of the candidate, persists after " +
                       std::to_string(tries) + (tries == 1 ? " retry" : " retries") + ": " + what;
    if (!host_fault_stop)
      host_fault_stop = text;
    warn(text + "; stopping (" + label(id) + " is left for the resume)");
    interrupted = true;
    // Nodes waiting to retry a step are left for the resume too: the stop does not wait.
    for (engine::node_id waiting : waiting_retry)
      branches.erase(waiting);
    waiting_retry.clear();
    paused(id);
    return;
  }
  // Doubling, at most ten minutes.
  double delay =
      std::min(600.0, setup.host_fault_retry_s *
                          static_cast<double>(int64_t{1} << std::min<int64_t>(tries, 20)));
  ++tries;
  char after[32];
  std::snprintf(after, sizeof after, "%.3g s", delay);
  warn("a fault of the host, not of the candidate: " + what + "; running the step again in " +
       after + " (" + std::to_string(tries) + " of " + std::to_string(setup.host_fault_retries) +
       ")");
  waiting_retry.insert(id);
  self->delayed_send(self, std::chrono::milliseconds(static_cast<int64_t>(1000 * delay)),
                     retry_node{id});
}

void supervisor_state::retry_step(engine::node_id id) {
  // Dropped when an interrupt ended the wait (stop()) or the task has reported.
  if (life == supervisor_life::reported || waiting_retry.erase(id) == 0)
    return;
  if (!paused(id))
    advance(id);
}

// -- judge -------------------------------------------------------------------------------------

// Times node `id` on GPU `gpu` (a card other than its record's) and runs `next` once its time
// there is known; calls for one (node, card) share one timing. A failed re-timing leaves the
// record's time in its place, with a warning: the judge then compares across cards. A lost
// bench stops the task, and `next` finds no time and pauses its branch.
void supervisor_state::retime_then(engine::node_id id, int32_t gpu, std::function<void()> next) {
  auto key = std::make_pair(id, gpu);
  std::vector<std::function<void()>>& waiting = retimings[key];
  waiting.push_back(std::move(next));
  if (waiting.size() > 1)
    return;
  auto wake = [this, key] {
    std::vector<std::function<void()>> ready = std::move(retimings[key]);
    retimings.erase(key);
    for (auto& f : ready)
      if (life != supervisor_life::reported)
        f();
  };
  auto timed = [this, id, gpu, key, wake](const std::string& object) {
    base::step_timer step("branch/re-time parent");
    engine::placement_facts facts;
    facts.card = gpu;
    bench_job job = bench_job_for(engine::bench_purpose::retime, bench_kind::time, object,
                                  label(id) + " (re-timed on GPU " + std::to_string(gpu) + ")",
                                  std::move(facts));
    request_then(
        setup.team.bench, std::move(job),
        [this, id, key, wake, step](bench_result& r) {
          step.done(perf);
          if (r.ok && r.timing().median_ms > 0 && r.timing().trials > 0) {
            card_times[key] =
                engine::timing{r.timing().median_ms, r.timing().p10_ms, r.timing().p90_ms,
                               r.timing().trials, r.timing().samples_ms};
          } else {
            warn("re-timing " + label(id) + " on GPU " + std::to_string(key.second) + " failed (" +
                 r.message +
                 "); its children there are judged against its "
                 "time on GPU " +
                 std::to_string(timed_gpu(id)));
            card_times[key] = tree.node(id).time;
          }
          wake();
        },
        [this, wake](caf::error& e) {
          if (!is_interrupted(e))
            warn("the bench is gone (" + describe(e) + "); stopping");
          interrupted = true;
          wake();
        });
  };
  auto known = shared_objects.find(id);
  if (known != shared_objects.end() && !known->second.empty()) {
    timed(known->second);
    return;
  }
  // Not compiled this run (a resumed parent): compile it again, a cache hit.
  request_then(
      setup.team.compiler, compile_job{label(id), source_of(tree.node(id).source_hash)},
      [this, id, key, timed, wake](compile_done& r) {
        if (r.ok) {
          shared_objects[id] = r.shared_object;
          timed(r.shared_object);
          return;
        }
        warn("cannot compile " + label(id) +
             " again to re-time it; its children are judged "
             "against its time on GPU " +
             std::to_string(timed_gpu(id)));
        card_times[key] = tree.node(id).time;
        wake();
      },
      [this](caf::error& e) { fail_task("the compile pool failed: " + describe(e)); });
}

void supervisor_state::analyze_then(engine::node_id id, std::function<void()> next) {
  const engine::node_record& n = tree.node(id);
  if (!n.time.measured() || setup.team.analyst == nullptr) {
    diagnoses[id];
    next();
    return;
  }
  analyze_request request{setup.task,      n.time.median_ms,  usages[id],
                          setup.peak_gbps, setup.peak_gflops, details[id].profile_json};
  request_then(
      setup.team.analyst, std::move(request),
      [this, id, next](analysis& a) {
        // Kept beside the node's record (results.json), written with it.
        if (a.diagnosis.diagnosed)
          details[id].diagnosis_json = gpu::encode_diagnosis(a.diagnosis);
        diagnoses[id] = std::move(a.diagnosis);
        next();
      },
      [this, id, next](caf::error&) {
        diagnoses[id];
        next();
      });
}

void supervisor_state::judge(engine::node_id id) {
  if (id == 0) {
    // The reference is the first yardstick: accepted once timed.
    engine::node_record root = tree.root();
    root.status = engine::node_status::accepted;
    if (!update(root))
      return;
    state.reference_median_ms = root.time.median_ms;
    put_batch batch;
    batch.nodes.push_back(node_write(0));
    batch.tasks.push_back(put_task{state});
    store_then(std::move(batch), [this] { end_branch(0); });
    return;
  }
  const engine::node_record& n = tree.node(id);
  // A child is compared with its parent on the card that timed it (one this run has:
  // engine::next_action times it again otherwise): re-time the parent there first if this run
  // has not.
  int32_t card = timed_gpu(id);
  const engine::timing* parent_time = time_on(n.parent, card);
  if (parent_time == nullptr) {
    if (!paused(id))
      retime_then(n.parent, card, [this, id] { judge(id); });
    return;
  }
  base::step_timer step("branch/judge");
  judge_request request{*parent_time, n.time, setup.limits.torch_ms};
  request_then(
      setup.team.judge, std::move(request),
      [this, id, step](judge_reply& v) {
        step.done(perf);
        engine::node_record n = tree.node(id);
        n.status = v.accepted ? engine::node_status::accepted : engine::node_status::rejected;
        if (!update(n))
          return;
        details[id].message = v.reason;
        auto outcome = v.accepted ? engine::outcome_kind::accepted : engine::outcome_kind::rejected;
        if (v.accepted && wants_profile(id, profile_moment::accepted)) {
          double gain = v.gain;
          profile_then(id, [this, id, outcome, gain] { settle(id, outcome, gain); });
          return;
        }
        settle(id, outcome, v.gain);
      },
      [this](caf::error& e) { fail_task("the judge failed: " + describe(e)); });
}

// Writes a branch's verdict in one batch: the node, its outcome on the parent and the try of
// its skill; then the branch ends.
void supervisor_state::settle(engine::node_id id, engine::outcome_kind outcome, double gain) {
  const engine::node_record& n = tree.node(id);
  engine::plan_outcome o{n.plan, id, outcome, n.failure_kind, gain};
  memory.record_outcome(n.parent, o);
  put_batch batch;
  batch.nodes.push_back(node_write(id));
  batch.outcomes.push_back(put_outcome{setup.task, n.parent, std::move(o)});
  // The try as long-term memory counts it: its genotype and what came of it, on the family
  // of the search target (a graph task's main node) and its shape class.
  const std::string family = engine::skill_stats_key(*subject);
  engine::skill_try attempt;
  attempt.skill = n.plan.skill;
  attempt.skill_version = n.plan.skill_version;
  attempt.template_name = n.plan.template_name;
  attempt.params = n.plan.params;
  attempt.family = family;
  attempt.arch = setup.arch.empty() ? "unknown" : setup.arch;
  attempt.task = setup.task;
  attempt.node = id;
  attempt.parent = n.parent;
  attempt.outcome = outcome;
  attempt.failure_kind = n.failure_kind;
  attempt.gain = gain;
  attempt.reference_speedup = tree.speedup(id);
  attempt.at = utc_now();
  batch.skills.push_back(put_skill_result{n.plan.skill, family, setup.gpu_name,
                                          outcome == engine::outcome_kind::accepted, gain,
                                          std::move(attempt)});
  store_then(std::move(batch), [this, id] { end_branch(id); });
}

// -- failures and repairs ----------------------------------------------------------------------

void supervisor_state::failed(engine::node_id id, branch_step step, gpu::failure_kind kind,
                              std::string message, std::string diagnostics) {
  branch_failure f;
  f.status = status_after(step, kind);
  f.kind = gpu::to_string(kind);
  f.message = std::move(message);
  f.diagnostics = std::move(diagnostics);
  // A compile that ran out of time says more about the machine's load than about the source.
  bool timed_out_compile = step == branch_step::compile && kind == gpu::failure_kind::timeout;
  f.repairable = id != 0 && !environment_failure(kind) && !timed_out_compile &&
                 !setup.team.repairers.empty() &&
                 static_cast<int64_t>(memory.repairs(id).size()) < setup.repair_rounds;
  if (f.repairable && !interrupted)
    repair(id, std::move(f));
  else
    fail_final(id, std::move(f));
}

void supervisor_state::repair(engine::node_id id, branch_failure failure) {
  base::step_timer step("branch/repair");
  const engine::node_record& n = tree.node(id);
  fix_request request{setup.task,
                      n.plan,
                      source_of(n.source_hash),
                      failure.kind,
                      failure.diagnostics.empty() ? failure.message : failure.diagnostics,
                      memory.repairs(id),
                      id};
  request_then(
      member(setup.team.repairers), std::move(request),
      [this, id, step, failure](fix_reply& r) {
        if (r.gave_up || r.source.empty()) {
          branch_failure f = failure;
          if (!r.diagnosis.empty())
            f.message += "\nrepairer: " + r.diagnosis;
          fail_final(id, std::move(f));
          return;
        }
        const std::string failing = tree.node(id).source_hash;
        std::string hash = source_hash(r.source);
        engine::repair_round round{0,
                                   failure.diagnostics.empty() ? failure.message
                                                               : failure.diagnostics,
                                   std::move(r.diagnosis),
                                   std::move(r.fix_summary),
                                   hash,
                                   failing};
        if (std::optional<int64_t> repeat =
                engine::repeated_fix(memory.repairs(id), failing, hash)) {
          // A source that already failed on this branch is not compiled again: the round is
          // kept (the next prompt says it was refused) and counts against the rounds.
          std::string what = *repeat == 0
                                 ? std::string("a source that already failed on this branch")
                                 : "the source of round " + std::to_string(*repeat) + "'s fix";
          round.fix_summary =
              "refused unseen: it returned " + what +
              (round.fix_summary.empty() ? "" : " (it said: " + round.fix_summary + ")");
          round.round = memory.record_repair(id, round);
          put_batch refused;
          refused.repairs.push_back(put_repair{setup.task, id, round});
          store_then(std::move(refused), [this, id, failure, what] {
            if (!interrupted &&
                static_cast<int64_t>(memory.repairs(id).size()) < setup.repair_rounds) {
              repair(id, failure);
              return;
            }
            branch_failure f = failure;
            f.message += "\nrepairer: its last fix returned " + what + "; no repair round is left";
            fail_final(id, std::move(f));
          });
          return;
        }
        round.round = memory.record_repair(id, round);
        // The round and the fixed source are one write.
        put_batch with;
        with.repairs.push_back(put_repair{setup.task, id, std::move(round)});
        take_source(id, std::move(r.source), step, std::move(with));
      },
      [this, id, failure](caf::error& e) {
        // Cancelled by Ctrl-C: the node keeps its state for the resume to repair again.
        if (is_interrupted(e)) {
          interrupted = true;
          paused(id);
          return;
        }
        branch_failure f = failure;
        f.message += "\nthe repairer failed: " + describe(e);
        fail_final(id, std::move(f));
      });
}

void supervisor_state::fail_final(engine::node_id id, branch_failure failure) {
  engine::node_record n = tree.node(id);
  n.status = failure.status;
  n.failure_kind = failure.kind;
  if (n.status == engine::node_status::verified)
    n.disposition = engine::disposition::incorrect;
  if (!update(n))
    return;
  details[id].message = std::move(failure.message);
  details[id].diagnostics = std::move(failure.diagnostics);
  if (id == 0) {
    warn("the reference failed (" + failure.kind + "): " + details[0].message);
    put_node_then(0, [this] { end_branch(0); });
    return;
  }
  settle(id, engine::outcome_kind::failed, 0);
}

} // namespace ks::actors
