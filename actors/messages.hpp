#pragma once

// Every message of the actor layer, and its type ID: one block, one header (CAF's habit), so
// that a message type is declared once and its ID never collides with another's. Messages are
// plain values. A task travels by name (each actor that needs the task itself holds the
// campaign's read-only task table); a kernel travels as the path of its shared object; a
// source travels by hash, except on the hops that must hold its text (coder -> supervisor ->
// store and compiler), where it is moved, never copied.
//
// Every type has an inspect() overload, as CAF requires of a message type; the types of
// engine/, memory/ and gpu/ get theirs here, in their own namespaces (found by ADL), because
// those folders know nothing of CAF. Messages stay in-process for now: nothing is sent through
// the middleman, so no type is registered for serialization.
//
// Every request is answered by one reply type named next to it; writes to the store are
// answered by `ack` once the record is committed.

#include "actors/fwd.hpp"
#include "actors/llm_messages.hpp"
#include "base/step_timer.hpp"
#include "engine/agent_backend.hpp"
#include "engine/bench_purpose.hpp"
#include "engine/diagnosis.hpp"
#include "engine/judge.hpp"
#include "engine/retrieval.hpp"
#include "engine/search_tree.hpp"
#include "engine/short_term_memory.hpp"
#include "engine/skill_stats.hpp"
#include "engine/task_phase.hpp"
#include "gpu/worker_protocol.hpp"
#include "memory/store.hpp"

#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

// -- inspect() for the types of engine/, gpu/ and memory/ --------------------------------------

namespace ks::engine {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plan& x) {
  return f(caf::meta::type_name("plan"), x.skill, x.description, x.params, x.skill_version,
           x.template_name);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metric_evidence& x) {
  return f(caf::meta::type_name("metric_evidence"), x.metric, x.value, x.relation, x.threshold);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hardware_summary& x) {
  return f(caf::meta::type_name("hardware_summary"), x.counters, x.kernel, x.kernel_share,
           x.launches, x.mean_kernel_us, x.dram_bytes, x.bytes_waste, x.executed_flops,
           x.flops_waste, x.dram_throughput_pct, x.l2_throughput_pct, x.l1_throughput_pct,
           x.sm_throughput_pct, x.l2_hit_pct, x.l1_hit_pct, x.occupancy_pct,
           x.theoretical_occupancy_pct, x.occupancy_limiter, x.top_stall, x.top_stall_pct,
           x.local_bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, diagnosis& x) {
  return f(caf::meta::type_name("diagnosis"), x.diagnosed, x.bound, x.fraction_of_roofline,
           x.achieved_gbps, x.achieved_gflops, x.registers, x.spill_bytes, x.evidence, x.text,
           x.hardware);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, skill_stats& x) {
  return f(caf::meta::type_name("skill_stats"), x.tries, x.compile_failures, x.wrong_results,
           x.other_failures, x.acceptances, x.rejections, x.log_speedup_sum, x.best_speedup,
           x.best_template, x.best_params, x.best_task, x.last_used);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, skill_try& x) {
  return f(caf::meta::type_name("skill_try"), x.skill, x.skill_version, x.template_name, x.params,
           x.family, x.arch, x.task, x.node, x.parent, x.outcome, x.failure_kind, x.gain,
           x.reference_speedup, x.at);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, retrieved_skill& x) {
  return f(caf::meta::type_name("retrieved_skill"), x.id, x.stats, x.score, x.demoted, x.why);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, timing& x) {
  return f(caf::meta::type_name("timing"), x.median_ms, x.p10_ms, x.p90_ms, x.trials, x.samples_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_record& x) {
  return f(caf::meta::type_name("node_record"), x.id, x.parent, x.depth, x.expansion, x.plan,
           x.source_hash, x.status, x.disposition, x.time, x.fraction_of_roofline, x.failure_kind,
           x.expansion_state);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plan_outcome& x) {
  return f(caf::meta::type_name("plan_outcome"), x.plan, x.child, x.outcome, x.failure_kind,
           x.gain);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ancestor_memory& x) {
  return f(caf::meta::type_name("ancestor_memory"), x.node, x.tried);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, repair_round& x) {
  return f(caf::meta::type_name("repair_round"), x.round, x.error_text, x.diagnosis, x.fix_summary,
           x.source_hash, x.repaired_hash);
}

} // namespace ks::engine

namespace ks::gpu {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_info& x) {
  return f(caf::meta::type_name("device_info"), x.index, x.device_count, x.name, x.uuid, x.arch,
           x.cc_major, x.cc_minor, x.sms, x.memory_bytes, x.l2_bytes, x.smem_per_block_optin,
           x.sm_clock_khz, x.mem_clock_khz, x.mem_bus_bits, x.driver_version, x.runtime_version);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, calibration& x) {
  return f(caf::meta::type_name("calibration"), x.dram_gbps, x.fp32_gflops, x.copy_bytes, x.copy_ms,
           x.fma_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, verify_result& x) {
  return f(caf::meta::type_name("verify_result"), x.passed, x.trials, x.max_abs_err, x.max_rel_err,
           x.norm_rel_err, x.bad_count, x.nan_count, x.first_bad_index, x.bad_output, x.bad_trial,
           x.expected, x.actual, x.input_changed, x.vendor_libraries);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, timing_result& x) {
  return f(caf::meta::type_name("timing_result"), x.median_ms, x.p10_ms, x.p90_ms, x.min_ms,
           x.mean_ms, x.trials, x.host_ms_per_call, x.device_tail_ms, x.escaped, x.batch,
           x.vendor_libraries);
}

/// Inspects a job's result by the index of its type only: messages stay in process, so
/// inspection only names them (a profile travels whole inside, never through a serializer).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, result_payload& x) {
  auto index = static_cast<int32_t>(x.index());
  return f(caf::meta::type_name("result_payload"), index);
}

} // namespace ks::gpu

