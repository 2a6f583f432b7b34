// The supervisor of one task: its tree search, from the reference to the winner.
//
// Start: the store's snapshot of the task rebuilds the tree (search_tree::from_records) and
// the short-term memory; a task already done (or failed) is reported at once. Then the
// reference (node 0) is compiled, verified against itself (on any idle GPU) and timed, on the
// home the dispatcher suggests (least load first, with the verification's time as the task's
// load; choose_home) when that card is idle, else on another idle one: the card that times the
// reference is the task's home, kept in the task's state for a resume. It is accepted once
// timed; on a resume it is only compiled again (a cache hit), since every verification compares
// with it. Every node that was not final when the last run died goes on from the last state
// the store holds, by the table the forward path reads too (engine::next_action;
// supervisor_branch.cpp), so no final node is lost or redone.
//
// The task's phase (engine::task_phase, kept in its state) is searching from the start, finals
// once the search stopped with two finalists or more, then done or failed; a task that ended
// stays as it ended when the campaign is run again. Every reply reaches the supervisor through
// request_then, which drops it once the supervisor has reported.
//
// The step function (next_step) runs whenever no work is in flight: the stop rule, then the
// policy's choice of a parent, then the planner's K plans, then K branches in parallel. It
// waits for all K branches of an expansion to settle before the next: the stop rule counts
// settled expansions, and the other tasks of the campaign keep the GPUs busy meanwhile.
// Every transition is written to the store, and its ack awaited, before the next step starts.
//
// Stopping: the stop rule (or a campaign budget) starts no new expansion; branches in flight
// finish and are judged; then the finals (supervisor_finals.cpp) re-time the finalists
// interleaved and the judge picks the winner. An interrupt (Ctrl-C) starts no new step at all:
// each job in flight finishes and its result is written, then the supervisor reports; the
// nodes it leaves unfinished are redone on resume, and a task interrupted in its finals runs
// them again.

#include "actors/actor_error.hpp"
#include "actors/supervisor_state.hpp"
#include "engine/skill_stats_key.hpp"
#include "gpu/compiler.hpp"
#include "gpu/content_hash.hpp"
#include "report/console.hpp"

#include <caf/actor_system.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace ks::actors {

namespace console = report::console;

namespace {

std::string first_line(const std::string& text) {
  auto start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos)
    return {};
  return text.substr(start, text.find('\n', start) - start);
}

} // namespace

std::string source_hash(const std::string& text) {
  return gpu::source_hash(text);
}

// -- helpers -----------------------------------------------------------------------------------

std::string supervisor_state::describe_error(const caf::error& e) {
  return describe(e);
}

const std::string& supervisor_state::source_of(const std::string& hash) const {
  static const std::string none;
  auto i = sources.find(hash);
  return i == sources.end() ? none : i->second;
}

int32_t supervisor_state::timed_gpu(engine::node_id id) const {
  auto d = details.find(id);
  return d != details.end() && d->second.timed_gpu >= 0 ? d->second.timed_gpu : setup.home_gpu;
}

std::vector<int32_t> supervisor_state::timed_cards(engine::node_id id) const {
  std::vector<int32_t> cards{timed_gpu(id)};
  auto add = [&](int32_t g) {
    if (std::find(cards.begin(), cards.end(), g) == cards.end())
      cards.push_back(g);
  };
  for (const auto& [key, timing] : card_times)
    if (key.first == id)
      add(key.second);
  for (const auto& [key, waiting] : retimings)
    if (key.first == id)
      add(key.second);
  return cards;
}

void supervisor_state::spread_parent(engine::node_id parent, size_t children) {
  for (int32_t g : engine::spread_cards(
           timed_cards(parent), static_cast<int64_t>(setup.gpus.size()),
           static_cast<int64_t>(children), tree.node(parent).time, setup.spread_min_median_ms))
    retime_then(parent, g, [] {});
}

bool supervisor_state::card_available(engine::node_id id) const {
  if (id == 0 || setup.gpus.empty())
    return true;
  int32_t card = timed_gpu(id);
  return card >= 0 && static_cast<size_t>(card) < setup.gpus.size();
}

