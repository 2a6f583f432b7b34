#pragma once

// The state of a supervisor, shared by the files that implement its steps:
// supervisor_actor.cpp (start, resume, the step function, reports), supervisor_branch.cpp (one
// branch: code, compile, verify, time, judge, repair) and supervisor_finals.cpp (the finals).
// Private to actors/: only those three files include it.

#include "actors/messages.hpp"
#include "actors/supervisor_actor.hpp"
#include "base/step_timer.hpp"
#include "engine/bench_placement.hpp"
#include "engine/diagnosis.hpp"
#include "engine/judge.hpp"
#include "engine/node_action.hpp"
#include "engine/search_policy.hpp"
#include "engine/search_tree.hpp"
#include "engine/short_term_memory.hpp"
#include "engine/stop_rule.hpp"
#include "engine/task.hpp"
#include "memory/store.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ks::actors {

/// Holds what a branch in flight needs beyond its node record.
struct branch_state {
  std::string shared_object; ///< built this run from the node's source; empty until then
};

/// Names the step of a branch that failed: where a failure happens decides the node's status.
enum class branch_step { compile, verify, time };

/// Names the moments a node may be profiled at (supervisor_profile.cpp, wants_profile).
enum class profile_moment { timed, accepted, expanding };

/// Holds why a branch failed, as its node will record it.
struct branch_failure {
  engine::node_status status = engine::node_status::failed;
  std::string kind; ///< gpu::failure_kind's name, or "agent_error"
  std::string message;
  std::string diagnostics; ///< the compiler's, verbatim
  bool repairable = false;
};

/// Finals in progress: the finalists, their shared objects, the interleaved schedule (round r
/// is slots r*n .. r*n+n-1 of it) and the samples so far. Each round is a block timed on one
/// GPU, rounds on as many GPUs as there are; a GPU left without a round takes the last slots of
/// a round another one runs, so that the cards finish together.
struct final_run {
  std::vector<engine::node_id> finalists;
  std::vector<std::string> objects;
  std::vector<int64_t> schedule;
  int64_t rounds = 0;
  int64_t next_round = 0;           ///< rounds started
  int64_t running = 0;              ///< GPUs working on the final
  std::vector<int64_t> round_front; ///< per round: its next slot (0 .. n)
  std::vector<int64_t> round_back;  ///< per round: one past its last slot not yet taken
  std::vector<engine::final_sample> samples;
  base::step_timer step{"finals"};
};

/// Names the reply type a response handler takes: the argument of its call operator.
template <class Handler>
struct reply_of : reply_of<decltype(&Handler::operator())> {};

template <class C, class R, class A>
struct reply_of<R (C::*)(A&) const> {
  using type = A;
};

template <class C, class R, class A>
struct reply_of<R (C::*)(A&)> {
  using type = A;
};

/// Where a supervisor is in its life: it runs from run_task until it delivers its report.
enum class supervisor_life {
  waiting,  ///< spawned; run_task has not come
  running,  ///< run_task came; steps run as replies come
  reported, ///< the report is delivered; no step runs again
};

/// Holds one supervisor's task, tree and work in flight; its steps are member functions.
///
/// Its life (`life`): waiting for run_task, running, then reported (nothing runs after that:
/// every reply goes through request_then, which drops it). While it runs, the task's phase
/// (state.phase: searching, then finals) says which steps run, `planning` and `branches` what
/// is in flight, and `interrupted` that no new job starts (an interrupt may come before
/// run_task: the supervisor then starts and reports at its first step).
struct supervisor_state {
  using pointer = supervisor_actor::stateful_pointer<supervisor_state>;

  // -- setup -----------------------------------------------------------------------------------

  pointer self = nullptr;
  supervisor_setup setup;
  const engine::task* subject = nullptr;
  std::unique_ptr<engine::search_policy> policy;
  double floor_ms = 0;          ///< the roofline floor on the home GPU; 0 when unknown
  bool home_chosen = false;     ///< setup.home_gpu is final: the reference was or will be timed
  double reference_load_ms = 0; ///< how long the reference's verification took; 0 = unknown
  int64_t round_robin = 0;

  // -- the task --------------------------------------------------------------------------------

