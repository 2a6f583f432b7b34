#include "memory/lmdb_env.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

// -- LMDB's header pages -------------------------------------------------------------------
//
// lmdb's mdb.c (0.9), on a 64-bit host: each of the first two pages of data.mdb starts with a
// page header (MDB_page: pgno, pad, flags, lower, upper: 16 bytes, flags at byte 10, P_META =
// 0x08), then an MDB_meta: magic (uint32, 0xBEEFC0DE) at 0, format version (uint32, 1) at 4,
// the fixed map address and the map size, then two MDB_db of 48 bytes from 24 (the page size
// is the first one's md_pad, at 24), the last page in use (pgno_t) at 120 and the
// transaction id at 128. LMDB uses the header with the larger transaction id. These offsets
// are LMDB 0.9's: the static_asserts stop the build where the layout could differ.
static_assert(MDB_VERSION_MAJOR == 0 && MDB_VERSION_MINOR == 9,
              "check_data_file reads LMDB 0.9's header pages");
static_assert(sizeof(size_t) == 8, "check_data_file reads a 64-bit host's header pages");

constexpr int64_t page_header_bytes = 16;
constexpr int64_t flags_at = 10;
constexpr uint16_t meta_page_flag = 0x08;
constexpr int64_t magic_at = 0, version_at = 4, page_size_at = 24, last_page_at = 120,
                  txnid_at = 128, meta_bytes = 136;
constexpr uint32_t lmdb_magic = 0xBEEFC0DE;
constexpr uint32_t lmdb_data_version = 1;

struct meta {
  uint32_t page_size = 0;
  uint64_t last_page = 0;
  uint64_t txnid = 0;
};

template <class T>
T read_at(const unsigned char* bytes, int64_t at) {
  T v{};
  std::memcpy(&v, bytes + at, sizeof v);
  return v;
}

// Reads the header page at `offset` of `fd`; nullopt when it is short or not LMDB's (`why`).
std::optional<meta> read_meta(int fd, int64_t offset, std::string& why) {
  unsigned char page[page_header_bytes + meta_bytes];
  ssize_t got = ::pread(fd, page, sizeof page, static_cast<off_t>(offset));
  if (got != static_cast<ssize_t>(sizeof page)) {
    why = got < 0 ? std::strerror(errno) : "the file ends inside it";
    return std::nullopt;
  }
  const unsigned char* m = page + page_header_bytes;
  if ((read_at<uint16_t>(page, flags_at) & meta_page_flag) == 0 ||
      read_at<uint32_t>(m, magic_at) != lmdb_magic ||
      read_at<uint32_t>(m, version_at) != lmdb_data_version) {
    why = "it is not an LMDB header page";
    return std::nullopt;
  }
  meta out{read_at<uint32_t>(m, page_size_at), read_at<uint64_t>(m, last_page_at),
           read_at<uint64_t>(m, txnid_at)};
  if (out.page_size < 256 || out.page_size > 65536 || (out.page_size & (out.page_size - 1)) != 0) {
    why = "its page size, " + std::to_string(out.page_size) + ", is none LMDB uses";
    return std::nullopt;
  }
  return out;
}

} // namespace

engine::expected<data_file> check_data_file(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "data.mdb";
  const std::string what = file.string() + " is damaged: ";
  const std::string cause =
      "; it was cut short after it was written (a full disk, a copy or transfer that did not "
      "finish, a crash of its machine) or changed by something else";
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return data_file::missing;
    return engine::fail(engine::errc::io,
                        "cannot read " + file.string() + ": " + std::strerror(errno));
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } closing{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return engine::fail(engine::errc::io,
                        "cannot read " + file.string() + ": " + std::strerror(errno));
  const auto size = static_cast<int64_t>(st.st_size);
  if (size == 0)
    return data_file::empty;

  std::string why;
  std::optional<meta> first = read_meta(fd, 0, why);
  if (!first)
    return engine::fail(engine::errc::damaged, what + "it is " + std::to_string(size) +
                                                   " bytes and its first header page is "
                                                   "unreadable (" +
                                                   why + ")" + cause);
  std::optional<meta> second = read_meta(fd, first->page_size, why);
  if (!second)
    return engine::fail(engine::errc::damaged, what + "it is " + std::to_string(size) +
                                                   " bytes and its second header page is "
                                                   "unreadable (" +
                                                   why + ")" + cause);
  const meta& newer = second->txnid > first->txnid ? *second : *first;
  uint64_t pages = 0;
  uint64_t needed = 0;
  if (__builtin_add_overflow(newer.last_page, uint64_t{1}, &pages) ||
      __builtin_mul_overflow(pages, uint64_t{newer.page_size}, &needed) ||
      needed > static_cast<uint64_t>(INT64_MAX))
    return engine::fail(engine::errc::damaged, what + "its header says its last page is " +
                                                   std::to_string(newer.last_page) +
                                                   ", more than any file holds" + cause);
  if (static_cast<uint64_t>(size) < needed)
    return engine::fail(engine::errc::damaged,
                        what + "it is " + std::to_string(size) + " bytes, its index says " +
                            std::to_string(needed) + " (" + std::to_string(pages) + " pages of " +
                            std::to_string(newer.page_size) + " bytes)" + cause);
  return data_file::present;
}

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
  // Before LMDB maps the file: a page past its end would be a SIGBUS when read.
  if (auto file = check_data_file(dir); !file)
    return tl::unexpected(file.error());

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
  if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID)
    return {engine::errc::damaged, (dir_ / "data.mdb").string() + " is damaged: " +
                                       std::string(what) + ": " + mdb_strerror(rc)};
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
