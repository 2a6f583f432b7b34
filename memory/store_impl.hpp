#pragma once

// The inside of memory::store, shared by its source files (store.cpp: opening, campaign,
// tasks, nodes, sources; store_short_term.cpp: plan outcomes and repairs; store_skills.cpp:
// calibrations, skill statistics, dump; store_transcripts.cpp: model transcripts;
// write_batch.cpp: batches). Not for use outside memory/.

#include "memory/lmdb_env.hpp"
#include "memory/record_codec.hpp"
#include "memory/record_seal.hpp"
#include "memory/store.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ks::memory {

namespace detail {

/// Holds a folder's place in the process-wide set of open stores for as long as it lives:
/// LMDB forbids opening one environment twice in one process.
class registration {
public:
  /// Creates `dir` if needed and claims it; fails if a store on it is already open here.
  [[nodiscard]] static engine::expected<registration> claim(const std::filesystem::path& dir);

  registration(registration&& other) noexcept : dir_(std::exchange(other.dir_, {})) {}
  registration& operator=(registration&&) = delete;
  ~registration();

private:
  explicit registration(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

/// Checks that `name` (what the caller calls `what`) is fit for a key: not empty, no NUL.
[[nodiscard]] engine::expected<void> check_name(std::string_view what, std::string_view name);

/// Checks that `id` (what the caller calls `what`) is a node id >= 0.
[[nodiscard]] engine::expected<void> check_id(std::string_view what, engine::node_id id);

} // namespace detail

/// Returns the error for a record at `key` of `db`, in the store or skill memory `where`
/// ("the store at DIR"), whose checksum does not match it because of `why` (errc::damaged).
engine::error damaged_record(std::string_view where, std::string_view db, std::string_view key,
                             const std::string& why);

/// Holds the environment and the handles of its named databases.
struct store::impl {
  detail::registration reg; // declared first: released after the environment is closed
  lmdb::env env;
  MDB_dbi meta = 0, tasks = 0, nodes = 0, details = 0, sources = 0, outcomes = 0, repairs = 0,
          calibration = 0, skills = 0, transcripts = 0;
  seal::rule checksums = seal::rule::required; ///< from the store's header (store::open)

  /// Returns the error for a value at `key` of `db` that did not decode because of `why`.
  engine::error corrupt(const char* db, std::string_view key, const std::string& why) const {
    return {engine::errc::io, "corrupt record '" + records::display_key(db, key) +
                                  "' in the store at " + env.dir().string() + ": " + why};
  }

  /// Returns the body of the value at `key` of `db` once its checksum matches (record_seal.hpp);
  /// errc::damaged naming the record otherwise.
  engine::expected<std::string_view> open(const char* db, std::string_view key,
                                          std::string_view value) const {
    auto opened = seal::open(key, value, checksums);
    if (!opened)
      return tl::unexpected(
          damaged_record("the store at " + env.dir().string(), db, key, opened.error()));
    return opened->body;
  }

  /// Checks `value`'s checksum and decodes its body with `decode_fn`, naming `db` and `key` if
  /// it is damaged or corrupt.
  template <class Decode>
  auto decode(const char* db, std::string_view key, std::string_view value, Decode decode_fn) const
      -> engine::expected<typename decltype(decode_fn(value))::value_type> {
    auto body = open(db, key, value);
    if (!body)
      return tl::unexpected(body.error());
    auto d = decode_fn(*body);
    if (!d)
      return tl::unexpected(corrupt(db, key, d.error()));
    return std::move(*d);
  }

  /// Writes `value` sealed with its checksum at `key` of `db` inside `t`, checking LMDB's key
  /// limit first.
  [[nodiscard]] engine::expected<void> put(lmdb::txn& t, MDB_dbi dbi, const char* db,
                                           std::string_view key, std::string_view value) const {
    const auto limit = static_cast<size_t>(mdb_env_get_maxkeysize(env.get()));
    if (key.size() > limit)
      return engine::fail(engine::errc::invalid_input, "the key " + records::display_key(db, key) +
                                                           " has " + std::to_string(key.size()) +
                                                           " bytes; the store allows " +
                                                           std::to_string(limit));
    return t.put(dbi, key, seal::sealed(key, value), "writing " + records::display_key(db, key));
  }