  engine::search_tree tree;
  engine::short_term_memory memory;
  memory::task_state state;
  std::map<std::string, std::string> sources; ///< by hash: the reference, accepted and
                                              ///< unfinished nodes, all made this run
  std::string reference_hash;
  std::string reference_so;                               ///< compiled this run
  std::map<engine::node_id, branch_state> branches;       ///< in flight, the root included
  std::map<engine::node_id, memory::node_detail> details; ///< what put_node writes beside
                                                          ///< each record
  std::map<engine::node_id, engine::diagnosis> diagnoses;
  std::set<engine::node_id> profiled; ///< profiled (or tried) this run
  std::map<engine::node_id, kernel_usage> usages;
  std::map<engine::node_id, std::string> shared_objects; ///< compiled this run, by node
  /// Times of nodes on GPUs other than the one of their record, measured this run: a parent is
  /// re-timed on the card its child was timed on, so that the judge compares them on one card.
  std::map<std::pair<engine::node_id, int32_t>, engine::timing> card_times;
  /// What waits for a re-timing in flight, by (node, GPU index).
  std::map<std::pair<engine::node_id, int32_t>, std::vector<std::function<void()>>> retimings;
  /// GPUs that verified a candidate of this task this run: their workers hold the reference's
  /// outputs for the task's seeds, which another card would compute again.
  std::vector<int32_t> verified_cards;
  bool planning = false;
  int64_t plan_failures = 0; ///< transient planner failures in a row
  std::optional<std::pair<engine::node_id, int64_t>> plan_later; ///< (parent, count) put off
  /// Per node: how often one of its steps failed by a fault of the host (bench.host_fault_retries
  /// bounds it); and the nodes whose step waits to run again after one (retry_node).
  std::map<engine::node_id, int64_t> host_faults;
  std::set<engine::node_id> waiting_retry;

  // -- the end ---------------------------------------------------------------------------------

  caf::typed_response_promise<task_report> promise;
  supervisor_life life = supervisor_life::waiting;
  bool interrupted = false;
  std::optional<std::string> budget_stop;     ///< the campaign's reason, once a budget ran out
  std::optional<std::string> host_fault_stop; ///< the fault of the host that stopped the task
  int64_t verified = 0;
  int64_t timed = 0;
  base::perf_tree perf;

  // -- supervisor_actor.cpp: start, resume, the step function; supervisor_finals.cpp ----------

  caf::result<task_report> start();
  void restore(task_snapshot& snapshot);
  void resume();
  void compile_reference();
  void next_step();
  void plan(engine::node_id parent, int64_t count);
  void ask_planner(engine::node_id parent, int64_t count, skill_stats_reply stats);
  void retry_planning();
  void expand(engine::node_id parent, std::vector<engine::plan> plans);
  void exhaust(engine::node_id parent, const std::string& why);
  void finals(const engine::stop_decision& decision);
  void compile_finalist(std::shared_ptr<final_run> run);
  void start_rounds(std::shared_ptr<final_run> run);
  int64_t open_round(final_run& run);
  void time_round(std::shared_ptr<final_run> run, int64_t round, int32_t gpu, int32_t hint = -1);
  void card_free(std::shared_ptr<final_run> run, int32_t gpu);
  void time_slot(std::shared_ptr<final_run> run, int64_t round, int64_t slot, int32_t gpu,
                 std::function<void(int32_t)> then, int32_t hint = -1);
  void decide_final(std::shared_ptr<final_run> run);
  /// Declares `winner` of time `median_ms`; `reference_ms` is the reference's time from the same
  /// final (0: none, its own timing stands).
  void declare_winner(engine::node_id winner, double median_ms, double reference_ms = 0);
  void stop(const stop_msg& m);
  task_progress progress() const;
  task_report report() const;
  void finish();
  void fail_task(const std::string& why);
  void warn(const std::string& what) const;
  void set_home(int32_t gpu);
  void choose_home(std::function<void()> next);

  // -- supervisor_branch.cpp: one branch ----------------------------------------------------

  void start_branch(engine::node_id id);
  void resume_branch(engine::node_id id);
  /// Runs node `id`'s next step, as engine::next_action reads its record and run_state(id).
  void advance(engine::node_id id);
  /// Returns what this run holds of node `id` beyond its record (engine/node_action.hpp).
  engine::node_run_state run_state(engine::node_id id) const;
  void code(engine::node_id id);
  void take_source(engine::node_id id, std::string text, const base::step_timer& step,
                   put_batch with = {});
  void compile(engine::node_id id);
  void verify(engine::node_id id);
  void time(engine::node_id id);
  void analyze_then(engine::node_id id, std::function<void()> next);
  void judge(engine::node_id id);
  void settle(engine::node_id id, engine::outcome_kind outcome, double gain);
  void failed(engine::node_id id, branch_step step, gpu::failure_kind kind, std::string message,
              std::string diagnostics);
  void repair(engine::node_id id, branch_failure failure);
  void fail_final(engine::node_id id, branch_failure failure);
  void bench_lost(engine::node_id id, const caf::error& e);
  /// Node `id`'s step failed by a fault of the host (`what`): the node keeps its record, and
  /// the step runs again after a wait (retry_node); once setup.host_fault_retries are spent,
  /// the task stops naming the fault, the node left for the resume.
  void host_fault(engine::node_id id, const std::string& what);
  void retry_step(engine::node_id id);
  void retime_then(engine::node_id id, int32_t gpu, std::function<void()> next);
  void end_branch(engine::node_id id);
  bool paused(engine::node_id id);

