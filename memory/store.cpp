// The store: each call is one LMDB transaction over the records of record_codec.hpp.
//
// Writes are one read-write transaction per call, committed (fsync) before the call returns,
// so a write that returned survives a kill -9 and one that did not leaves nothing. A write
// that must read first (put_outcome's replace-by-plan_key, put_repair's numbering,
// add_skill_result's increment) reads inside its own write transaction: LMDB's single writer
// lock, held across processes, makes the read-modify-write atomic. Reads are read-only
// transactions: a snapshot, never blocked by the writer.
//
// LMDB forbids opening one environment twice in one process (closing either handle drops the
// other's POSIX locks), so open() keeps a process-wide set of open folders and refuses a second
// store on the same folder.

#include "memory/store.hpp"

#include "memory/store_impl.hpp"

#include <mutex>
#include <set>
#include <utility>

namespace ks::memory {

namespace r = records;

using engine::errc;
using engine::expected;

// -- the folders open in this process ----------------------------------------------------------

namespace {

std::mutex open_dirs_mutex;
std::set<std::string> open_dirs;

} // namespace

namespace detail {

expected<registration> registration::claim(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::path canonical = ec ? dir : std::filesystem::weakly_canonical(dir, ec);
  if (ec)
    return engine::fail(errc::io,
                        "cannot create the store folder " + dir.string() + ": " + ec.message());
  std::lock_guard lock(open_dirs_mutex);
  if (!open_dirs.insert(canonical.string()).second)
    return engine::fail(errc::invalid_input,
                        "the store at " + dir.string() +
                            " is already open in this process (LMDB allows one handle)");
  return registration(canonical.string());
}

registration::~registration() {
  if (!dir_.empty()) {
    std::lock_guard lock(open_dirs_mutex);
    open_dirs.erase(dir_);
  }
}

// -- checks of the caller's names --------------------------------------------------------------

expected<void> check_name(std::string_view what, std::string_view name) {
  if (name.empty())
    return engine::fail(errc::invalid_input, std::string(what) + " must not be empty");
  if (name.find('\0') != std::string_view::npos)
    return engine::fail(errc::invalid_input,
                        std::string(what) + " '" + std::string(name.substr(0, name.find('\0'))) +
                            "\\0...' contains a NUL byte, which the store's keys reserve");
  return {};
}

expected<void> check_id(std::string_view what, engine::node_id id) {
  if (id < 0)
    return engine::fail(errc::invalid_input,
                        std::string(what) + " must be a node id >= 0, not " + std::to_string(id));
  return {};
}

} // namespace detail

using detail::check_id;
using detail::check_name;

engine::error damaged_record(std::string_view where, std::string_view db, std::string_view key,
                             const std::string& why) {
  return {errc::damaged,
          "damaged record '" + r::display_key(db, key) + "' in " + std::string(where) + ": " + why};
}

// -- opening -----------------------------------------------------------------------------------

engine::expected<store_file> check_store_file(const std::filesystem::path& dir) {
  auto file = lmdb::check_data_file(dir);
  if (!file && file.error().code() == errc::damaged)
    return engine::fail(errc::damaged, "the store " + file.error().message());
  if (!file)
    return tl::unexpected(file.error());
  switch (*file) {
  case lmdb::data_file::missing:
    return store_file::missing;
  case lmdb::data_file::empty:
    return store_file::empty;
  case lmdb::data_file::present:
    break;
  }
  return store_file::present;
}

engine::expected<store> store::open(const std::filesystem::path& dir, int64_t map_bytes) {
  auto reg = detail::registration::claim(dir);
  if (!reg)
    return tl::unexpected(reg.error());
  auto env = lmdb::env::open(dir, map_bytes, std::size(r::all_dbs) + 1);
  if (!env && env.error().code() == errc::damaged)
    return engine::fail(errc::damaged, "the store " + env.error().message());
  if (!env)
    return tl::unexpected(env.error());
  auto p = std::unique_ptr<impl>(new impl{std::move(*reg), std::move(*env)});

  // Named databases are created once, in a write transaction; their handles then stay valid
  // for the environment's life, in every later transaction.
  auto ok = p->write([&](lmdb::txn& t) -> expected<void> {
    std::pair<const char*, MDB_dbi*> dbs[] = {
        {r::meta_db, &p->meta},       {r::tasks_db, &p->tasks},
        {r::nodes_db, &p->nodes},     {r::details_db, &p->details},
        {r::sources_db, &p->sources}, {r::outcomes_db, &p->outcomes},
        {r::repairs_db, &p->repairs}, {r::calibration_db, &p->calibration},
        {r::skills_db, &p->skills},   {r::transcripts_db, &p->transcripts}};
    for (auto [name, dbi] : dbs) {
      auto d = t.open_db(name, lmdb::access::read_write);
      if (!d)
        return tl::unexpected(d.error());
      *dbi = *d;
    }
    auto header = t.get(p->meta, r::store_key);
    if (!header)
      return tl::unexpected(header.error());
    if (!*header) {
      p->checksums = seal::rule::required;
      return p->put(t, p->meta, r::meta_db, r::store_key, r::encode_store_header());
    }
    // The header says whether the store's records carry checksums: read it with or without
    // one, then hold it to what it says.
    auto opened = seal::open(r::store_key, **header, seal::rule::optional);
    if (!opened)
      return tl::unexpected(
          damaged_record("the store at " + dir.string(), r::meta_db, r::store_key, opened.error()));
    auto rule = r::decode_store_header(opened->body);
    if (!rule)
      return engine::fail(errc::io,
                          "the store at " + dir.string() +
                              " is not a kernelskill store this version reads: " + rule.error());
    if (*rule == seal::rule::required && !opened->checked)
      return tl::unexpected(damaged_record("the store at " + dir.string(), r::meta_db, r::store_key,
                                           "it names a checksum but carries none: its end was cut "
                                           "off or changed"));
    p->checksums = *rule;
    return {};
  });
  if (!ok)
    return tl::unexpected(ok.error());
  return store(std::move(p));
}

store::store(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
store::store(store&&) noexcept = default;
store& store::operator=(store&&) noexcept = default;
store::~store() = default;

const std::filesystem::path& store::dir() const noexcept {
  return impl_->env.dir();
}

// -- campaign and tasks ------------------------------------------------------------------------

expected<void> store::impl::put_campaign(lmdb::txn& t, const campaign_record& record) const {
  return put(t, meta, r::meta_db, r::campaign_key, r::encode(record));
}

engine::expected<void> store::put_campaign(const campaign_record& record) {
  return impl_->write([&](lmdb::txn& t) { return impl_->put_campaign(t, record); });
}

engine::expected<std::optional<campaign_record>> store::campaign() const {
  return impl_->read([&](lmdb::txn& t) {
    return impl_->get(t, impl_->meta, r::meta_db, r::campaign_key, &r::decode_campaign);
  });
}

expected<void> store::impl::put_task(lmdb::txn& t, const task_state& state) const {
  if (auto ok = check_name("a task name", state.name); !ok)
    return ok;
  return put(t, tasks, r::tasks_db, state.name, r::encode(state));
}

engine::expected<void> store::put_task(const task_state& state) {
  return impl_->write([&](lmdb::txn& t) { return impl_->put_task(t, state); });
}

engine::expected<std::optional<task_state>> store::task(const std::string& name) const {
  if (auto ok = check_name("a task name", name); !ok)
    return tl::unexpected(ok.error());
  return impl_->read([&](lmdb::txn& t) {
    return impl_->get(t, impl_->tasks, r::tasks_db, name, &r::decode_task);
  });
}

engine::expected<std::vector<task_state>> store::tasks() const {
  return impl_->read([&](lmdb::txn& t) -> expected<std::vector<task_state>> {
    std::vector<task_state> out;
    auto ok = t.scan(
        impl_->tasks, "", [&](std::string_view key, std::string_view value) -> expected<bool> {
          auto d = impl_->decode(r::tasks_db, key, value, &r::decode_task);
          if (!d)
            return tl::unexpected(d.error());
          if (d->name != key)
            return tl::unexpected(impl_->corrupt(r::tasks_db, key, "holds task '" + d->name + "'"));
          out.push_back(std::move(*d));
          return true;
        });
    if (!ok)
      return tl::unexpected(ok.error());
    return out;
  });
}

// -- nodes and sources -------------------------------------------------------------------------

expected<void> store::impl::put_node(lmdb::txn& t, const std::string& task,
                                     const engine::node_record& node,
                                     const node_detail& detail) const {
  if (auto ok = check_name("a task name", task); !ok)
    return ok;
  if (auto ok = check_id("a node's id", node.id); !ok)
    return ok;
  std::string key = r::join(task, r::number_key(node.id));
  if (auto ok = put(t, nodes, r::nodes_db, key, r::encode(node)); !ok)
    return ok;
  return put(t, details, r::details_db, key, r::encode(detail));
}

engine::expected<void> store::put_node(const std::string& task, const engine::node_record& node,
                                       const node_detail& detail) {
  return impl_->write([&](lmdb::txn& t) { return impl_->put_node(t, task, node, detail); });
}

engine::expected<std::vector<engine::node_record>> store::nodes(const std::string& task) const {
  if (auto ok = check_name("a task name", task); !ok)
    return tl::unexpected(ok.error());
  const std::string prefix = r::join(task, "");
  return impl_->read([&](lmdb::txn& t) -> expected<std::vector<engine::node_record>> {
    std::vector<engine::node_record> out;
    auto ok = t.scan(
        impl_->nodes, prefix, [&](std::string_view key, std::string_view value) -> expected<bool> {
          std::optional<int64_t> id = r::parse_number_key(key.substr(prefix.size()));
          if (!id)
            return tl::unexpected(impl_->corrupt(r::nodes_db, key, "the key holds no node id"));
          auto d = impl_->decode(r::nodes_db, key, value, &r::decode_node);
          if (!d)
            return tl::unexpected(d.error());
          if (d->id != *id)
            return tl::unexpected(
                impl_->corrupt(r::nodes_db, key, "holds node " + std::to_string(d->id)));
          out.push_back(std::move(*d));
          return true;
        });
    if (!ok)
      return tl::unexpected(ok.error());
    return out;
  });
}

engine::expected<std::optional<node_detail>> store::detail(const std::string& task,
                                                           engine::node_id id) const {
  if (auto ok = check_name("a task name", task); !ok)
    return tl::unexpected(ok.error());
  if (auto ok = check_id("a node's id", id); !ok)
    return tl::unexpected(ok.error());
  return impl_->read([&](lmdb::txn& t) {
    return impl_->get(t, impl_->details, r::details_db, r::join(task, r::number_key(id)),
                      &r::decode_detail);
  });
}

expected<void> store::impl::put_source(lmdb::txn& t, const std::string& hash,
                                       const std::string& text) const {
  if (auto ok = check_name("a source hash", hash); !ok)
    return ok;
  return put(t, sources, r::sources_db, hash, r::encode_source(text));
}

engine::expected<void> store::put_source(const std::string& hash, const std::string& text) {
  return impl_->write([&](lmdb::txn& t) { return impl_->put_source(t, hash, text); });
}

engine::expected<std::optional<std::string>> store::source(const std::string& hash) const {
  if (auto ok = check_name("a source hash", hash); !ok)
    return tl::unexpected(ok.error());
  return impl_->read([&](lmdb::txn& t) {
    return impl_->get(t, impl_->sources, r::sources_db, hash, &r::decode_source);
  });
}

} // namespace ks::memory
