#pragma once

// The LMDB store of one workspace: everything a campaign must not lose. One environment per
// folder; one writer (the store actor), any number of readers. Every record is written in
// its own transaction (or a batch in one), so a kill -9 loses at most the write in flight.
//
// Records (keys are UTF-8 strings; values are JSON objects with "v":1, see record_codec.hpp's
// grammar): campaign metadata; per task its state; per task and node its node_record and its
// detail (failure message, diagnostics, kernel resources); sources by content hash; per task
// the short-term memory (plan outcomes per parent, repair rounds per branch); calibrations
// per device uuid; skill statistics per (skill, op family, gpu name); per task and node the
// transcript of every model request, the text of its file in <output>/transcripts/.
//
// Threading: a store object may be used from any thread (LMDB is opened with MDB_NOTLS, so
// transactions are not tied to the thread that opened it), but from one thread at a time: it
// is not to be used by two threads at once. Other processes may open the same folder: their
// reads see committed snapshots, and their writes wait for LMDB's writer lock. Within one
// process a folder can be open in only one store at a time (open() refuses a second).
//
// Cost: every call that writes is one transaction committed with fsync (LMDB's default
// durability, no MDB_NOSYNC): microseconds of work plus the disk's fsync, which dominates
// (milliseconds on a virtual disk). A writer with several records at hand commits them
// together with write(write_batch), one fsync for all.
//
// Errors: errc::invalid_input for names a key cannot hold (empty, a NUL byte, over LMDB's
// 511-byte key limit) and negative node ids; errc::io for LMDB failures (a full store says
// "raise memory map size") and for corrupt records (a value that does not decode), whose
// message names the record's key; errc::damaged for a damaged store: a data file shorter
// than its header pages say (found before LMDB maps it: reading past its end would be a
// SIGBUS), and a record whose checksum does not match it (record_seal.hpp), named by its key.
// check() lists every damaged and corrupt record at once.

#include "engine/error.hpp"
#include "engine/search_tree.hpp"
#include "engine/short_term_memory.hpp"
#include "engine/task_phase.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ks::memory {

class write_batch; // memory/write_batch.hpp

/// The campaign as a whole: what it was started with.
struct campaign_record {
  std::string config_text; ///< the config file's text, as started
  std::string started_at;  ///< ISO 8601, UTC
  std::string environment; ///< JSON text: GPUs, driver, CUDA, clocks as read
  int64_t runs = 0;        ///< how many times the campaign was started or resumed
  friend bool operator==(const campaign_record&, const campaign_record&) = default;
};

/// Where one task stands.
struct task_state {
  std::string name;
  std::string manifest; ///< absolute path
  engine::task_phase phase = engine::task_phase::pending;
  std::string stop_reason; ///< engine::stop_reason's name once stopped
  std::string stop_text;
  engine::node_id winner = engine::no_node;
  double winner_median_ms = 0;
  double reference_median_ms = 0;
  double roofline_floor_ms = 0;
  double cost_flops = 0;   ///< the task's useful floating-point operations (0: not yet known)
  double cost_bytes = 0;   ///< the fewest bytes it moves through device memory (0: not yet known)
  int32_t home_gpu = -1;   ///< the GPU index that timed its reference; -1 = not yet
  double home_load_ms = 0; ///< the load estimate its home was chosen with
  friend bool operator==(const task_state&, const task_state&) = default;
};

/// What a node's record does not hold: why it failed, and what the compiler said.
struct node_detail {
  std::string message;        ///< the failure message, or empty
  std::string diagnostics;    ///< compiler diagnostics (verbatim, possibly long)
  std::string resources_json; ///< kernel resources as JSON text, or empty
  std::string verify_json;    ///< verify statistics as JSON text, or empty
  int32_t timed_gpu = -1;     ///< the GPU index that gave the record's time; -1 = the task's
                              ///< home (a record without it)
  std::string profile_json;   ///< the node's profile (gpu::encode_profile), or empty
  std::string diagnosis_json; ///< the analyst's diagnosis (gpu::encode_diagnosis), or empty
  friend bool operator==(const node_detail&, const node_detail&) = default;
};