namespace ks::memory {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, campaign_record& x) {
  return f(caf::meta::type_name("campaign_record"), x.config_text, x.started_at, x.environment,
           x.runs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_state& x) {
  return f(caf::meta::type_name("task_state"), x.name, x.manifest, x.phase, x.stop_reason,
           x.stop_text, x.winner, x.winner_median_ms, x.reference_median_ms, x.roofline_floor_ms,
           x.home_gpu, x.home_load_ms, x.cost_flops, x.cost_bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_detail& x) {
  return f(caf::meta::type_name("node_detail"), x.message, x.diagnostics, x.resources_json,
           x.verify_json, x.timed_gpu, x.profile_json, x.diagnosis_json);
}

} // namespace ks::memory

namespace ks::base {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_stats& x) {
  return f(caf::meta::type_name("step_stats"), x.count, x.total_ms, x.max_ms);
}

} // namespace ks::base

namespace ks::actors {

// -- generic replies ---------------------------------------------------------------------------

/// Acknowledges a request that returns nothing (a store write: it is committed).
struct ack {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ack&) {
  return f(caf::meta::type_name("ack"));
}

// -- bench: gpu_bench_actor and bench_dispatcher_actor -----------------------------------------

/// Names the jobs a bench actor runs: the worker protocol's job kinds, one enum for both
/// (shutdown is the bench actor's own business, never a bench_job).
using bench_kind = gpu::job_kind;

/// Asks a bench actor for one job on its GPU. Its placement (gpu, prefer) comes from
/// engine::place for its purpose (engine/bench_placement.hpp); the dispatcher reads only the
/// placement and the priority.
struct bench_job {
  bench_kind kind = bench_kind::info;
  std::string task;      ///< the task's name (verify and time)
  std::string reference; ///< verify and time: the reference's shared object
  std::string kernel;    ///< verify: the candidate's shared object; time: the one to time
  int32_t gpu = -1;      ///< the bench actor (GPU index) that must run it; -1: any
  std::string label;     ///< "softmax#12", "softmax#12 (final)": for people and the bench trace
  std::vector<int32_t> prefer = {}; ///< GPUs to take when one is idle, best first (with gpu =
                                    ///< -1, or where the GPU it is pinned to is gone)
  double priority = 0; ///< queued jobs start highest first, a job's priority growing by the
                       ///< milliseconds it has waited: the caller gives its task's load
                       ///< estimate in ms, so the longest jobs go first unless others waited
  engine::bench_purpose purpose = engine::bench_purpose::device; ///< why it runs
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bench_job& x) {
  return f(caf::meta::type_name("bench_job"), x.kind, x.task, x.reference, x.kernel, x.gpu, x.label,
           x.prefer, x.priority, x.purpose);
}

/// Answers a bench_job: its result (the result type of its kind, gpu::result_of), or the
/// typed failure that replaced it.
struct bench_result {
  bench_kind kind = bench_kind::info;
  int32_t gpu = -1; ///< the GPU index that ran it
  bool ok = false;
  int32_t failure = 0;         ///< gpu::failure_kind's number when !ok
  std::string message;         ///< the failure's message, with its verification details
  gpu::result_payload payload; ///< the result; a failed verification keeps its statistics
  double busy_ms = 0;          ///< how long the bench actor worked on it (worker start included)
  double queued_ms = 0;        ///< how long it waited in the dispatcher's queue
  bool device_lost = false;    ///< a host_fault that says the GPU itself is gone: the
                               ///< dispatcher sends it no more jobs while another card lives

