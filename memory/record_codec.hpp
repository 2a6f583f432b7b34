#pragma once

// The records of the store: where each lives (database and key) and how its value is written.
// This grammar is the store's on-disk format; store.cpp only moves these records in and out
// of LMDB transactions.
//
// Layout: one LMDB environment per workspace folder (data.mdb, lock.mdb) holding ten named
// databases. Keys are bytes compared lexicographically (LMDB's default). <task>, <skill>,
// <family>, <gpu>, <hash> and <uuid> are UTF-8 strings without NUL; NUL ("\0") separates the
// parts of a composite key, so a scan of the prefix "<task>\0" sees that task's keys and no
// other task's. <id>, <parent>, <branch> and <seq> are non-negative integers written as 20
// decimal digits, zero-padded, so that byte order is numeric order (1, 2, 10). <node> is a
// node's <id>, or "-1" for a model request of no node, which sorts before every node.
//
//   database     key                             value
//   meta         "store"                         store_header
//   meta         "campaign"                      campaign
//   tasks        <task>                          task
//   nodes        <task> \0 <id>                  node
//   details      <task> \0 <id>                  detail
//   sources      <hash>                          source
//   outcomes     <task> \0 <parent> \0 <seq>     outcome   (seq: 0, 1, ... per parent)
//   repairs      <task> \0 <branch> \0 <seq>     repair    (seq: 0, 1, ... per branch)
//   calibration  <uuid>                          calibration
//   skills       <skill> \0 <family> \0 <gpu>    skill_stat
//   transcripts  <task> \0 <node> \0 <seq>       transcript (seq: 0, 1, ... per node, as
//                                                 written, whatever the request's id: a
//                                                 resumed campaign appends; <task>
//                                                 "_campaign" for a request of no task)
//
// Every value is one JSON object (UTF-8, no trailing data) whose first two members are the
// format version and a type tag, sealed with a checksum of itself and its key
// (record_seal.hpp: the JSON text, a NUL, "xxh3-64:" and 16 hex digits):
//
//   value        = body NUL "xxh3-64:" hex16
//   body         = { "v": 1, "type": tag, fields... }
//   store_header = tag "store":       "magic": "kernelskill-store", ["checksum": "xxh3-64"]
//                  (a store whose header names the checksum requires it of every value; one
//                  written before checksums, whose header has none, reads its unsealed values
//                  unchecked and seals what it writes since)
//   campaign     = tag "campaign":    "config_text": str, "started_at": str,
//                                     "environment": str, "runs": int
//   task         = tag "task":        "name": str, "manifest": str, "phase": int,
//                                     "stop_reason": str, "stop_text": str, "winner": int,
//                                     "winner_median_ms": real, "reference_median_ms": real,
//                                     "roofline_floor_ms": real, ["home_gpu": int],
//                                     ["home_load_ms": real], ["cost_flops": real],
//                                     ["cost_bytes": real]
//   node         = tag "node":        "id": int, "parent": int, "depth": int,
//                                     "expansion": int, "plan": plan, "source_hash": str,
//                                     "status": node_status name, "disposition": name,
//                                     "time": timing, "fraction_of_roofline": real,
//                                     "failure_kind": str, "expansion_state": "open" | "exhausted"
//   detail       = tag "detail":      "message": str, "diagnostics": str,
//                                     "resources_json": str, "verify_json": str,
//                                     ["timed_gpu": int], ["profile_json": str],
//                                     ["diagnosis_json": str]
//   source       = tag "source":      "text": str, ["bytes_hex": str]
//                                     (text is valid UTF-8, each byte that is not U+FFFD;
//                                     bytes_hex, two lowercase hex digits a byte, is there
//                                     when they differ: the source exactly, for nvcc)
//   outcome      = tag "outcome":     "plan": plan, "child": int, "outcome": outcome_kind name,
//                                     "failure_kind": str, "gain": real
//   repair       = tag "repair":      "round": int, "error_text": str, "diagnosis": str,
//                                     "fix_summary": str, "source_hash": str,
//                                     "repaired_hash": str (both absent: "")
//   calibration  = tag "calibration": "json": str  (the calibration's JSON text, verbatim)
//   skill_stat   = tag "skill_stat":  "tries": int, "successes": int, "total_gain": real
//   transcript   = tag "llm_transcript", version 1 of agents/transcript.hpp's grammar: the
//                  model gateway's JSON text of one request, redacted of the API key, kept
//                  byte for byte as its file in <output>/transcripts/ holds it (its final
//                  newline included). The store reads "id": int, "role": str, "task": str,
//                  "node": int (-1: none), "api": str, "model": str, "endpoint": str,
//                  "started_at": str, "latency_ms": number, "attempts": [ { "status": int,
//                  "error": str, "ms": number, "retry_after_s": number } ], "outcome": str,
//                  "error": str, "messages": [ { "role": str, "content": str } ],
//                  "reply": str, "finish_reason": str, "input_tokens": int,
//                  "output_tokens": int, "cost": number, and refuses to write a text that
//                  lacks one (errc::invalid_input); its key comes from "task" and "node"
//   plan         = { "skill": str, "description": str, "params": { str: str, ... },
//                    "skill_version": int (optional: 0 when absent),
//                    "template": str (optional: "" when absent) }
//                  (with the node's parent, a plan is the node's genotype: the skill, its
//                  version, the template and the parameter values; a plan without the two
//                  optional fields reads back as its skill and parameters)
//   timing       = { "median_ms": real, "p10_ms": real, "p90_ms": real, "trials": int,
//                    "samples_ms": [ real, ... ] }
//   real         = number (the shortest text that reads back exactly) | null (NaN)
//                  | "inf" | "-inf"
//   int          = integer number (int64)
//
// Enums are written by their stable names (engine's to_string / parse_*), so that a dump reads
// without a table; the one exception is a task's phase, written by its number (engine::
// task_phase, whose numbers are fixed) and read by number or by name. Reading checks the
// checksum first: a value that does not match it (or lacks it where the store requires it) is
// a damaged record (errc::damaged, naming database and key). Decoding then checks "v" and the
// tag, then every field the grammar lists: a missing or mistyped field, an unknown enum name
// or a node whose id disagrees with its key makes the record corrupt (errc::io, naming
// database and key). Unknown extra fields are ignored, so a later writer of version 1 may add
// some. LMDB's copy-on-write B-tree never exposes a half-written value; the checksum is for
// what changes a value afterwards (a bad sector, a stray write, an edit): one changed digit of
// a timing would otherwise read back as a valid, wrong record.