/// One model request's transcript as the store keeps it.
struct transcript_record {
  std::string task;  ///< the request's task; "_campaign" for a request of no task
  int64_t node = -1; ///< the node it was for; -1: none
  int64_t seq = 0;   ///< its place among the transcripts of (task, node), from 0, as written
  std::string json;  ///< the transcript's JSON text, verbatim (agents/transcript.hpp)
  friend bool operator==(const transcript_record&, const transcript_record&) = default;
};

/// Tries and gains of one skill on one op family and GPU.
struct skill_stat {
  int64_t tries = 0;
  int64_t successes = 0;
  double total_gain = 0;
  friend bool operator==(const skill_stat&, const skill_stat&) = default;
};

/// What check() found in a store.
struct store_check {
  int64_t records = 0;   ///< every record read
  int64_t unchecked = 0; ///< records written before checksums (read unchecked)
  /// Each record that is damaged (its checksum) or corrupt (it does not decode): its key for
  /// people ("nodes/relu/3") and why, by database then key.
  std::vector<std::pair<std::string, std::string>> damaged;
};

/// Says what a folder holds of a store's data file (data.mdb), without opening it.
enum class store_file : int32_t {
  missing = 0, ///< no data.mdb: open() creates a new store
  empty = 1,   ///< data.mdb of 0 bytes (emptied): open() makes it a new, empty store
  present = 2, ///< data.mdb as long as its header pages say
};

/// Checks the data file of the store in `dir` without opening it (opening creates or writes):
/// fails with errc::damaged, naming it and saying how much of it is missing, when it is
/// shorter than its header pages say. The skill memory's folder is checked the same way.
[[nodiscard]] engine::expected<store_file> check_store_file(const std::filesystem::path& dir);

/// The store of one workspace folder.
class store {
public:
  /// Opens (creating if needed) the store in `dir`; `map_bytes` bounds its size (the file
  /// grows only as data is written; an existing larger store keeps its size). Fails if the
  /// folder holds a store of another format, or is already open in this process; with
  /// errc::damaged, before LMDB maps it, if its data file is shorter than its header says
  /// (check_store_file).
  [[nodiscard]] static engine::expected<store> open(const std::filesystem::path& dir,
                                                    int64_t map_bytes = int64_t{1} << 34);

  store(store&&) noexcept;
  store& operator=(store&&) noexcept;
  ~store();

  /// Returns the folder the store was opened in.
  const std::filesystem::path& dir() const noexcept;

  // -- campaign and tasks ------------------------------------------------------------------
  /// Replaces the campaign record.
  [[nodiscard]] engine::expected<void> put_campaign(const campaign_record& record);
  /// Returns the campaign record; nullopt if none was written.
  [[nodiscard]] engine::expected<std::optional<campaign_record>> campaign() const;
  /// Replaces the state of task `state.name` (not empty).
  [[nodiscard]] engine::expected<void> put_task(const task_state& state);
  /// Returns the state of task `name`; nullopt if none was written.
  [[nodiscard]] engine::expected<std::optional<task_state>> task(const std::string& name) const;
  /// Returns every task's state, ordered by name (bytewise).
  [[nodiscard]] engine::expected<std::vector<task_state>> tasks() const;

  // -- nodes and sources -------------------------------------------------------------------
  /// Writes a node's record and detail together, in one transaction, replacing what was
  /// stored for (`task`, `node.id`); `node.id` must be >= 0.
  [[nodiscard]] engine::expected<void>
  put_node(const std::string& task, const engine::node_record& node, const node_detail& detail);
  /// Returns the task's nodes ordered by id (ready for search_tree::from_records).
  [[nodiscard]] engine::expected<std::vector<engine::node_record>>
  nodes(const std::string& task) const;
  /// Returns the detail of node `id` of `task`; nullopt if the node was never written.
  [[nodiscard]] engine::expected<std::optional<node_detail>> detail(const std::string& task,
                                                                    engine::node_id id) const;
  /// Stores the CUDA source `text` under its content hash `hash` (replacing any).
  [[nodiscard]] engine::expected<void> put_source(const std::string& hash, const std::string& text);
  /// Returns the source stored under `hash`; nullopt if none.
  [[nodiscard]] engine::expected<std::optional<std::string>> source(const std::string& hash) const;