  // -- supervisor_profile.cpp: profiles and the roofline ---------------------------------------

  /// Checks whether setup.profile asks for node `id` to be profiled at `moment`.
  bool wants_profile(engine::node_id id, profile_moment moment) const;
  /// Profiles node `id` (its kept profile, if an earlier run made one), diagnoses it from the
  /// counters, writes both beside its record, then runs `next`; a profile that fails leaves
  /// the timing's diagnosis.
  void profile_then(engine::node_id id, std::function<void()> next);
  /// Returns why node `id` is not expanded (at or above setup.expand_max_fraction of the
  /// roofline, or diagnosed at the roofline); nullopt when it may be.
  std::optional<std::string> roofline_reached(engine::node_id id) const;

  // -- helpers ---------------------------------------------------------------------------------

  /// Sends `msg` to `to` and runs `on_reply` with the answer or `on_error` with the failure,
  /// unless the supervisor reported meanwhile: a reported supervisor takes no further step, so no
  /// continuation needs to ask.
  template <class Handle, class Msg, class OnReply, class OnError>
  void request_then(const Handle& to, Msg msg, OnReply on_reply, OnError on_error) {
    using reply = typename reply_of<OnReply>::type;
    self->request(to, caf::infinite, std::move(msg))
        .then(
            [this, on_reply = std::move(on_reply)](reply& r) {
              if (life != supervisor_life::reported)
                on_reply(r);
            },
            [this, on_error = std::move(on_error)](caf::error& e) {
              if (life != supervisor_life::reported)
                on_error(e);
            });
  }

  /// Sends `msg` to the store and runs `next` once it is committed; a failed write ends the
  /// task (fail_task): nothing may go on that the store does not hold.
  template <class Msg>
  void store_then(Msg msg, std::function<void()> next) {
    request_then(
        setup.team.store, std::move(msg), [next = std::move(next)](ack&) { next(); },
        [this](caf::error& e) { fail_task("the store failed: " + describe_error(e)); });
  }

  /// Returns a bench job of this task for `purpose`: `kind` on `kernel`, placed by
  /// engine::place over `facts` with the task's home filled in, at job_priority().
  bench_job bench_job_for(engine::bench_purpose purpose, bench_kind kind, std::string kernel,
                          std::string label, engine::placement_facts facts = {}) const;

  /// Writes node `id` (its record as the tree holds it, with details[id]), then runs `next`.
  void put_node_then(engine::node_id id, std::function<void()> next);

  /// Returns the write of node `id` as the tree holds it, with details[id].
  put_node node_write(engine::node_id id);

  /// Replaces node `record.id`'s progress in the tree; a refusal ends the task (a broken
  /// invariant of ours). Returns whether it was accepted.
  bool update(const engine::node_record& record);

  /// Checks whether the supervisor runs with nothing in flight (no planner request, no
  /// branch): the moment its step function takes the next step.
  bool between_steps() const {
    return life == supervisor_life::running && !planning && branches.empty();
  }

  /// Returns the next member of a role team, round robin.
  template <class Handle>
  const Handle& member(const std::vector<Handle>& members) {
    return members[static_cast<size_t>(round_robin++) % members.size()];
  }

  /// Returns the GPU index whose time node `id`'s record holds.
  int32_t timed_gpu(engine::node_id id) const;

  /// Returns the GPUs where node `id`'s time is known or being measured, its record's first:
  /// a child timed on one of them needs no re-timing of `id`.
  std::vector<int32_t> timed_cards(engine::node_id id) const;

  /// Starts re-timing `parent` on the GPUs engine::spread_cards names while its `children` are
  /// verified, so that they can be timed on several cards at once.
  void spread_parent(engine::node_id parent, size_t children);

  /// Checks whether the card that gave node `id`'s time is one this run has (always for the
  /// reference, which is judged against nothing).
  bool card_available(engine::node_id id) const;

  /// Returns node `id`'s time on GPU `gpu`: its record's or a re-timing's; null if unknown.
  const engine::timing* time_on(engine::node_id id, int32_t gpu) const;

  /// Returns the roofline floor of the task on GPU `gpu`, in ms; 0 when unknown.
  double floor_on(int32_t gpu) const;

  /// Returns the priority of this task's bench jobs: its load estimate, so that the longest
  /// jobs start first (the longest-processing-time rule) and the longest task ends sooner.
  double job_priority() const;

  /// Returns the text of `hash`; empty if unknown.
  const std::string& source_of(const std::string& hash) const;

  /// Returns "task#id" for messages and compile labels.
  std::string label(engine::node_id id) const;

  static std::string describe_error(const caf::error& e);
};

/// Returns the content hash of a CUDA source (the store's key for it).
std::string source_hash(const std::string& text);

} // namespace ks::actors