#include "engine/search_tree.hpp"
#include "engine/short_term_memory.hpp"
#include "memory/record_seal.hpp"
#include "memory/store.hpp"

#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ks::memory::records {

// -- databases ---------------------------------------------------------------------------------

inline constexpr const char* meta_db = "meta";
inline constexpr const char* tasks_db = "tasks";
inline constexpr const char* nodes_db = "nodes";
inline constexpr const char* details_db = "details";
inline constexpr const char* sources_db = "sources";
inline constexpr const char* outcomes_db = "outcomes";
inline constexpr const char* repairs_db = "repairs";
inline constexpr const char* calibration_db = "calibration";
inline constexpr const char* skills_db = "skills";
inline constexpr const char* transcripts_db = "transcripts";

/// Lists every database, in the order dump() shows them.
inline constexpr const char* all_dbs[] = {meta_db,    tasks_db,      nodes_db,   details_db,
                                          sources_db, outcomes_db,   repairs_db, calibration_db,
                                          skills_db,  transcripts_db};

/// Names the meta database's key of the store header and of the campaign.
inline constexpr std::string_view store_key = "store";
inline constexpr std::string_view campaign_key = "campaign";

/// Holds the magic string of the store header.
inline constexpr std::string_view magic = "kernelskill-store";

/// Holds the format version every value carries ("v").
inline constexpr int64_t version = 1;