  /// Runs `body(txn)` in one read-write transaction; commits it if `body` succeeded, else
  /// aborts it so that nothing of it is written.
  template <class Body>
  [[nodiscard]] engine::expected<void> write(Body body) const {
    auto t = lmdb::txn::begin(env, lmdb::access::read_write);
    if (!t)
      return tl::unexpected(t.error());
    if (auto ok = body(*t); !ok)
      return ok;
    return t->commit();
  }

  /// Runs `body(txn)` in one read-only transaction (a snapshot) and returns what it returns.
  template <class Body>
  auto read(Body body) const -> decltype(body(std::declval<lmdb::txn&>())) {
    auto t = lmdb::txn::begin(env, lmdb::access::read_only);
    if (!t)
      return tl::unexpected(t.error());
    return body(*t);
  }

  /// Calls `visit(db, key, value)` for every record of the store, by database then key, in `t`.
  template <class Visit>
  [[nodiscard]] engine::expected<void> each_record(const lmdb::txn& t, Visit visit) const {
    const MDB_dbi dbis[] = {meta,     tasks,   nodes,       details, sources,
                            outcomes, repairs, calibration, skills,  transcripts};
    static_assert(std::size(dbis) == std::size(records::all_dbs));
    for (size_t i = 0; i < std::size(dbis); ++i) {
      auto ok = t.scan(dbis[i], "",
                       [&](std::string_view key, std::string_view value) -> engine::expected<bool> {
                         visit(records::all_dbs[i], key, value);
                         return true;
                       });
      if (!ok)
        return ok;
    }
    return {};
  }

  // -- the writes, inside a given transaction (store.cpp, store_short_term.cpp,
  //    store_skills.cpp, store_transcripts.cpp); each checks its names first -----------------

  [[nodiscard]] engine::expected<void> put_campaign(lmdb::txn& t,
                                                    const campaign_record& record) const;
  [[nodiscard]] engine::expected<void> put_task(lmdb::txn& t, const task_state& state) const;
  [[nodiscard]] engine::expected<void> put_node(lmdb::txn& t, const std::string& task,
                                                const engine::node_record& node,
                                                const node_detail& detail) const;
  [[nodiscard]] engine::expected<void> put_source(lmdb::txn& t, const std::string& hash,
                                                  const std::string& text) const;
  [[nodiscard]] engine::expected<void> put_outcome(lmdb::txn& t, const std::string& task,
                                                   engine::node_id parent,
                                                   const engine::plan_outcome& outcome) const;
  [[nodiscard]] engine::expected<void> put_repair(lmdb::txn& t, const std::string& task,
                                                  engine::node_id branch,
                                                  const engine::repair_round& round) const;
  [[nodiscard]] engine::expected<void> put_calibration(lmdb::txn& t, const std::string& uuid,
                                                       const std::string& json) const;
  [[nodiscard]] engine::expected<void> add_skill_result(lmdb::txn& t, const std::string& skill,
                                                        const std::string& family,
                                                        const std::string& gpu, bool success,
                                                        double gain) const;
  [[nodiscard]] engine::expected<void> put_transcript(lmdb::txn& t, const std::string& json) const;

  /// Returns the transcripts of `task` under `prefix` ("<task>\0" or "<task>\0<node>\0"), in
  /// key order, each checked against its key (store_transcripts.cpp).
  [[nodiscard]] engine::expected<std::vector<transcript_record>>
  scan_transcripts(const lmdb::txn& t, const std::string& task, const std::string& prefix) const;

  /// Reads the value at `key` of `db` and decodes it; nullopt if there is none.
  template <class Decode>
  auto get(const lmdb::txn& t, MDB_dbi dbi, const char* db, std::string_view key,
           Decode decode_fn) const
      -> engine::expected<
          std::optional<typename decltype(decode_fn(std::string_view{}))::value_type>> {
    using value_type = typename decltype(decode_fn(std::string_view{}))::value_type;
    auto v = t.get(dbi, key);
    if (!v)
      return tl::unexpected(v.error());
    if (!*v)
      return std::optional<value_type>{};
    auto d = decode(db, key, **v, decode_fn);
    if (!d)
      return tl::unexpected(d.error());
    return std::optional<value_type>{std::move(*d)};
  }
};

} // namespace ks::memory