bench_job supervisor_state::bench_job_for(engine::bench_purpose purpose, bench_kind kind,
                                          std::string kernel, std::string label,
                                          engine::placement_facts facts) const {
  facts.home = setup.home_gpu;
  engine::placement where = engine::place(purpose, facts);
  bench_job job{kind, setup.task, reference_so, std::move(kernel), where.pinned, std::move(label)};
  job.prefer = std::move(where.prefer);
  job.priority = job_priority();
  job.purpose = purpose;
  return job;
}

const engine::timing* supervisor_state::time_on(engine::node_id id, int32_t gpu) const {
  if (!tree.contains(id))
    return nullptr;
  if (timed_gpu(id) == gpu && tree.node(id).time.measured())
    return &tree.node(id).time;
  auto t = card_times.find({id, gpu});
  return t == card_times.end() ? nullptr : &t->second;
}

double supervisor_state::floor_on(int32_t gpu) const {
  if (gpu < 0 || static_cast<size_t>(gpu) >= setup.gpus.size())
    return floor_ms;
  const gpu_peaks& card = setup.gpus[static_cast<size_t>(gpu)];
  return engine::roofline_floor_ms(subject->cost, card.peak_gbps, card.peak_gflops);
}

double supervisor_state::job_priority() const {
  return reference_load_ms > 0 ? reference_load_ms : state.home_load_ms;
}

std::string supervisor_state::label(engine::node_id id) const {
  return setup.task + "#" + std::to_string(id);
}

void supervisor_state::warn(const std::string& what) const {
  console::line(console::stream::err, "kernelskill: " + setup.task + ": " + what);
}

bool supervisor_state::update(const engine::node_record& record) {
  if (auto ok = tree.update(record); !ok) {
    fail_task("the search tree refused node " + std::to_string(record.id) + ": " +
              ok.error().message());
    return false;
  }
  return true;
}

put_node supervisor_state::node_write(engine::node_id id) {
  return put_node{setup.task, tree.node(id), details[id]};
}

void supervisor_state::put_node_then(engine::node_id id, std::function<void()> next) {
  store_then(node_write(id), std::move(next));
}

// -- start and resume --------------------------------------------------------------------------

caf::result<task_report> supervisor_state::start() {
  if (life != supervisor_life::waiting)
    return make_actor_error(actor_errc::internal, setup.task + " is already running");
  life = supervisor_life::running;
  auto t = setup.tasks->find(setup.task);
  if (t == setup.tasks->end())
    return make_actor_error(actor_errc::task, "no task named '" + setup.task + "'");
  subject = &t->second;
  floor_ms = engine::roofline_floor_ms(subject->cost, setup.peak_gbps, setup.peak_gflops);
  auto made = engine::make_policy(setup.policy, setup.policy_options);
  if (!made)
    return to_caf_error(actor_errc::task, made.error());
  policy = std::move(*made);
  auto reference = engine::read_reference(*subject);
  if (!reference)
    return make_actor_error(actor_errc::task, reference.error().message());
  reference_hash = source_hash(*reference);
  sources[reference_hash] = std::move(*reference);
  state.name = setup.task;
  state.manifest = subject->manifest_path.string();
  // Skill statistics are kept per GPU name: never an empty one.
  if (setup.gpu_name.empty())
    setup.gpu_name = "unknown GPU";
  promise = self->make_response_promise<task_report>();
  base::step_timer step("load");
  request_then(
      setup.team.store, get_task{setup.task},
      [this, step](task_snapshot& snapshot) {
        step.done(perf);
        restore(snapshot);
      },
      [this](caf::error& e) { fail_task("cannot read the task from the store: " + describe(e)); });
  return promise;
}

