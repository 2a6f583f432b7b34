#pragma once

// The LMDB store of one workspace: everything a campaign must not lose. One environment per
// folder; one writer (the store actor), any number of readers. Every record is written in
// its own transaction (or a batch in one), so a kill -9 loses at most the write in flight.
//
// Records (keys are UTF-8 strings; values are JSON objects with "v":1, see store.cpp's
// grammar): campaign metadata; per task its state; per task and node its node_record and its
// detail (failure message, diagnostics, kernel resources); sources by content hash; per task
// the short-term memory (plan outcomes per parent, repair rounds per branch); calibrations
// per device uuid; skill statistics per (skill, op family, gpu name).

#include "engine/error.hpp"
#include "engine/search_tree.hpp"
#include "engine/short_term_memory.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ks::memory {

/// The campaign as a whole: what it was started with.
struct campaign_record {
  std::string config_text;     ///< the config file's text, as started
  std::string started_at;      ///< ISO 8601, UTC
  std::string environment;     ///< JSON text: GPUs, driver, CUDA, clocks as read
  int64_t runs = 0;            ///< how many times the campaign was started or resumed
  friend bool operator==(const campaign_record&, const campaign_record&) = default;
};

/// Where one task stands.
struct task_state {
  std::string name;
  std::string manifest;        ///< absolute path
  std::string phase = "pending";  ///< pending, searching, finals, done, failed
  std::string stop_reason;     ///< engine::stop_reason's name once stopped
  std::string stop_text;
  engine::node_id winner = engine::no_node;
  double winner_median_ms = 0;
  double reference_median_ms = 0;
  double roofline_floor_ms = 0;
  friend bool operator==(const task_state&, const task_state&) = default;
};

/// What a node's record does not hold: why it failed, and what the compiler said.
struct node_detail {
  std::string message;         ///< the failure message, or empty
  std::string diagnostics;     ///< compiler diagnostics (verbatim, possibly long)
  std::string resources_json;  ///< kernel resources as JSON text, or empty
  std::string verify_json;     ///< verify statistics as JSON text, or empty
  friend bool operator==(const node_detail&, const node_detail&) = default;
};

/// Tries and gains of one skill on one op family and GPU.
struct skill_stat {
  int64_t tries = 0;
  int64_t successes = 0;
  double total_gain = 0;
  friend bool operator==(const skill_stat&, const skill_stat&) = default;
};

/// The store of one workspace folder.
class store {
public:
  /// Opens (creating if needed) the store in `dir`; `map_bytes` bounds its size.
  static engine::expected<store> open(const std::filesystem::path& dir,
                                      int64_t map_bytes = int64_t{1} << 34);

  store(store&&) noexcept;
  store& operator=(store&&) noexcept;
  ~store();

  // -- campaign and tasks ------------------------------------------------------------------
  engine::expected<void> put_campaign(const campaign_record& record);
  engine::expected<std::optional<campaign_record>> campaign() const;
  engine::expected<void> put_task(const task_state& state);
  engine::expected<std::optional<task_state>> task(const std::string& name) const;
  engine::expected<std::vector<task_state>> tasks() const;

  // -- nodes and sources -------------------------------------------------------------------
  /// Writes a node's record and detail together, in one transaction.
  engine::expected<void> put_node(const std::string& task, const engine::node_record& node,
                                  const node_detail& detail);
  /// Returns the task's nodes ordered by id (ready for search_tree::from_records).
  engine::expected<std::vector<engine::node_record>> nodes(const std::string& task) const;
  engine::expected<std::optional<node_detail>> detail(const std::string& task,
                                                      engine::node_id id) const;
  engine::expected<void> put_source(const std::string& hash, const std::string& text);
  engine::expected<std::optional<std::string>> source(const std::string& hash) const;

  // -- short-term memory -------------------------------------------------------------------
  engine::expected<void> put_outcome(const std::string& task, engine::node_id parent,
                                     const engine::plan_outcome& outcome);
  engine::expected<void> put_repair(const std::string& task, engine::node_id branch,
                                    const engine::repair_round& round);
  engine::expected<engine::short_term_memory> short_term(const std::string& task) const;

  // -- per device and skill ----------------------------------------------------------------
  engine::expected<void> put_calibration(const std::string& uuid, const std::string& json);
  engine::expected<std::optional<std::string>> calibration(const std::string& uuid) const;
  engine::expected<void> add_skill_result(const std::string& skill, const std::string& family,
                                          const std::string& gpu, bool success, double gain);
  engine::expected<skill_stat> skill(const std::string& skill, const std::string& family,
                                     const std::string& gpu) const;

  /// Returns every key and a one-line summary of its value (for `kernelskill inspect`).
  engine::expected<std::vector<std::pair<std::string, std::string>>> dump() const;

private:
  struct impl;
  explicit store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace ks::memory
