// The store's short-term memory: plan outcomes per parent and repair rounds per branch, one
// record each, so that recording one never rewrites the others.
//
// Each parent's (branch's) records sit under keys <task> \0 <parent> \0 <seq>, seq counting
// from 0 in the order they were first recorded; a cursor over <task> \0 thus reads them back
// grouped by parent, oldest first: exactly engine::short_term_memory's maps. The writes mirror
// its mutations, so that short_term() after a restart equals the memory the supervisor held:
// put_outcome replaces the record of the same plan (plan_key) in place, keeping its seq, and
// appends otherwise (record_outcome); put_repair appends, numbering a round of 0 after the
// branch's last round (record_repair). Both read the parent's records inside the write
// transaction: a parent holds tens of plans, so the scan costs microseconds.

#include "memory/store_impl.hpp"

namespace ks::memory {

namespace r = records;

namespace {

using engine::expected;

// Returns the seq after `key`'s last part; 0 if the group was empty (`last` is nullopt).
int64_t next_seq(const std::optional<int64_t>& last) {
  return last ? *last + 1 : 0;
}

} // namespace

expected<void> store::impl::put_outcome(lmdb::txn& t, const std::string& task,
                                        engine::node_id parent,
                                        const engine::plan_outcome& outcome) const {
  if (auto ok = detail::check_name("a task name", task); !ok)
    return ok;
  if (auto ok = detail::check_id("a parent", parent); !ok)
    return ok;
  const std::string prefix = r::join(task, r::number_key(parent), "");
  const std::string key_of_plan = engine::plan_key(outcome.plan);
  std::optional<std::string> same; // the key of the record of the same plan, if any
  std::optional<int64_t> last;
  auto ok =
      t.scan(outcomes, prefix, [&](std::string_view key, std::string_view value) -> expected<bool> {
        last = r::parse_number_key(key.substr(prefix.size()));
        if (!last)
          return tl::unexpected(corrupt(r::outcomes_db, key, "the key holds no sequence"));
        auto d = decode(r::outcomes_db, key, value, &r::decode_outcome);
        if (!d)
          return tl::unexpected(d.error());
        if (engine::plan_key(d->plan) == key_of_plan)
          same = std::string(key);
        return true;
      });
  if (!ok)
    return ok;
  std::string key = same ? *same : prefix + r::number_key(next_seq(last));
  return put(t, outcomes, r::outcomes_db, key, r::encode(outcome));
}

engine::expected<void> store::put_outcome(const std::string& task, engine::node_id parent,
                                          const engine::plan_outcome& outcome) {
  return impl_->write([&](lmdb::txn& t) { return impl_->put_outcome(t, task, parent, outcome); });
}

expected<void> store::impl::put_repair(lmdb::txn& t, const std::string& task,
                                       engine::node_id branch,
                                       const engine::repair_round& round) const {
  if (auto ok = detail::check_name("a task name", task); !ok)
    return ok;
  if (auto ok = detail::check_id("a branch", branch); !ok)
    return ok;
  const std::string prefix = r::join(task, r::number_key(branch), "");
  std::optional<int64_t> last;
  int64_t last_round = 0;
  auto ok =
      t.scan(repairs, prefix, [&](std::string_view key, std::string_view value) -> expected<bool> {
        last = r::parse_number_key(key.substr(prefix.size()));
        if (!last)
          return tl::unexpected(corrupt(r::repairs_db, key, "the key holds no sequence"));
        auto d = decode(r::repairs_db, key, value, &r::decode_repair);
        if (!d)
          return tl::unexpected(d.error());
        last_round = d->round;
        return true;
      });
  if (!ok)
    return ok;
  engine::repair_round numbered = round;
  if (numbered.round == 0)
    numbered.round = last_round + 1;
  return put(t, repairs, r::repairs_db, prefix + r::number_key(next_seq(last)),
             r::encode(numbered));
}

engine::expected<void> store::put_repair(const std::string& task, engine::node_id branch,
                                         const engine::repair_round& round) {
  return impl_->write([&](lmdb::txn& t) { return impl_->put_repair(t, task, branch, round); });
}

engine::expected<engine::short_term_memory> store::short_term(const std::string& task) const {
  if (auto ok = detail::check_name("a task name", task); !ok)
    return tl::unexpected(ok.error());
  const std::string prefix = r::join(task, "");

  // Reads "<task>\0<node>\0<seq>" keys under `prefix`, decoding each value into map[node].
  auto collect = [&](const lmdb::txn& t, MDB_dbi dbi, const char* db, auto decode_fn,
                     auto& map) -> expected<void> {
    return t.scan(dbi, prefix, [&](std::string_view key, std::string_view value) -> expected<bool> {
      std::string_view rest = key.substr(prefix.size());
      std::optional<int64_t> node = r::parse_number_key(rest.substr(0, 20));
      std::optional<int64_t> seq = rest.size() == 41 && rest[20] == '\0'
                                       ? r::parse_number_key(rest.substr(21))
                                       : std::nullopt;
      if (!node || !seq)
        return tl::unexpected(impl_->corrupt(db, key, "the key is not <task>/<node>/<seq>"));
      auto d = impl_->decode(db, key, value, decode_fn);
      if (!d)
        return tl::unexpected(d.error());
      map[*node].push_back(std::move(*d));
      return true;
    });
  };

  return impl_->read([&](lmdb::txn& t) -> expected<engine::short_term_memory> {
    engine::short_term_memory::outcome_map outcomes;
    engine::short_term_memory::repair_map repairs;
    if (auto ok = collect(t, impl_->outcomes, r::outcomes_db, &r::decode_outcome, outcomes); !ok)
      return tl::unexpected(ok.error());
    if (auto ok = collect(t, impl_->repairs, r::repairs_db, &r::decode_repair, repairs); !ok)
      return tl::unexpected(ok.error());
    return engine::short_term_memory(std::move(outcomes), std::move(repairs));
  });
}

} // namespace ks::memory