  // -- short-term memory -------------------------------------------------------------------
  /// Records `outcome` for `parent` as short_term_memory::record_outcome does: replaces the
  /// outcome of the same plan (plan_key) on `parent`, keeping its place, or appends it.
  [[nodiscard]] engine::expected<void> put_outcome(const std::string& task, engine::node_id parent,
                                                   const engine::plan_outcome& outcome);
  /// Appends `round` to the repairs of `branch` as short_term_memory::record_repair does,
  /// numbering a round of 0 after the branch's last round.
  [[nodiscard]] engine::expected<void> put_repair(const std::string& task, engine::node_id branch,
                                                  const engine::repair_round& round);
  /// Returns the short-term memory of `task` rebuilt from its outcomes and repairs: equal to
  /// the memory on which the same record_outcome / record_repair calls were made.
  [[nodiscard]] engine::expected<engine::short_term_memory>
  short_term(const std::string& task) const;

  // -- per device and skill ----------------------------------------------------------------
  /// Stores the calibration of device `uuid` (`json`: JSON text, kept verbatim).
  [[nodiscard]] engine::expected<void> put_calibration(const std::string& uuid,
                                                       const std::string& json);
  /// Returns the calibration JSON text of device `uuid`; nullopt if none.
  [[nodiscard]] engine::expected<std::optional<std::string>>
  calibration(const std::string& uuid) const;
  /// Adds one try of `skill` on (`family`, `gpu`) atomically, in one write transaction: tries
  /// + 1, successes + 1 if `success`, total_gain + `gain` (as given, success or not).
  [[nodiscard]] engine::expected<void> add_skill_result(const std::string& skill,
                                                        const std::string& family,
                                                        const std::string& gpu, bool success,
                                                        double gain);
  /// Returns the statistics of `skill` on (`family`, `gpu`); all zero if never tried.
  [[nodiscard]] engine::expected<skill_stat>
  skill(const std::string& skill, const std::string& family, const std::string& gpu) const;

  // -- model transcripts -------------------------------------------------------------------
  /// Keeps the transcript `json` (one model request's JSON text, as the gateway writes its
  /// file) under the task and node it names, after the transcripts already kept there,
  /// whatever its request id, so that a resumed campaign replaces none. Fails with
  /// errc::invalid_input, saying what is wrong, when `json` is not such a transcript.
  [[nodiscard]] engine::expected<void> put_transcript(const std::string& json);
  /// Returns the transcripts of `task` ("_campaign": those of no task) ordered by node, those
  /// of no node first, then as written.
  [[nodiscard]] engine::expected<std::vector<transcript_record>>
  transcripts(const std::string& task) const;
  /// Returns the transcripts of node `node` (-1: of no node) of `task`, as written.
  [[nodiscard]] engine::expected<std::vector<transcript_record>>
  transcripts(const std::string& task, engine::node_id node) const;

  // -- batches ---------------------------------------------------------------------------
  /// Commits every write of `batch` in one transaction (one fsync), in order, each seeing the
  /// earlier ones; if one fails, none is written and its error is returned.
  [[nodiscard]] engine::expected<void> write(const write_batch& batch);

  /// Returns every key and a one-line summary of its value (for `kernelskill inspect`), by
  /// database then key: keys read "nodes/<task>/<id>", a damaged value "damaged: <why>" (its
  /// checksum), a corrupt one "corrupt: <why>" (it does not decode).
  [[nodiscard]] engine::expected<std::vector<std::pair<std::string, std::string>>> dump() const;

  /// Reads every record, checking its checksum and decoding it, and returns those that are
  /// damaged or corrupt, in one read transaction. Fails only when the store cannot be read.
  [[nodiscard]] engine::expected<store_check> check() const;

private:
  struct impl;
  explicit store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace ks::memory
