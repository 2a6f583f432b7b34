#pragma once

#include <map>
#include <memory>
#include <string>

namespace ks::engine {
struct task;
} // namespace ks::engine

namespace ks::actors {

// -- messages (messages.hpp) -------------------------------------------------------------------

struct ack;
struct bench_job;
struct bench_result;
struct bench_stats_request;
struct bench_stats;
struct assign_home;
struct compile_job;
struct compile_done;
struct put_node;
struct put_source;
struct put_outcome;
struct put_repair;
struct put_task;
struct put_campaign;
struct put_calibration;
struct put_skill_result;
struct get_skill_stats;
struct skill_stats_reply;
struct retry_plan;
struct retry_node;
struct reconcile_tries;
struct put_batch;
struct get_task;
struct task_snapshot;
struct get_campaign;
struct campaign_reply;
struct get_calibration;
struct calibration_reply;
struct write_outputs;
struct plan_request;
struct plan_reply;
struct code_request;
struct code_reply;
struct fix_request;
struct fix_reply;
struct analyze_request;
struct kernel_usage; // NOLINT(bugprone-forward-declaration-namespace): messages.hpp defines it
struct analysis;
struct judge_request;
struct judge_reply;
struct final_request;
struct final_reply;
struct stop_msg;
struct run_task;
struct task_report;
struct progress_request;
struct task_progress;
struct run_all;
struct campaign_report;
struct report_now;

// -- messages (llm_messages.hpp) ---------------------------------------------------------------

struct llm_call;
struct llm_answer;
struct llm_done;
struct llm_stats_request;
struct llm_stats;
struct distill_task;
struct distill_result;
struct put_learned_skill;
struct put_transcript;

// -- wiring ------------------------------------------------------------------------------------

struct team;
struct supervisor_setup;
struct campaign_setup;

/// Maps a task's name to the task: the campaign's read-only table, shared by the actors that
/// need a task's shapes or cost (bench actors, roles, supervisors).
using task_table = std::map<std::string, engine::task>;

/// Shares a task table between actors; it never changes once the campaign starts.
using task_table_ptr = std::shared_ptr<const task_table>;

/// Says whether an actor gets its own thread. Actors whose handlers block (a worker job, nvcc,
/// an LMDB write, an LLM call) run detached in a campaign; tests run them on the testing
/// scheduler instead.
enum class spawn_mode { detached, scheduled };

} // namespace ks::actors
