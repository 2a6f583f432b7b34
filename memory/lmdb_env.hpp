#pragma once

// A small RAII layer over LMDB's C API: an environment, a transaction, and the few operations
// the store needs (get, put, a prefix scan), each returning engine::expected with a message
// that names the store's folder. Nothing here knows the store's records (see record_codec.hpp).
//
// The environment is opened with MDB_NOTLS: a read transaction is not tied to the thread that
// began it, so the owner of an `env` may move between threads (an actor migrates between
// scheduler workers). It is still single-owner: no two threads may use one `env` or one `txn`
// at once. Durability is LMDB's default: a commit returns after fsync, so a committed write
// survives a kill -9 and a power loss; a transaction never committed leaves no trace.
//
// LMDB maps its data file and trusts it: a page past the file's end is a SIGBUS when touched,
// so a data file cut short (a full disk, a copy that did not finish) would take the process
// down on every read. env::open therefore checks the file against its own header pages first
// (check_data_file), and LMDB's reports of damage (MDB_CORRUPTED, MDB_PAGE_NOTFOUND,
// MDB_INVALID) become errc::damaged. Damage inside LMDB's pages that keeps the file's length
// (a changed byte in a B-tree page rather than in a value) is not detected here: LMDB 0.9 has
// no page checksums; values carry their own (record_seal.hpp).

#include "engine/error.hpp"

#include <lmdb.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ks::memory::lmdb {

/// Says whether a transaction may write.
enum class access : int32_t {
  read_only = 0,
  read_write = 1,
};

/// Says what a folder holds of an environment's data file (data.mdb).
enum class data_file : int32_t {
  missing = 0, ///< no data.mdb: opening creates a new environment
  empty = 1,   ///< data.mdb of 0 bytes: opening makes it a new, empty environment
  present = 2, ///< data.mdb as long as its header pages say
};

/// Checks `dir`/data.mdb without mapping it: reads its two header pages (LMDB's MDB_meta, as
/// LMDB 0.9 lays them out) and compares the file's size with the pages the newer header says
/// are in use, (last page + 1) x page size. Fails with errc::damaged, naming the file, both
/// sizes and what to suspect, when the file is shorter, too short to hold its header pages,
/// or its header pages are not LMDB's; with errc::io when it cannot be read.
[[nodiscard]] engine::expected<data_file> check_data_file(const std::filesystem::path& dir);

/// Owns one MDB_env: the data and lock files of one folder.
class env {
public:
  /// Opens (creating the folder and files if needed) the environment in `dir`, with a memory
  /// map of `map_bytes` bytes (rounded up to the page size; the file grows only as data is
  /// written) and room for `max_dbs` named databases. Clears the reader slots of dead
  /// processes, so that a killed reader does not pin old pages forever. A data file that
  /// check_data_file finds damaged is not opened (errc::damaged).
  [[nodiscard]] static engine::expected<env> open(const std::filesystem::path& dir,
                                                  int64_t map_bytes, int32_t max_dbs);

  env(env&& other) noexcept;
  env& operator=(env&& other) noexcept;
  env(const env&) = delete;
  env& operator=(const env&) = delete;
  ~env();

  /// Returns the handle, for LMDB calls this layer does not wrap.
  MDB_env* get() const noexcept { return env_; }

  /// Returns the folder.
  const std::filesystem::path& dir() const noexcept { return dir_; }

  /// Returns the size of the memory map in bytes: the most the store may hold.
  int64_t map_bytes() const noexcept { return map_bytes_; }

  /// Returns an error for LMDB return code `rc` met while doing `what` ("writing nodes/x/1"):
  /// errc::io with a message naming the folder; MDB_MAP_FULL says to raise the map size;
  /// LMDB's reports of a damaged file (MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INVALID) are
  /// errc::damaged.
  engine::error error(int rc, std::string_view what) const;

private:
  env(MDB_env* e, std::filesystem::path dir, int64_t map_bytes);

  MDB_env* env_ = nullptr;
  std::filesystem::path dir_;
  int64_t map_bytes_ = 0;
};

/// Owns one transaction; aborts it on destruction unless it was committed.
class txn {
public:
  /// Begins a transaction on `e`, which must outlive it. A read-write transaction waits for
  /// the environment's single writer lock (held across processes).
  [[nodiscard]] static engine::expected<txn> begin(const env& e, access mode);

  txn(txn&& other) noexcept;
  txn& operator=(txn&& other) noexcept;
  txn(const txn&) = delete;
  txn& operator=(const txn&) = delete;
  ~txn();

  /// Commits; after it returns (successfully or not) the transaction is over.
  [[nodiscard]] engine::expected<void> commit();

  /// Opens the named database `name`, creating it when `mode` is read_write. In a read-only
  /// transaction a missing database is errc::not_found.
  [[nodiscard]] engine::expected<MDB_dbi> open_db(const char* name, access mode);

  /// Returns the value of `key` in `db`, or nullopt if there is none. The view points into
  /// the map: it is valid until this transaction ends or writes again.
  [[nodiscard]] engine::expected<std::optional<std::string_view>> get(MDB_dbi db,
                                                                      std::string_view key) const;

  /// Writes `value` under `key` in `db`, replacing any value there; `what` names the write in
  /// an error ("writing nodes/softmax/3").
  [[nodiscard]] engine::expected<void> put(MDB_dbi db, std::string_view key, std::string_view value,
                                           std::string_view what = "writing");

  /// Calls `visit(key, value)` for every key of `db` that starts with `prefix`, in key order,
  /// until `visit` returns false or an error (which scan returns). An empty prefix visits all.
  [[nodiscard]] engine::expected<void> scan(
      MDB_dbi db, std::string_view prefix,
      const std::function<engine::expected<bool>(std::string_view, std::string_view)>& visit) const;

  /// Returns the handle, for LMDB calls this layer does not wrap.
  MDB_txn* get() const noexcept { return txn_; }

private:
  txn(const env* e, MDB_txn* t) : env_(e), txn_(t) {}

  const env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
};

} // namespace ks::memory::lmdb