void supervisor_state::restore(task_snapshot& snapshot) {
  if (snapshot.has_state) {
    state = std::move(snapshot.state);
    state.name = setup.task;
    state.manifest = subject->manifest_path.string();
  }
  if (!snapshot.nodes.empty()) {
    auto rebuilt = engine::search_tree::from_records(std::move(snapshot.nodes));
    if (!rebuilt) {
      fail_task("the stored tree is inconsistent: " + rebuilt.error().message());
      return;
    }
    tree = std::move(*rebuilt);
    memory = engine::short_term_memory(std::move(snapshot.outcomes), std::move(snapshot.repairs));
    sources.merge(snapshot.sources);
    details = std::move(snapshot.details);
  }
  // A task that ended in an earlier run stays as it ended.
  if (engine::is_end(state.phase)) {
    finish();
    return;
  }
  state.phase = engine::task_phase::searching;
  if (floor_ms > 0)
    state.roofline_floor_ms = floor_ms;
  state.cost_flops = subject->cost.flops;
  state.cost_bytes = subject->cost.bytes;
  engine::node_record root = tree.root();
  if (root.source_hash.empty() || root.status == engine::node_status::planned) {
    root.source_hash = reference_hash;
    root.status = engine::node_status::coded;
    if (!update(root))
      return;
  }
  put_batch batch;
  batch.sources.push_back(put_source{reference_hash, sources[reference_hash]});
  batch.tasks.push_back(put_task{state});
  store_then(std::move(batch), [this] { resume(); });
}

void supervisor_state::resume() {
  const engine::node_record& root = tree.root();
  // The reference first: nothing can be compared before it is timed.
  if (!engine::is_final(root)) {
    resume_branch(0);
    return;
  }
  if (root.status != engine::node_status::accepted) {
    next_step();
    return;
  }
  // The task's home card: the card the reference is timed on, whose scale the finals' times
  // are put on (engine/bench_placement.hpp says where every other job runs).
  choose_home([this] { compile_reference(); });
}

void supervisor_state::compile_reference() {
  // Every verification compares with the reference's shared object: build it (a cache hit).
  base::step_timer step("reference/compile");
  request_then(
      setup.team.compiler, compile_job{label(0), source_of(tree.root().source_hash)},
      [this, step](compile_done& r) {
        step.done(perf);
        // The host cannot compile now (a full disk): no verdict on the reference, and the task
        // is left as it was for the next resume.
        if (r.host_fault) {
          host_fault_stop = "a fault of the host, not of the task: compiling the reference: " +
                            first_line(r.diagnostics);
          warn(*host_fault_stop + "; stopping");
          interrupted = true;
          finish();
          return;
        }
        if (!r.ok) {
          auto t = setup.tasks->find(setup.task);
          std::string name =
              t != setup.tasks->end() ? engine::reference_name(t->second) : "the reference";
          fail_task("the reference no longer compiles: " +
                    first_line(gpu::name_source_in_diagnostics(r.diagnostics, name)));
          return;
        }
        reference_so = r.shared_object;
        usages[0] = r.usage;
        for (const engine::node_record& n : tree.nodes())
          if (n.id != 0 && !engine::is_final(n))
            resume_branch(n.id);
        next_step();
      },
      [this](caf::error& e) { fail_task("cannot compile the reference: " + describe(e)); });
}

// -- the home GPU ------------------------------------------------------------------------------

void supervisor_state::set_home(int32_t gpu) {
  setup.home_gpu = gpu;
  if (gpu >= 0 && static_cast<size_t>(gpu) < setup.gpus.size()) {
    const gpu_peaks& home = setup.gpus[static_cast<size_t>(gpu)];
    setup.gpu_name = home.name.empty() ? "unknown GPU" : home.name;
    setup.peak_gbps = home.peak_gbps;
    setup.peak_gflops = home.peak_gflops;
  }
  floor_ms = engine::roofline_floor_ms(subject->cost, setup.peak_gbps, setup.peak_gflops);
  if (floor_ms > 0)
    state.roofline_floor_ms = floor_ms;
  state.cost_flops = subject->cost.flops;
  state.cost_bytes = subject->cost.bytes;
  state.home_gpu = gpu;
  home_chosen = true;
}

void supervisor_state::choose_home(std::function<void()> next) {
  if (home_chosen) {
    next();
    return;
  }
  int32_t kept = state.home_gpu;
  bool kept_valid =
      kept >= 0 && (setup.gpus.empty() || static_cast<size_t>(kept) < setup.gpus.size());
  // A reference timed with no home kept (or on a GPU this run lacks) keeps the static home.
  int32_t wanted = kept_valid ? kept : engine::is_final(tree.root()) ? setup.home_gpu : -1;
  double load = reference_load_ms > 0 ? reference_load_ms : state.home_load_ms;
  if (setup.team.homes == nullptr) {
    set_home(wanted >= 0 ? wanted : setup.home_gpu);
    state.home_load_ms = load;
    next();
    return;
  }
  request_then(
      setup.team.homes, assign_home{setup.task, load, wanted},
      [this, load, next](int32_t& gpu) {
        bool changed = gpu != state.home_gpu;
        set_home(gpu);
        state.home_load_ms = load;
        // The home is written before the reference is timed there: a resume keeps it.
        if (changed)
          store_then(put_task{state}, next);
        else
          next();
      },
      [this, next](caf::error& e) {
        warn("cannot choose a home GPU (" + describe(e) + "); timing on GPU " +
             std::to_string(setup.home_gpu));
        set_home(setup.home_gpu);
        store_then(put_task{state}, next);
      });
}

