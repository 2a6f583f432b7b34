// The store's per-device and per-skill records (calibrations, skill statistics), its dump and
// its check (every record's checksum and decoding, in one read transaction).
// add_skill_result reads and rewrites a statistic inside one write transaction: LMDB's single
// writer lock (across processes) makes the increment atomic, so two campaigns sharing a store
// never lose a try.

#include "memory/json_text.hpp"
#include "memory/store_impl.hpp"

namespace ks::memory {

namespace r = records;

using engine::expected;

namespace {

// Returns the key of a skill statistic, or the error that its names cannot form one.
expected<std::string> skill_key(const std::string& skill, const std::string& family,
                                const std::string& gpu) {
  for (auto [what, name] : {std::pair{"a skill name", &skill}, std::pair{"an op family", &family},
                            std::pair{"a GPU name", &gpu}})
    if (auto ok = detail::check_name(what, *name); !ok)
      return tl::unexpected(ok.error());
  return r::join(skill, family, gpu);
}

} // namespace

expected<void> store::impl::put_calibration(lmdb::txn& t, const std::string& uuid,
                                            const std::string& json) const {
  if (auto ok = detail::check_name("a device uuid", uuid); !ok)
    return ok;
  std::string why;
  parse_exact(json, why);
  if (!why.empty())
    return engine::fail(engine::errc::invalid_input,
                        "the calibration of device " + uuid + " is not JSON: " + why);
  return put(t, calibration, r::calibration_db, uuid, r::encode_calibration(json));
}

engine::expected<void> store::put_calibration(const std::string& uuid, const std::string& json) {
  return impl_->write([&](lmdb::txn& t) { return impl_->put_calibration(t, uuid, json); });
}

engine::expected<std::optional<std::string>> store::calibration(const std::string& uuid) const {
  if (auto ok = detail::check_name("a device uuid", uuid); !ok)
    return tl::unexpected(ok.error());
  return impl_->read([&](lmdb::txn& t) {
    return impl_->get(t, impl_->calibration, r::calibration_db, uuid, &r::decode_calibration);
  });
}

expected<void> store::impl::add_skill_result(lmdb::txn& t, const std::string& skill,
                                             const std::string& family, const std::string& gpu,
                                             bool success, double gain) const {
  auto key = skill_key(skill, family, gpu);
  if (!key)
    return tl::unexpected(key.error());
  auto old = get(t, skills, r::skills_db, *key, &r::decode_skill_stat);
  if (!old)
    return tl::unexpected(old.error());
  skill_stat s = old->value_or(skill_stat{});
  s.tries += 1;
  s.successes += success ? 1 : 0;
  s.total_gain += gain;
  return put(t, skills, r::skills_db, *key, r::encode(s));
}

engine::expected<void> store::add_skill_result(const std::string& skill, const std::string& family,
                                               const std::string& gpu, bool success, double gain) {
  return impl_->write(
      [&](lmdb::txn& t) { return impl_->add_skill_result(t, skill, family, gpu, success, gain); });
}

engine::expected<skill_stat> store::skill(const std::string& skill, const std::string& family,
                                          const std::string& gpu) const {
  auto key = skill_key(skill, family, gpu);
  if (!key)
    return tl::unexpected(key.error());
  return impl_->read([&](lmdb::txn& t) -> expected<skill_stat> {
    auto s = impl_->get(t, impl_->skills, r::skills_db, *key, &r::decode_skill_stat);
    if (!s)
      return tl::unexpected(s.error());
    return s->value_or(skill_stat{});
  });
}

engine::expected<std::vector<std::pair<std::string, std::string>>> store::dump() const {
  using listing = std::vector<std::pair<std::string, std::string>>;
  return impl_->read([&](lmdb::txn& t) -> expected<listing> {
    listing out;
    // A damaged or corrupt record is listed as such rather than failing the dump: inspect is
    // how one finds it.
    auto ok =
        impl_->each_record(t, [&](const char* db, std::string_view key, std::string_view value) {
          auto opened = seal::open(key, value, impl_->checksums);
          out.emplace_back(r::display_key(db, key),
                           opened ? r::summarize(opened->body) : "damaged: " + opened.error());
        });
    if (!ok)
      return tl::unexpected(ok.error());
    return out;
  });
}

engine::expected<store_check> store::check() const {
  return impl_->read([&](lmdb::txn& t) -> expected<store_check> {
    store_check out;
    auto ok =
        impl_->each_record(t, [&](const char* db, std::string_view key, std::string_view value) {
          ++out.records;
          auto opened = seal::open(key, value, impl_->checksums);
          if (!opened) {
            out.damaged.emplace_back(r::display_key(db, key), "damaged: " + opened.error());
            return;
          }
          out.unchecked += opened->checked ? 0 : 1;
          if (auto d = r::describe(opened->body); !d)
            out.damaged.emplace_back(r::display_key(db, key), "corrupt: " + d.error());
        });
    if (!ok)
      return tl::unexpected(ok.error());
    return out;
  });
}

} // namespace ks::memory