/// Holds the type tag and the format version of a transcript (agents/transcript.hpp's).
inline constexpr std::string_view transcript_tag = "llm_transcript";
inline constexpr int64_t transcript_version = 1;

/// Names the task a model request of no task is kept under (as its transcript's folder is).
inline constexpr std::string_view campaign_task = "_campaign";

// -- keys --------------------------------------------------------------------------------------

/// Returns `n` (>= 0) as 20 zero-padded decimal digits.
std::string number_key(int64_t n);

/// Reads 20 decimal digits back; nullopt if `text` is anything else.
std::optional<int64_t> parse_number_key(std::string_view text);

/// Returns `a` \0 `b`.
std::string join(std::string_view a, std::string_view b);

/// Returns `a` \0 `b` \0 `c`.
std::string join(std::string_view a, std::string_view b, std::string_view c);

/// Returns the key part of node `node`: its number_key, or "-1" for no node (`node` < 0).
std::string node_key(int64_t node);

/// Reads a node key part back (-1 for "-1"); nullopt if `text` is neither form.
std::optional<int64_t> parse_node_key(std::string_view text);

/// Returns a key for people: its parts joined by '/', numbers without their padding, after
/// the database's name ("nodes/softmax/2").
std::string display_key(std::string_view db, std::string_view key);

// -- values ------------------------------------------------------------------------------------

/// Says why a value could not be decoded (without its key, which the caller adds).
template <class T>
using decoded = tl::expected<T, std::string>;

/// What the store reads of a transcript beside its conversation: where it is kept and what
/// dump() shows of it.
struct transcript_fields {
  int64_t id = 0; ///< the gateway's request id: unique within one run only
  std::string role;
  std::string task; ///< as the transcript says it: empty for a request of no task
  int64_t node = -1;
  std::string model;
  std::string outcome;
  double latency_ms = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost = 0;

  /// Returns the task the transcript is kept under: `task`, or campaign_task when empty.
  std::string store_task() const { return task.empty() ? std::string(campaign_task) : task; }
};

std::string encode_store_header();
std::string encode(const campaign_record& r);
std::string encode(const task_state& r);
std::string encode(const engine::node_record& r);
std::string encode(const node_detail& r);
std::string encode_source(std::string_view text);
std::string encode(const engine::plan_outcome& r);
std::string encode(const engine::repair_round& r);
std::string encode_calibration(std::string_view json_text);
std::string encode(const skill_stat& r);

/// Checks a store header (version and magic) and returns what it says of checksums: required
/// when it names record_seal's, optional when it names none (a store written before them).
[[nodiscard]] decoded<seal::rule> decode_store_header(std::string_view value);
[[nodiscard]] decoded<campaign_record> decode_campaign(std::string_view value);
[[nodiscard]] decoded<task_state> decode_task(std::string_view value);
[[nodiscard]] decoded<engine::node_record> decode_node(std::string_view value);
[[nodiscard]] decoded<node_detail> decode_detail(std::string_view value);
[[nodiscard]] decoded<std::string> decode_source(std::string_view value);
[[nodiscard]] decoded<engine::plan_outcome> decode_outcome(std::string_view value);
[[nodiscard]] decoded<engine::repair_round> decode_repair(std::string_view value);
[[nodiscard]] decoded<std::string> decode_calibration(std::string_view value);
[[nodiscard]] decoded<skill_stat> decode_skill_stat(std::string_view value);
/// Checks a transcript's text against the grammar above and returns what the store reads of it.
[[nodiscard]] decoded<transcript_fields> decode_transcript(std::string_view value);

/// Returns a one-line summary of `value` (a record's body, its checksum removed) for dump(),
/// whatever its type, once it decodes; why it does not, otherwise.
[[nodiscard]] decoded<std::string> describe(std::string_view value);

/// Returns describe(value), or "corrupt: <why>" for a value that does not decode.
std::string summarize(std::string_view value);

} // namespace ks::memory::records