// -- the step function -------------------------------------------------------------------------

void supervisor_state::next_step() {
  if (!between_steps())
    return;
  // An interrupt starts nothing new: what ran has been written, the rest is for the resume.
  if (interrupted) {
    finish();
    return;
  }
  // The stop rule first: a stopped search expands nothing and goes to its finals.
  engine::stop_decision decision = engine::check_stop(tree, setup.limits);
  if (!decision.stop() && budget_stop)
    decision = engine::stop_decision{engine::stop_reason::budget, *budget_stop};
  if (decision.stop()) {
    finals(decision);
    return;
  }
  // The policy picks the parent; the stop rule already checked that one exists.
  std::optional<engine::node_id> parent = policy->select(tree, setup.limits);
  int64_t count = engine::branches_allowed(tree, setup.limits);
  if (!parent || count == 0) {
    finals(
        engine::stop_decision{parent ? engine::stop_reason::budget : engine::stop_reason::exhausted,
                              "nothing left to expand"});
    return;
  }
  // The planner proposes K plans not tried on that parent; each becomes a branch.
  plan(*parent, count);
}

void supervisor_state::plan(engine::node_id parent, int64_t count) {
  planning = true;
  const engine::node_record& p = tree.node(parent);
  // The planner works from the parent's bottleneck: profile it (as the config asks) and
  // diagnose it first if this run has not.
  if (wants_profile(parent, profile_moment::expanding)) {
    profile_then(parent, [this, parent, count] { plan(parent, count); });
    return;
  }
  if (diagnoses.count(parent) == 0 && p.time.measured()) {
    analyze_then(parent, [this, parent, count] { plan(parent, count); });
    return;
  }
  // A kernel at the roofline has nothing left to gain: its children would only add noise.
  if (std::optional<std::string> why = roofline_reached(parent)) {
    planning = false;
    exhaust(parent, *why);
    return;
  }
  // Long-term memory's statistics on this family and GPU rank the skills the planner sees (a
  // graph task's family is its main node's: the search works on that node).
  if (setup.team.store == nullptr) {
    ask_planner(parent, count, {});
    return;
  }
  request_then(
      setup.team.store, get_skill_stats{engine::skill_stats_key(*subject), setup.arch},
      [this, parent, count](skill_stats_reply& r) { ask_planner(parent, count, std::move(r)); },
      [this, parent, count](caf::error& e) {
        warn("cannot read the skill statistics (" + describe(e) + "); planning without");
        ask_planner(parent, count, {});
      });
}