  /// Returns the result as type T (gpu::result_of<kind>); a default T when it holds none.
  template <class T>
  const T& get() const {
    static const T none{};
    const T* value = std::get_if<T>(&payload);
    return value != nullptr ? *value : none;
  }

  /// Returns a verify job's statistics (also those of a failed verification).
  const gpu::verify_result& verify() const { return get<gpu::verify_result>(); }
  /// Returns a time job's timing.
  const gpu::timing_result& timing() const { return get<gpu::timing_result>(); }
  /// Returns an info job's device.
  const gpu::device_info& device() const { return get<gpu::device_info>(); }
  /// Returns a calibrate job's peaks.
  const gpu::calibration& calibration() const { return get<gpu::calibration>(); }
  /// Returns a profile job's profile.
  const engine::profile& profile() const { return get<engine::profile>(); }
  /// Returns a probe job's timing (the card-stability probe).
  const gpu::probe_result& probe() const { return get<gpu::probe_result>(); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bench_result& x) {
  return f(caf::meta::type_name("bench_result"), x.kind, x.gpu, x.ok, x.failure, x.message,
           x.payload, x.busy_ms, x.queued_ms, x.device_lost);
}

/// Asks the dispatcher for its per-GPU counters.
struct bench_stats_request {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bench_stats_request&) {
  return f(caf::meta::type_name("bench_stats_request"));
}

/// Counters of the bench actors, by GPU index.
struct bench_stats {
  std::vector<double> busy_ms; ///< time spent running jobs (stability probes included)
  std::vector<int64_t> jobs;   ///< jobs answered
  int64_t queued = 0;          ///< jobs waiting now
  /// By GPU: what is wrong with its stability now ("unstable for 12s: its probe took 1.84x
  /// its quiet time ..."), empty while it is quiet or not probed (engine/card_stability.hpp)
  std::vector<std::string> stability;
  std::vector<std::string> stability_warnings; ///< the campaign's lines on unstable GPUs
  bool unreliable = false; ///< a GPU stayed unstable past bench.stability_limit_s: timings
                           ///< made on it are flagged, the campaign's results unreliable
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bench_stats& x) {
  return f(caf::meta::type_name("bench_stats"), x.busy_ms, x.jobs, x.queued, x.stability,
           x.stability_warnings, x.unreliable);
}

/// Asks the dispatcher for a task's home GPU; it answers the GPU index (int32_t). With gpu ==
/// -1 it picks the GPU with the least load assigned so far (online longest processing time);
/// with a GPU index (a home kept from an earlier run) it keeps that one. Either way it adds
/// `load_ms` to that GPU's assigned load.
struct assign_home {
  std::string task;
  double load_ms = 0; ///< the task's estimated load: its reference's verification time
  int32_t gpu = -1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, assign_home& x) {
  return f(caf::meta::type_name("assign_home"), x.task, x.load_ms, x.gpu);
}

// -- compile pool ------------------------------------------------------------------------------

/// Sums up ptxas' report: the most registers, shared memory and spills of any kernel.
struct kernel_usage {
  bool known = false; ///< ptxas reported at least one kernel
  int32_t registers = 0;
  int64_t shared_bytes = 0;
  int64_t spill_stores = 0;
  int64_t spill_loads = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kernel_usage& x) {
  return f(caf::meta::type_name("kernel_usage"), x.known, x.registers, x.shared_bytes,
           x.spill_stores, x.spill_loads);
}

/// Asks the compile pool to build one source.
struct compile_job {
  std::string label;  ///< for messages: "softmax#12"
  std::string source; ///< CUDA text (moved in, never copied)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compile_job& x) {
  return f(caf::meta::type_name("compile_job"), x.label, x.source);
}

/// Answers a compile_job.
struct compile_done {
  bool ok = false;
  bool cached = false;
  bool timed_out = false;
  bool host_fault = false;    ///< the host failed the compile (gpu::compile_result::host_fault)
  std::string shared_object;  ///< when ok
  std::string diagnostics;    ///< nvcc's output, verbatim (or why nvcc did not run)
  std::string resources_json; ///< ptxas' report per kernel, as JSON text
  kernel_usage usage;         ///< the heaviest of the kernels, for the analyst
  double wall_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compile_done& x) {
  return f(caf::meta::type_name("compile_done"), x.ok, x.cached, x.timed_out, x.host_fault,
           x.shared_object, x.diagnostics, x.resources_json, x.usage, x.wall_ms);
}

// -- store -------------------------------------------------------------------------------------

/// Writes a node's record and detail (store::put_node).
struct put_node {
  std::string task;
  engine::node_record node;
  memory::node_detail detail;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_node& x) {
  return f(caf::meta::type_name("put_node"), x.task, x.node, x.detail);
}

/// Writes a source under its content hash (store::put_source).
struct put_source {
  std::string hash;
  std::string text;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_source& x) {
  return f(caf::meta::type_name("put_source"), x.hash, x.text);
}

/// Records a plan outcome in a task's short-term memory (store::put_outcome).
struct put_outcome {
  std::string task;
  engine::node_id parent = engine::no_node;
  engine::plan_outcome outcome;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_outcome& x) {
  return f(caf::meta::type_name("put_outcome"), x.task, x.parent, x.outcome);
}

/// Records a repair round of a branch (store::put_repair).
struct put_repair {
  std::string task;
  engine::node_id branch = engine::no_node;
  engine::repair_round round;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_repair& x) {
  return f(caf::meta::type_name("put_repair"), x.task, x.branch, x.round);
}

/// Writes where a task stands (store::put_task).
struct put_task {
  memory::task_state state;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_task& x) {
  return f(caf::meta::type_name("put_task"), x.state);
}

/// Writes the campaign's record (store::put_campaign).
struct put_campaign {
  memory::campaign_record record;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_campaign& x) {
  return f(caf::meta::type_name("put_campaign"), x.record);
}

/// Writes a device's calibration (store::put_calibration).
struct put_calibration {
  std::string uuid;
  std::string json;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_calibration& x) {
  return f(caf::meta::type_name("put_calibration"), x.uuid, x.json);
}

/// Adds one try of a skill to its statistics: the campaign's (store::add_skill_result) and,
/// when the store actor holds the long-term skill memory, that memory's (once per node:
/// memory::skill_store::record_try, keyed by `attempt`'s task and node).
struct put_skill_result {
  std::string skill;
  std::string family;
  std::string gpu;
  bool success = false;
  double gain = 0;
  engine::skill_try attempt; ///< the try's genotype and outcome, for long-term memory
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_skill_result& x) {
  return f(caf::meta::type_name("put_skill_result"), x.skill, x.family, x.gpu, x.success, x.gain,
           x.attempt);
}

/// Asks the store for long-term memory's statistics of every skill on an op family and GPU
/// architecture; answered by skill_stats_reply (empty without a skill memory).
struct get_skill_stats {
  std::string family;
  std::string arch;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_skill_stats& x) {
  return f(caf::meta::type_name("get_skill_stats"), x.family, x.arch);
}

/// Asks the store to offer long-term memory every settled try of the campaign's store (a
/// resume's first step): a try a kill lost between the two commits is counted now, and the
/// ledger keeps every other from counting twice. Answered by ack.
struct reconcile_tries {
  std::map<std::string, std::string> families; ///< task name -> its op family
  std::string arch;                            ///< the campaign's GPU architecture
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reconcile_tries& x) {
  return f(caf::meta::type_name("reconcile_tries"), x.families, x.arch);
}

/// Answers get_skill_stats: statistics by skill id.
struct skill_stats_reply {
  std::map<std::string, engine::skill_stats> stats;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, skill_stats_reply& x) {
  return f(caf::meta::type_name("skill_stats_reply"), x.stats);
}

/// Writes several records in one transaction (one fsync), all or nothing: sources, then
/// nodes, repairs, outcomes, task states and skill results, each in the order given. A
/// transition that touches several records (an expansion: K nodes and their pending outcomes;
/// a verdict: the node, its outcome and its skill's statistics) is one batch, so a kill never
/// leaves half of it.
struct put_batch {
  std::vector<put_source> sources;
  std::vector<put_node> nodes;
  std::vector<put_repair> repairs;
  std::vector<put_outcome> outcomes;
  std::vector<put_task> tasks;
  std::vector<put_skill_result> skills;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, put_batch& x) {
  return f(caf::meta::type_name("put_batch"), x.sources, x.nodes, x.repairs, x.outcomes, x.tasks,
           x.skills);
}

/// Asks for everything stored about one task.
struct get_task {
  std::string task;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_task& x) {
  return f(caf::meta::type_name("get_task"), x.task);
}

/// Answers get_task: the task's state, tree, short-term memory, and what a resume needs of
/// the accepted nodes and of the nodes not final yet: their sources (by hash) and details.
struct task_snapshot {
  bool has_state = false;
  memory::task_state state;
  std::vector<engine::node_record> nodes;
  engine::short_term_memory::outcome_map outcomes;
  engine::short_term_memory::repair_map repairs;
  std::map<std::string, std::string> sources;
  std::map<engine::node_id, memory::node_detail> details; ///< of the same nodes
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_snapshot& x) {
  return f(caf::meta::type_name("task_snapshot"), x.has_state, x.state, x.nodes, x.outcomes,
           x.repairs, x.sources, x.details);
}

/// Asks for the campaign's record.
struct get_campaign {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_campaign&) {
  return f(caf::meta::type_name("get_campaign"));
}

/// Answers get_campaign.
struct campaign_reply {
  bool found = false;
  memory::campaign_record record;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, campaign_reply& x) {
  return f(caf::meta::type_name("campaign_reply"), x.found, x.record);
}

/// Asks for a device's stored calibration.
struct get_calibration {
  std::string uuid;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_calibration& x) {
  return f(caf::meta::type_name("get_calibration"), x.uuid);
}

/// Answers get_calibration: the JSON text, or found == false.
struct calibration_reply {
  bool found = false;
  std::string json;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, calibration_reply& x) {
  return f(caf::meta::type_name("calibration_reply"), x.found, x.json);
}

/// Asks the store to write the campaign's outputs (write_campaign_outputs) into `dir`.
struct write_outputs {
  std::string dir;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_outputs& x) {
  return f(caf::meta::type_name("write_outputs"), x.dir);
}

// -- roles: planner, coder, repairer, analyst, judge -------------------------------------------

/// Asks the planner for up to `count` plans for `parent` (engine::planning_request): the
/// parent's typed diagnosis, the skills retrieved for it with their statistics, and the
/// short-term memory of the parent and of its branch.
struct plan_request {
  std::string task;
  engine::node_id parent = engine::no_node;
  std::vector<engine::plan> parent_lineage;
  std::string parent_source;
  std::string reference_source;
  std::vector<engine::plan_outcome> tried;
  std::vector<engine::ancestor_memory> branch;
  std::vector<engine::plan> in_tree; ///< the plan of every node of the task's tree
  engine::diagnosis diagnosis;
  std::vector<engine::retrieved_skill> skills;      ///< empty: the planner retrieves them
  std::map<std::string, engine::skill_stats> stats; ///< long-term memory's, by skill id
  double parent_fraction_of_roofline = 0;
  int64_t count = 1;
  engine::timing parent_time; ///< for a model's prompt: the parent's measurement
  std::string gpu_name;       ///< ... the task's home GPU and its measured peaks
  double peak_gbps = 0;
  double peak_gflops = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plan_request& x) {
  return f(caf::meta::type_name("plan_request"), x.task, x.parent, x.parent_lineage,
           x.parent_source, x.reference_source, x.tried, x.branch, x.in_tree, x.diagnosis, x.skills,
           x.stats, x.parent_fraction_of_roofline, x.count, x.parent_time, x.gpu_name, x.peak_gbps,
           x.peak_gflops);
}

/// Answers plan_request: distinct plans, none tried; empty when the planner has no idea left.
struct plan_reply {
  std::vector<engine::plan> plans;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plan_reply& x) {
  return f(caf::meta::type_name("plan_reply"), x.plans);
}

/// Asks the coder for the source of a plan (engine::coding_request).
struct code_request {
  std::string task;
  engine::plan plan;
  std::vector<engine::plan> lineage;
  std::string parent_source;
  std::string reference_source;
  engine::node_id node = engine::no_node; ///< the node being coded (transcripts)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, code_request& x) {
  return f(caf::meta::type_name("code_request"), x.task, x.plan, x.lineage, x.parent_source,
           x.reference_source, x.node);
}

/// Answers code_request.
struct code_reply {
  std::string source;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, code_reply& x) {
  return f(caf::meta::type_name("code_reply"), x.source);
}

/// Asks the repairer to fix a failed source (engine::repair_request).
struct fix_request {
  std::string task;
  engine::plan plan;
  std::string source;
  std::string failure_kind;
  std::string error_text;
  std::vector<engine::repair_round> history;
  engine::node_id node = engine::no_node; ///< the branch being repaired (transcripts)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fix_request& x) {
  return f(caf::meta::type_name("fix_request"), x.task, x.plan, x.source, x.failure_kind,
           x.error_text, x.history, x.node);
}

/// Answers fix_request (engine::repair_reply).
struct fix_reply {
  bool gave_up = false;
  std::string source;
  std::string diagnosis;
  std::string fix_summary;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fix_reply& x) {
  return f(caf::meta::type_name("fix_reply"), x.gave_up, x.source, x.diagnosis, x.fix_summary);
}

/// Asks the analyst for the bottleneck diagnosis of a timed node: from its hardware counters
/// when it was profiled (engine::diagnose_profile), else from its timing.
struct analyze_request {
  std::string task;
  double median_ms = 0;
  kernel_usage usage;   ///< from the compile, when known
  double peak_gbps = 0; ///< the home GPU's calibration
  double peak_gflops = 0;
  std::string profile_json; ///< the node's profile (gpu::encode_profile), or empty
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, analyze_request& x) {
  return f(caf::meta::type_name("analyze_request"), x.task, x.median_ms, x.usage, x.peak_gbps,
           x.peak_gflops, x.profile_json);
}

/// Answers analyze_request; a diagnosis without a bound when the peaks are unknown.
struct analysis {
  engine::diagnosis diagnosis; ///< typed; its text is for people and prompts
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, analysis& x) {
  return f(caf::meta::type_name("analysis"), x.diagnosis);
}

/// Asks the judge whether `child` beats `parent` beyond the noise (engine::accept).
struct judge_request {
  engine::timing parent;
  engine::timing child;
  double torch_ms = 0; ///< the task's torch baseline (engine::accept's), 0: none
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, judge_request& x) {
  return f(caf::meta::type_name("judge_request"), x.parent, x.child, x.torch_ms);
}

/// Answers judge_request (engine::verdict).
struct judge_reply {
  bool accepted = false;
  int32_t evidence = 0; ///< engine::evidence's number
  double gain = 0;
  double p_value = 1;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, judge_reply& x) {
  return f(caf::meta::type_name("judge_reply"), x.accepted, x.evidence, x.gain, x.p_value,
           x.reason);
}

/// Asks the judge for the winner of an interleaved final (engine::pick_winner): each
/// finalist's samples in ms, finalists ordered simplest first.
struct final_request {
  std::vector<std::vector<double>> samples_ms;
  double torch_ms = 0;    ///< the task's torch baseline (engine::pick_winner's), 0: none
  int64_t reference = -1; ///< the index of the task's reference among them; -1: not there
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, final_request& x) {
  return f(caf::meta::type_name("final_request"), x.samples_ms, x.torch_ms, x.reference);
}

/// Answers final_request (engine::final_result).
struct final_reply {
  int64_t winner = 0;
  int64_t fastest = 0;
  bool tie = false;
  std::vector<engine::timing> timings;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, final_reply& x) {
  return f(caf::meta::type_name("final_reply"), x.winner, x.fastest, x.tie, x.timings, x.reason);
}

// -- supervisor and campaign -------------------------------------------------------------------

/// Says why the campaign stops its supervisors.
enum class stop_kind : int32_t {
  interrupt = 0, ///< Ctrl-C: no new step; the task stays resumable (no finals)
  budget = 1,    ///< a campaign budget ran out: no new expansion, then the finals
};

/// Tells a supervisor (or the campaign) to stop; see stop_kind.
struct stop_msg {
  stop_kind kind = stop_kind::interrupt;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stop_msg& x) {
  return f(caf::meta::type_name("stop_msg"), x.kind, x.reason);
}

/// Asks a supervisor to run its task to the end; answered by task_report.
struct run_task {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_task&) {
  return f(caf::meta::type_name("run_task"));
}

/// Says how a task ended (or where it stood when it was interrupted).
struct task_report {
  std::string name;
  engine::task_phase phase = engine::task_phase::pending; ///< done for a dry run that ran
  std::string stop_reason; ///< engine::stop_reason's name, "interrupted", "host_fault" (a
                           ///< fault of the host persisted: stop_text names it), or empty
  std::string stop_text;
  int64_t nodes = 0;
  engine::node_id winner = engine::no_node;
  double reference_ms = 0;
  double best_ms = 0;
  double best_p10_ms = 0; ///< best_ms scaled by the best node's p10 / median: its noise
  double speedup = 0;
  double fraction_of_roofline = 0;
  int64_t verified = 0;                   ///< verify jobs answered for candidates in this run
  int64_t timed = 0;                      ///< candidates timed in this run
  std::vector<std::string> dry_run_lines; ///< dry run: what would be measured
  base::perf_tree perf;                   ///< where the supervisor's time went, by step
  std::vector<int64_t> by_status;         ///< candidates per node_status, as task_progress
  /// dry run: the reference (node 0) and the candidates, as planned and compiled
  std::vector<engine::node_record> dry_run_nodes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_report& x) {
  return f(caf::meta::type_name("task_report"), x.name, x.phase, x.stop_reason, x.stop_text,
           x.nodes, x.winner, x.reference_ms, x.best_ms, x.best_p10_ms, x.speedup,
           x.fraction_of_roofline, x.verified, x.timed, x.dry_run_lines, x.perf, x.by_status,
           x.dry_run_nodes);
}

/// Asks a supervisor where its task stands (for the reporter).
struct progress_request {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, progress_request&) {
  return f(caf::meta::type_name("progress_request"));
}

/// Answers progress_request.
struct task_progress {
  std::string name;
  engine::task_phase phase = engine::task_phase::pending;
  std::string step; ///< a dry run's step in progress ("planning", "coding"...); else empty
  int64_t nodes = 0;
  int64_t in_flight = 0;
  double best_speedup = 0;
  double best_fraction = 0;
  std::vector<int64_t> by_status; ///< candidates (the reference left out) per node_status
  int64_t budget = 0;             ///< candidates the task may plan in all; 0 = unknown
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_progress& x) {
  return f(caf::meta::type_name("task_progress"), x.name, x.phase, x.step, x.nodes, x.in_flight,
           x.best_speedup, x.best_fraction, x.by_status, x.budget);
}

/// Tells a supervisor to ask its planner again: a plan request failed for now (rate limited,
/// unavailable) and was put off.
struct retry_plan {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, retry_plan&) {
  return f(caf::meta::type_name("retry_plan"));
}

/// Tells a supervisor to run node `id`'s step again: it failed by a fault of the host and was
/// put off (supervisor_state::host_fault).
struct retry_node {
  int64_t id = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, retry_node& x) {
  return f(caf::meta::type_name("retry_node"), x.id);
}

/// Asks the campaign to run every task; answered by campaign_report once all have ended.
struct run_all {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_all&) {
  return f(caf::meta::type_name("run_all"));
}

/// Answers run_all.
struct campaign_report {
  std::vector<task_report> tasks;
  double wall_s = 0;
  bench_stats bench;
  bool interrupted = false;
  base::perf_tree perf;      ///< every supervisor's steps, merged: the campaign's perf tree
  std::string outputs_error; ///< why the last write of the outputs failed; empty: written
  std::string host_fault;    ///< the fault of the host that stopped the campaign; empty: none
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, campaign_report& x) {
  return f(caf::meta::type_name("campaign_report"), x.tasks, x.wall_s, x.bench, x.interrupted,
           x.perf, x.outputs_error, x.host_fault);
}

/// Asks the reporter to print and write the outputs now; answered by ack once written.
struct report_now {
  bool final = false; ///< the last report: print the summary lines too
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, report_now& x) {
  return f(caf::meta::type_name("report_now"), x.final);
}

} // namespace ks::actors

// -- the type-ID block -------------------------------------------------------------------------

CAF_BEGIN_TYPE_ID_BLOCK(kernelskill, caf::first_custom_type_id)

CAF_ADD_TYPE_ID(kernelskill, (ks::actors::ack))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::bench_job))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::bench_result))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::bench_stats_request))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::bench_stats))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::assign_home))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::kernel_usage))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::compile_job))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::compile_done))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_node))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_source))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_outcome))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_repair))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_task))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_campaign))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_calibration))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_skill_result))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_batch))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::get_task))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::task_snapshot))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::get_campaign))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::campaign_reply))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::get_calibration))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::calibration_reply))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::write_outputs))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::plan_request))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::plan_reply))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::code_request))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::code_reply))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::fix_request))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::fix_reply))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::analyze_request))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::analysis))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::judge_request))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::judge_reply))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::final_request))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::final_reply))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::stop_msg))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::run_task))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::task_report))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::progress_request))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::task_progress))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::run_all))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::campaign_report))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::report_now))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::get_skill_stats))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::skill_stats_reply))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::retry_plan))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::reconcile_tries))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::retry_node))

CAF_ADD_TYPE_ID(kernelskill, (ks::actors::llm_call))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::llm_answer))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::llm_done))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::llm_stats_request))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::llm_stats))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::distill_task))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::distill_result))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_learned_skill))
CAF_ADD_TYPE_ID(kernelskill, (ks::actors::put_transcript))

/// Wakes an actor that works on a period (the reporter, the campaign's budget check).
CAF_ADD_ATOM(kernelskill, ks::actors, tick_atom, "ks_tick")

CAF_END_TYPE_ID_BLOCK(kernelskill)
