#pragma once

// Long-term skill memory: one LMDB environment in the folder the config names ([memory] path),
// shared by every campaign that names it, so that each learns from the ones before. It holds
// the skills themselves (seeded from the built-in skills/ folder, imported by users, later
// distilled from campaigns), the statistics per (skill, op family, GPU architecture), and the
// ledger of tries that makes every statistic count each try exactly once.
//
// Records (keys are UTF-8; NUL separates the parts of a composite key; <node> is 20 zero-padded
// digits as in record_codec.hpp; every value is one JSON object whose first members are the
// format version "v" and a type tag, sealed with a checksum of itself and its key as the
// campaign store's are: the JSON text, a NUL, "xxh3-64:" and 16 hex digits, record_seal.hpp):
//
//   database  key                              value
//   meta      "store"                          { "v": 1, "type": "skill_store",
//                                                "magic": "kernelskill-skills",
//                                                ["checksum": "xxh3-64"] }
//   skills    <id>                             { "v": 1, "type": "skill", "origin": "builtin" |
//                                                "user" | "learned", "version": int,
//                                                "content_hash": str, "added_at": str,
//                                                "provenance": str,
//                                                "files": { name: text, ... } }
//   stats     <skill> \0 <family> \0 <arch>    { "v": 1, "type": "skill_stats", "tries": int,
//                                                "compile_failures": int, "wrong_results": int,
//                                                "other_failures": int, "acceptances": int,
//                                                "rejections": int, "log_speedup_sum": real,
//                                                "best_speedup": real, "best_template": str,
//                                                "best_params": { str: str }, "best_task": str,
//                                                "last_used": str }
//   tries     <run> \0 <task> \0 <node>        { "v": 1, "type": "skill_try", "skill": str,
//                                                "skill_version": int, "template": str,
//                                                "params": { str: str }, "family": str,
//                                                "arch": str, "task": str, "node": int,
//                                                "parent": int, "outcome": outcome_kind name,
//                                                "failure_kind": str, "gain": real,
//                                                "reference_speedup": real, "at": str }
//
// <run> names the campaign a try belongs to (its output folder and start time), so that two
// campaigns' node 3 are two tries. record_try writes the try and adds it to its statistic in
// one write transaction, and does nothing when the ledger already holds the key: a statistic
// counts each try once whatever is killed when (a kill before the commit leaves neither, after
// it both), and a campaign resumed after a kill can offer every settled node again
// (reconcile) to count those whose try the kill lost. A store of another format version fails
// to open with a message saying which.
//
// Damage (errc::damaged): a data file shorter than its header pages say is refused before
// LMDB maps it, and a record whose checksum does not match is refused when read, naming it;
// both messages say how to go on (restore the folder, or move it aside for a new one). A
// memory whose header names no checksum was written before records carried one: its unsealed
// records read unchecked, and what is written into it since is sealed.

#include "engine/error.hpp"
#include "engine/skill.hpp"
#include "engine/skill_library.hpp"
#include "engine/skill_stats.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ks::memory {

/// One skill as the memory keeps it: its files and where it came from.
struct stored_skill {
  std::string id;
  engine::skill_origin origin = engine::skill_origin::builtin;
  int64_t version = 1;
  std::string content_hash;
  std::string added_at;   ///< ISO 8601 UTC
  std::string provenance; ///< for people: "built-in", "imported from FILE", "task x on sm_90a"
  std::map<std::string, std::string> files;

  friend bool operator==(const stored_skill&, const stored_skill&) = default;
};

/// What seeding did to one built-in skill.
enum class seed_action { added, refreshed, unchanged, kept_user };

/// Returns "added", "refreshed", "unchanged" or "kept (user's)".
const char* to_string(seed_action a) noexcept;

/// One statistic with its key.
struct stat_row {
  std::string skill;
  std::string family;
  std::string arch;
  engine::skill_stats stats;
};