void supervisor_state::ask_planner(engine::node_id parent, int64_t count, skill_stats_reply stats) {
  const engine::node_record& p = tree.node(parent);
  plan_request request;
  request.task = setup.task;
  request.parent = parent;
  request.parent_lineage = tree.lineage(parent).value();
  request.parent_source = source_of(p.source_hash);
  request.reference_source = source_of(reference_hash);
  request.tried = memory.tried_plans(parent);
  // The branch's short-term memory: what was tried on each ancestor, root first.
  std::vector<engine::node_id> ancestors = tree.lineage_ids(parent).value();
  for (engine::node_id ancestor : ancestors)
    if (ancestor != parent)
      request.branch.push_back({ancestor, memory.tried_plans(ancestor)});
  for (const engine::node_record& n : tree.nodes())
    request.in_tree.push_back(n.plan);
  request.diagnosis = diagnoses[parent];
  request.stats = std::move(stats.stats);
  request.parent_fraction_of_roofline = p.fraction_of_roofline;
  request.count = count;
  // A language model is told what the parent measured, where, against which peaks.
  request.parent_time = p.time;
  request.gpu_name = setup.gpu_name;
  request.peak_gbps = setup.peak_gbps;
  request.peak_gflops = setup.peak_gflops;
  base::step_timer step("expansion/plan");
  request_then(
      member(setup.team.planners), std::move(request),
      [this, parent, count, step](plan_reply& r) {
        step.done(perf);
        planning = false;
        plan_failures = 0;
        if (interrupted) {
          next_step();
          return;
        }
        if (static_cast<int64_t>(r.plans.size()) > count)
          r.plans.resize(static_cast<size_t>(count));
        expand(parent, std::move(r.plans));
      },
      [this, parent, count](caf::error& e) {
        // A model request cancelled by Ctrl-C is no failure of the parent; a spent model
        // budget ends the search, as any campaign budget does: the finals run.
        if (is_interrupted(e) || is(e, actor_errc::budget)) {
          planning = false;
          plan_failures = 0;
          if (is_interrupted(e))
            interrupted = true;
          else if (!budget_stop)
            budget_stop = describe(e);
          next_step();
          return;
        }
        // A backend that cannot answer for now (rate limited, unavailable) is asked again
        // later; the parent is given up only when that keeps happening.
        bool transient = is(e, actor_errc::transient);
        if (transient && plan_failures < setup.plan_retries && !interrupted) {
          double delay = setup.plan_retry_s * static_cast<double>(int64_t{1} << plan_failures);
          ++plan_failures;
          char after[32];
          std::snprintf(after, sizeof after, "%.3g s", delay);
          warn("the planner cannot answer now (" + describe(e) + "); asking again in " + after);
          plan_later = std::make_pair(parent, count);
          self->delayed_send(self, std::chrono::milliseconds(static_cast<int64_t>(1000 * delay)),
                             retry_plan{});
          return;
        }
        planning = false;
        plan_failures = 0;
        exhaust(parent, "the planner failed: " + describe(e));
      });
}

void supervisor_state::retry_planning() {
  if (life == supervisor_life::reported || !plan_later)
    return;
  auto [parent, count] = *plan_later;
  plan_later.reset();
  if (interrupted || budget_stop) {
    planning = false;
    next_step();
    return;
  }
  plan(parent, count);
}

void supervisor_state::expand(engine::node_id parent, std::vector<engine::plan> plans) {
  // Short-term memory has the last word: no plan twice on one parent, whatever the planner says.
  std::vector<engine::plan> fresh;
  for (engine::plan& p : plans) {
    if (p.skill.empty() || memory.was_tried(parent, p))
      continue;
    bool repeated = false;
    for (const engine::plan& q : fresh)
      repeated = repeated || engine::same_plan(p, q);
    if (!repeated)
      fresh.push_back(std::move(p));
  }
  if (fresh.empty()) {
    exhaust(parent, {});
    return;
  }
  auto ids = tree.expand(parent, fresh);
  if (!ids) {
    exhaust(parent, "the tree refused the plans: " + ids.error().message());
    return;
  }
  // A plan counts as tried from the moment its branch starts (short_term_memory.hpp). The
  // children and their pending outcomes are one write: a resumed tree never holds half an
  // expansion.
  put_batch batch;
  for (size_t i = 0; i < ids->size(); ++i) {
    engine::node_id id = (*ids)[i];
    engine::plan_outcome pending{fresh[i], id, engine::outcome_kind::pending, {}, 0};
    memory.record_outcome(parent, pending);
    batch.nodes.push_back(node_write(id));
    batch.outcomes.push_back(put_outcome{setup.task, parent, std::move(pending)});
    branches[id];
  }
  store_then(std::move(batch), [this, parent, ids = *ids] {
    for (engine::node_id id : ids)
      start_branch(id);
    if (!interrupted)
      spread_parent(parent, ids.size());
  });
}

void supervisor_state::exhaust(engine::node_id parent, const std::string& why) {
  if (!why.empty())
    warn(why + "; node " + std::to_string(parent) + " is not expanded again");
  if (auto ok = tree.mark_exhausted(parent); !ok) {
    fail_task(ok.error().message());
    return;
  }
  put_node_then(parent, [this] { next_step(); });
}

// -- the end -----------------------------------------------------------------------------------

