#include "memory/lmdb_env.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <system_error>
#include <utility>

namespace ks::memory::lmdb {

namespace {

MDB_val to_val(std::string_view s) {
  // LMDB never writes through a key or a value given to it: the const_cast is safe.
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view to_view(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

} // namespace

// -- env -----------------------------------------------------------------------------------

env::env(MDB_env* e, std::filesystem::path dir, int64_t map_bytes)
  : env_(e), dir_(std::move(dir)), map_bytes_(map_bytes) {}

env::env(env&& other) noexcept
  : env_(std::exchange(other.env_, nullptr)), dir_(std::move(other.dir_)),
    map_bytes_(other.map_bytes_) {}

env& env::operator=(env&& other) noexcept {
  if (this != &other) {
    if (env_ != nullptr)
      mdb_env_close(env_);
    env_ = std::exchange(other.env_, nullptr);
    dir_ = std::move(other.dir_);
    map_bytes_ = other.map_bytes_;
  }
  return *this;
}

env::~env() {
  if (env_ != nullptr)
    mdb_env_close(env_);
}

engine::expected<env> env::open(const std::filesystem::path& dir, int64_t map_bytes,
                                int32_t max_dbs) {
  if (map_bytes <= 0)
    return engine::fail(engine::errc::invalid_input,
                        "the store at " + dir.string() + ": memory map size must be positive");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return engine::fail(engine::errc::io,
                        "cannot create the store folder " + dir.string() + ": " + ec.message());

  // LMDB wants a multiple of the OS page size.
  const int64_t page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  map_bytes = (map_bytes + page - 1) / page * page;

  MDB_env* raw = nullptr;
  if (int rc = mdb_env_create(&raw); rc != 0)
    return engine::fail(engine::errc::io,
                        "the store at " + dir.string() +
                            ": cannot create an environment: " + mdb_strerror(rc));
  env e(raw, dir, map_bytes); // closes `raw` on every failure below
  if (int rc = mdb_env_set_mapsize(raw, static_cast<size_t>(map_bytes)); rc != 0)
    return tl::unexpected(e.error(rc, "setting the memory map size"));
  if (int rc = mdb_env_set_maxdbs(raw, static_cast<MDB_dbi>(max_dbs)); rc != 0)
    return tl::unexpected(e.error(rc, "setting the number of databases"));
  if (int rc = mdb_env_open(raw, dir.c_str(), MDB_NOTLS, 0664); rc != 0)
    return tl::unexpected(e.error(rc, "opening"));
  // LMDB 0.9.24 opens data.mdb's main descriptor without O_CLOEXEC (its lock file and its
  // write descriptor have it): without this every nvcc and worker we spawn would hold the
  // store's data file open.
  mdb_filehandle_t fd = -1;
  if (mdb_env_get_fd(raw, &fd) == 0 && fd >= 0) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0)
      return tl::unexpected(e.error(errno, "marking its data file close-on-exec"));
  }
  int dead = 0;
  if (int rc = mdb_reader_check(raw, &dead); rc != 0)
    return tl::unexpected(e.error(rc, "clearing the reader slots of dead processes"));

  // An existing store may have been written with a larger map: LMDB then uses the larger.
  MDB_envinfo info{};
  if (mdb_env_info(raw, &info) == 0)
    e.map_bytes_ = static_cast<int64_t>(info.me_mapsize);
  return e;
}

engine::error env::error(int rc, std::string_view what) const {
  std::string where = "the store at " + dir_.string();
  if (rc == MDB_MAP_FULL)
    return {engine::errc::io, where + " is full (memory map of " + std::to_string(map_bytes_) +
                                  " bytes) while " + std::string(what) + ": raise memory map size"};
  return {engine::errc::io, where + ": " + std::string(what) + ": " + mdb_strerror(rc)};
}

// -- txn -----------------------------------------------------------------------------------

engine::expected<txn> txn::begin(const env& e, access mode) {
  MDB_txn* raw = nullptr;
  unsigned flags = mode == access::read_only ? MDB_RDONLY : 0u;
  if (int rc = mdb_txn_begin(e.get(), nullptr, flags, &raw); rc != 0)
    return tl::unexpected(e.error(rc, "beginning a transaction"));
  return txn(&e, raw);
}

txn::txn(txn&& other) noexcept : env_(other.env_), txn_(std::exchange(other.txn_, nullptr)) {}

txn& txn::operator=(txn&& other) noexcept {
  if (this != &other) {
    if (txn_ != nullptr)
      mdb_txn_abort(txn_);
    env_ = other.env_;
    txn_ = std::exchange(other.txn_, nullptr);
  }
  return *this;
}

txn::~txn() {
  if (txn_ != nullptr)
    mdb_txn_abort(txn_);
}

engine::expected<void> txn::commit() {
  // mdb_txn_commit frees the transaction whatever it returns.
  int rc = mdb_txn_commit(std::exchange(txn_, nullptr));
  if (rc != 0)
    return tl::unexpected(env_->error(rc, "committing"));
  return {};
}

engine::expected<MDB_dbi> txn::open_db(const char* name, access mode) {
  MDB_dbi dbi = 0;
  unsigned flags = mode == access::read_write ? MDB_CREATE : 0u;
  int rc = mdb_dbi_open(txn_, name, flags, &dbi);
  if (rc == MDB_NOTFOUND)
    return engine::fail(engine::errc::not_found,
                        "the store at " + env_->dir().string() + " has no database '" + name + "'");
  if (rc != 0)
    return tl::unexpected(env_->error(rc, std::string("opening database '") + name + "'"));
  return dbi;
}

engine::expected<std::optional<std::string_view>> txn::get(MDB_dbi db, std::string_view key) const {
  MDB_val k = to_val(key);
  MDB_val v{};
  int rc = mdb_get(txn_, db, &k, &v);
  if (rc == MDB_NOTFOUND)
    return std::optional<std::string_view>{};
  if (rc != 0)
    return tl::unexpected(env_->error(rc, "reading"));
  return std::optional<std::string_view>{to_view(v)};
}

engine::expected<void> txn::put(MDB_dbi db, std::string_view key, std::string_view value,
                                std::string_view what) {
  MDB_val k = to_val(key);
  MDB_val v = to_val(value);
  if (int rc = mdb_put(txn_, db, &k, &v, 0); rc != 0)
    return tl::unexpected(env_->error(rc, what));
  return {};
}

engine::expected<void> txn::scan(
    MDB_dbi db, std::string_view prefix,
    const std::function<engine::expected<bool>(std::string_view, std::string_view)>& visit) const {
  MDB_cursor* raw = nullptr;
  if (int rc = mdb_cursor_open(txn_, db, &raw); rc != 0)
    return tl::unexpected(env_->error(rc, "opening a cursor"));
  std::unique_ptr<MDB_cursor, decltype(&mdb_cursor_close)> cursor(raw, &mdb_cursor_close);

  MDB_val k = to_val(prefix);
  MDB_val v{};
  int rc = mdb_cursor_get(raw, &k, &v, prefix.empty() ? MDB_FIRST : MDB_SET_RANGE);
  for (; rc == 0; rc = mdb_cursor_get(raw, &k, &v, MDB_NEXT)) {
    std::string_view key = to_view(k);
    if (!key.starts_with(prefix))
      return {};
    auto more = visit(key, to_view(v));
    if (!more)
      return tl::unexpected(more.error());
    if (!*more)
      return {};
  }
  if (rc != MDB_NOTFOUND)
    return tl::unexpected(env_->error(rc, "scanning"));
  return {};
}

} // namespace ks::memory::lmdb