/// The long-term skill memory of one folder.
class skill_store {
public:
  /// Opens (creating if needed) the skill memory in `dir`. Fails when the folder holds a store
  /// of another format, or is already open in this process; with errc::damaged when its data
  /// file is shorter than its header says (checked before LMDB maps it).
  [[nodiscard]] static engine::expected<skill_store> open(const std::filesystem::path& dir,
                                                          int64_t map_bytes = int64_t{1} << 32);

  /// Checks the memory's data file in `dir` without opening it (opening creates and writes):
  /// fails with errc::damaged, as open() would, when it is shorter than its header says.
  [[nodiscard]] static engine::expected<void> check_file(const std::filesystem::path& dir);

  skill_store(skill_store&&) noexcept;
  skill_store& operator=(skill_store&&) noexcept;
  ~skill_store();

  /// Returns the folder.
  const std::filesystem::path& dir() const noexcept;

  // -- skills ------------------------------------------------------------------------------

  /// Seeds the built-in skills `builtin` in one transaction: a skill the memory lacks is added,
  /// a built-in one whose content hash changed is replaced, a user's or learned one with the
  /// same id is kept as it is. Every skill is validated first (engine::load_skill); an invalid
  /// one fails the whole seeding, changing nothing. Returns what happened to each, by id.
  [[nodiscard]] engine::expected<std::vector<std::pair<std::string, seed_action>>>
  seed(const std::vector<engine::skill_files>& builtin, const std::string& now);

  /// Imports `skills` as the user's (origin user unless learned), replacing any skill of the
  /// same id, all in one transaction: every one is validated first, and if one is invalid
  /// nothing is written (the error names it).
  [[nodiscard]] engine::expected<void> import_skills(std::vector<stored_skill> skills,
                                                     const std::string& now);

  /// Returns every stored skill, by id.
  [[nodiscard]] engine::expected<std::vector<stored_skill>> skills() const;

  /// Returns the stored skill `id`; nullopt if none.
  [[nodiscard]] engine::expected<std::optional<stored_skill>> skill(const std::string& id) const;

  /// Returns every stored skill loaded and validated, as a library. A stored skill that no
  /// longer loads (written by another version) fails with its FILE:LINE:COL problems.
  [[nodiscard]] engine::expected<engine::skill_library> library() const;

  // -- statistics --------------------------------------------------------------------------

  /// Adds try `t` of campaign `run` to its statistic (t.skill, t.family, t.arch) and writes
  /// it to the ledger, in one transaction; does nothing when the ledger already holds
  /// (run, t.task, t.node). Returns whether it counted the try now. A pending try is refused
  /// (invalid_input): only settled tries count.
  [[nodiscard]] engine::expected<bool> record_try(const std::string& run,
                                                  const engine::skill_try& t);

  /// Returns the statistics of every skill on (`family`, `arch`), by skill id.
  [[nodiscard]] engine::expected<std::map<std::string, engine::skill_stats>>
  stats(const std::string& family, const std::string& arch) const;

  /// Returns every statistic, by skill, family, then architecture.
  [[nodiscard]] engine::expected<std::vector<stat_row>> all_stats() const;

  /// Returns the tries of campaign `run` in the ledger, by task and node.
  [[nodiscard]] engine::expected<std::vector<engine::skill_try>>
  tries(const std::string& run) const;

  /// Returns every key and a one-line summary of its value (for `kernelskill inspect`).
  [[nodiscard]] engine::expected<std::vector<std::pair<std::string, std::string>>> dump() const;

private:
  struct impl;
  explicit skill_store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

/// Returns `skills` as an export file: JSON { "format": "kernelskill-skills", "version": 1,
/// "skills": [ { "id", "origin", "version", "content_hash", "provenance", "files" } ] }.
std::string export_skills(const std::vector<stored_skill>& skills);

/// Reads an export file; fails with invalid_input naming what is malformed. The skills are
/// not validated here (import_skills does that).
[[nodiscard]] engine::expected<std::vector<stored_skill>> parse_skill_export(std::string_view text);

} // namespace ks::memory