void supervisor_state::stop(const stop_msg& m) {
  if (m.kind == stop_kind::budget) {
    if (!budget_stop)
      budget_stop = m.reason;
    return;
  }
  interrupted = true;
  // A node waiting to retry a step the host failed waits no more: it is left for the resume.
  for (engine::node_id id : waiting_retry)
    branches.erase(id);
  waiting_retry.clear();
  // With nothing in flight no reply will come to take the next step: take it now. The finals
  // notice the interrupt at their next slot.
  if (between_steps() && state.phase != engine::task_phase::finals)
    next_step();
}

task_progress supervisor_state::progress() const {
  task_progress p;
  p.name = setup.task;
  p.phase = state.phase;
  p.nodes = tree.size();
  p.in_flight = static_cast<int64_t>(branches.size());
  // Candidates by status, for the progress display: the reference is not a candidate.
  auto counts = tree.counts();
  p.by_status.assign(counts.begin(), counts.end());
  if (tree.size() > 0)
    --p.by_status[static_cast<size_t>(tree.root().status)];
  p.budget = setup.limits.candidate_budget;
  if (auto best = tree.best_accepted()) {
    p.best_speedup = tree.speedup(*best);
    p.best_fraction = tree.node(*best).fraction_of_roofline;
  }
  return p;
}

task_report supervisor_state::report() const {
  task_report r;
  r.name = setup.task;
  r.phase = state.phase;
  r.stop_reason = state.stop_reason;
  r.stop_text = state.stop_text;
  if (interrupted && !engine::is_end(state.phase))
    r.stop_reason = "interrupted";
  if (host_fault_stop && !engine::is_end(state.phase)) {
    r.stop_reason = "host_fault";
    r.stop_text = *host_fault_stop;
  }
  r.nodes = tree.size();
  r.winner = state.winner;
  // A final's reference time comes from its rounds, beside the winner's (declare_winner).
  r.reference_ms = state.reference_median_ms > 0 && state.winner != engine::no_node
                       ? state.reference_median_ms
                       : tree.root().time.median_ms;
  if (state.winner != engine::no_node && state.winner_median_ms > 0)
    r.best_ms = state.winner_median_ms;
  else if (auto best = tree.best_accepted())
    r.best_ms = tree.node(*best).time.median_ms;
  std::optional<engine::node_id> best_node =
      state.winner != engine::no_node ? std::optional(state.winner) : tree.best_accepted();
  if (best_node && r.best_ms > 0 && tree.node(*best_node).time.measured()) {
    const engine::timing& t = tree.node(*best_node).time;
    r.best_p10_ms = r.best_ms * std::min(1.0, t.p10_ms / t.median_ms);
  }
  if (r.reference_ms > 0 && r.best_ms > 0)
    r.speedup = r.reference_ms / r.best_ms;
  if (floor_ms > 0 && r.best_ms > 0)
    r.fraction_of_roofline = floor_ms / r.best_ms;
  r.verified = verified;
  r.timed = timed;
  r.by_status = progress().by_status;
  r.perf = perf;
  return r;
}

void supervisor_state::finish() {
  if (life == supervisor_life::reported)
    return;
  life = supervisor_life::reported;
  promise.deliver(report());
  self->quit();
}

void supervisor_state::fail_task(const std::string& why) {
  if (life == supervisor_life::reported)
    return;
  warn(why);
  state.phase = engine::task_phase::failed;
  state.stop_reason = "error";
  state.stop_text = why;
  finish();
}

// -- the actor ---------------------------------------------------------------------------------

namespace {

supervisor_actor::behavior_type supervisor(supervisor_state::pointer self, supervisor_setup setup) {
  self->state.self = self;
  self->state.setup = std::move(setup);
  return {
      [self](const run_task&) { return self->state.start(); },
      [self](const stop_msg& m) { self->state.stop(m); },
      [self](const progress_request&) { return self->state.progress(); },
      [self](const retry_plan&) { self->state.retry_planning(); },
      [self](const retry_node& m) { self->state.retry_step(m.id); },
  };
}

} // namespace

supervisor_actor spawn_supervisor(caf::actor_system& sys, supervisor_setup setup) {
  return sys.spawn(supervisor, std::move(setup));
}

} // namespace ks::actors
