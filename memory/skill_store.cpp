// The long-term skill memory (grammar in skill_store.hpp). Each call is one LMDB transaction;
// record_try reads the ledger and the statistic inside its write transaction, so LMDB's single
// writer lock (held across processes) makes "count once" atomic even when two campaigns share
// the memory.

#include "memory/skill_store.hpp"

#include "engine/skill_check.hpp"
#include "json/decode.hpp"
#include "json/encode.hpp"
#include "memory/json_text.hpp"
#include "memory/record_codec.hpp"
#include "memory/record_seal.hpp"
#include "memory/store_impl.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace json = boost::json;

namespace ks::memory {

namespace r = records;

using engine::errc;
using engine::expected;
using engine::fail;

namespace {

constexpr int64_t format_version = 1;
constexpr std::string_view skill_magic = "kernelskill-skills";
constexpr const char* meta_db = "meta";
constexpr const char* skills_db = "skills";
constexpr const char* stats_db = "stats";
constexpr const char* tries_db = "tries";

using corrupt = decode::malformed;
using decode::field;
using decode::integer_field;
using decode::string_field;

double real(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  if (v.is_number())
    return v.to_number<double>();
  if (v.is_null())
    return std::numeric_limits<double>::quiet_NaN();
  throw corrupt("field '" + std::string(key) + "' must be a number");
}

json::value real_json(double v) {
  if (!std::isfinite(v))
    return nullptr;
  return v;
}

std::map<std::string, std::string> string_map(const json::object& o, std::string_view key) {
  const json::value& v = field(o, key);
  if (!v.is_object())
    throw corrupt("field '" + std::string(key) + "' must be an object");
  std::map<std::string, std::string> out;
  for (const auto& [k, text] : v.get_object()) {
    if (!text.is_string())
      throw corrupt("field '" + std::string(key) + "." + std::string(k) + "' must be a string");
    out.emplace(std::string(k), std::string(text.get_string()));
  }
  return out;
}

json::object string_map_json(const std::map<std::string, std::string>& m) {
  json::object o;
  for (const auto& [k, v] : m)
    o[k] = v;
  return o;
}

template <class T, class F>
r::decoded<T> decode_with(std::string_view value, std::string_view tag, F read) {
  try {
    return read(open_record(value, tag, format_version));
  } catch (const corrupt& e) {
    return tl::unexpected(std::string(e.what()));
  }
}

json::object header(std::string_view tag) {
  return json::object{{"v", format_version}, {"type", tag}};
}

std::string encode_skill(const stored_skill& s) {
  json::object o = header("skill");
  o["origin"] = engine::to_string(s.origin);
  o["version"] = s.version;
  o["content_hash"] = s.content_hash;
  o["added_at"] = s.added_at;
  o["provenance"] = s.provenance;
  o["files"] = string_map_json(s.files);
  return encode::serialize(o);
}

stored_skill read_skill(const json::object& o) {
  stored_skill s;
  auto origin = engine::parse_skill_origin(string_field(o, "origin"));
  if (!origin)
    throw corrupt("field 'origin' has unknown value '" + string_field(o, "origin") + "'");
  s.origin = *origin;
  s.version = integer_field(o, "version");
  s.content_hash = string_field(o, "content_hash");
  s.added_at = string_field(o, "added_at");
  s.provenance = string_field(o, "provenance");
  s.files = string_map(o, "files");
  return s;
}

r::decoded<stored_skill> decode_skill(std::string_view value) {
  return decode_with<stored_skill>(value, "skill", read_skill);
}

std::string encode_stats(const engine::skill_stats& s) {
  json::object o = header("skill_stats");
  o["tries"] = s.tries;
  o["compile_failures"] = s.compile_failures;
  o["wrong_results"] = s.wrong_results;
  o["other_failures"] = s.other_failures;
  o["acceptances"] = s.acceptances;
  o["rejections"] = s.rejections;
  o["log_speedup_sum"] = real_json(s.log_speedup_sum);
  o["best_speedup"] = real_json(s.best_speedup);
  o["best_template"] = s.best_template;
  o["best_params"] = string_map_json(s.best_params);
  o["best_task"] = s.best_task;
  o["last_used"] = s.last_used;
  return encode::serialize(o);
}

r::decoded<engine::skill_stats> decode_stats(std::string_view value) {
  return decode_with<engine::skill_stats>(value, "skill_stats", [](const json::object& o) {
    engine::skill_stats s;
    s.tries = integer_field(o, "tries");
    s.compile_failures = integer_field(o, "compile_failures");
    s.wrong_results = integer_field(o, "wrong_results");
    s.other_failures = integer_field(o, "other_failures");
    s.acceptances = integer_field(o, "acceptances");
    s.rejections = integer_field(o, "rejections");
    s.log_speedup_sum = real(o, "log_speedup_sum");
    s.best_speedup = real(o, "best_speedup");
    s.best_template = string_field(o, "best_template");
    s.best_params = string_map(o, "best_params");
    s.best_task = string_field(o, "best_task");
    s.last_used = string_field(o, "last_used");
    return s;
  });
}

std::string encode_try(const engine::skill_try& t) {
  json::object o = header("skill_try");
  o["skill"] = t.skill;
  o["skill_version"] = t.skill_version;
  o["template"] = t.template_name;
  o["params"] = string_map_json(t.params);
  o["family"] = t.family;
  o["arch"] = t.arch;
  o["task"] = t.task;
  o["node"] = t.node;
  o["parent"] = t.parent;
  o["outcome"] = engine::to_string(t.outcome);
  o["failure_kind"] = t.failure_kind;
  o["gain"] = real_json(t.gain);
  o["reference_speedup"] = real_json(t.reference_speedup);
  o["at"] = t.at;
  return encode::serialize(o);
}

r::decoded<engine::skill_try> decode_try(std::string_view value) {
  return decode_with<engine::skill_try>(value, "skill_try", [](const json::object& o) {
    engine::skill_try t;
    t.skill = string_field(o, "skill");
    t.skill_version = integer_field(o, "skill_version");
    t.template_name = string_field(o, "template");
    t.params = string_map(o, "params");
    t.family = string_field(o, "family");
    t.arch = string_field(o, "arch");
    t.task = string_field(o, "task");
    t.node = integer_field(o, "node");
    t.parent = integer_field(o, "parent");
    auto outcome = engine::parse_outcome_kind(string_field(o, "outcome"));
    if (!outcome)
      throw corrupt("field 'outcome' has unknown value '" + string_field(o, "outcome") + "'");
    t.outcome = *outcome;
    t.failure_kind = string_field(o, "failure_kind");
    t.gain = real(o, "gain");
    t.reference_speedup = real(o, "reference_speedup");
    t.at = string_field(o, "at");
    return t;
  });
}

std::string summarize(std::string_view db, std::string_view value) {
  char line[256];
  if (db == skills_db) {
    auto s = decode_skill(value);
    if (!s)
      return "corrupt: " + s.error();
    std::snprintf(line, sizeof line, "skill v%lld (%s, %zu files, hash %s)",
                  static_cast<long long>(s->version), engine::to_string(s->origin), s->files.size(),
                  s->content_hash.c_str());
    return line;
  }
  if (db == stats_db) {
    auto s = decode_stats(value);
    if (!s)
      return "corrupt: " + s.error();
    std::snprintf(line, sizeof line,
                  "skill_stats tries=%lld accepted=%lld rejected=%lld compile_failed=%lld "
                  "wrong=%lld other_failed=%lld best=%.3gx",
                  static_cast<long long>(s->tries), static_cast<long long>(s->acceptances),
                  static_cast<long long>(s->rejections),
                  static_cast<long long>(s->compile_failures),
                  static_cast<long long>(s->wrong_results),
                  static_cast<long long>(s->other_failures), s->best_speedup);
    return line;
  }
  if (db == tries_db) {
    auto t = decode_try(value);
    if (!t)
      return "corrupt: " + t.error();
    std::snprintf(line, sizeof line, "skill_try %s/%s %s gain=%.3g", t->skill.c_str(),
                  t->template_name.c_str(), engine::to_string(t->outcome), t->gain);
    return line;
  }
  return std::string(value.substr(0, 120));
}

// Says what to do about a damaged skill memory in `dir`.
std::string damaged_hint(const std::filesystem::path& dir) {
  return "\n  the skill memory is shared by every campaign that names it: restore " + dir.string() +
         " from a copy, or move it aside (mv " + dir.string() + " " + dir.string() +
         ".damaged) and the next command starts an empty one, seeded with the built-in skills "
         "(the skills it learned or imported and its statistics are not carried over)";
}

expected<engine::skill> validate(const stored_skill& s) {
  engine::skill_files files{"<" + s.id + ">", s.files};
  auto loaded = engine::load_skill(files, s.origin);
  if (!loaded)
    return tl::unexpected(loaded.error());
  if (loaded->id != s.id)
    return fail(errc::invalid_input,
                "skill '" + s.id + "': its skill.toml says id '" + loaded->id + "'");
  return loaded;
}

} // namespace

const char* to_string(seed_action a) noexcept {
  switch (a) {
  case seed_action::added:
    return "added";
  case seed_action::refreshed:
    return "refreshed";
  case seed_action::unchanged:
    return "unchanged";
  case seed_action::kept_user:
    return "kept (user's)";
  }
  return "unknown";
}

struct skill_store::impl {
  detail::registration reg;
  lmdb::env env;
  MDB_dbi meta = 0, skills = 0, stats = 0, tries = 0;
  seal::rule checksums = seal::rule::required; ///< from the memory's header (open)

  engine::error corrupt_record(const char* db, std::string_view key, const std::string& why) const {
    return {errc::io, "corrupt record '" + r::display_key(db, key) + "' in the skill memory at " +
                          env.dir().string() + ": " + why};
  }

  /// Returns the body of the value at `key` of `db` once its checksum matches
  /// (record_seal.hpp); errc::damaged naming the record otherwise.
  expected<std::string_view> open(const char* db, std::string_view key,
                                  std::string_view value) const {
    auto opened = seal::open(key, value, checksums);
    if (!opened)
      return tl::unexpected(damaged_record("the skill memory at " + env.dir().string(), db, key,
                                           opened.error() + damaged_hint(env.dir())));
    return opened->body;
  }

  /// Checks `value`'s checksum, then decodes its body with `decode_fn`, naming the record if it
  /// is damaged or corrupt.
  template <class Decode>
  auto decode(const char* db, std::string_view key, std::string_view value, Decode decode_fn) const
      -> expected<typename decltype(decode_fn(std::string_view{}))::value_type> {
    auto body = open(db, key, value);
    if (!body)
      return tl::unexpected(body.error());
    auto d = decode_fn(*body);
    if (!d)
      return tl::unexpected(corrupt_record(db, key, d.error()));
    return std::move(*d);
  }

  /// Writes `value`, sealed with its checksum, at `key` of `dbi` in `t`.
  expected<void> put(lmdb::txn& t, MDB_dbi dbi, std::string_view key, std::string_view value,
                     std::string_view what) const {
    return t.put(dbi, key, seal::sealed(key, value), what);
  }

  template <class Body>
  expected<void> write(Body body) const {
    auto t = lmdb::txn::begin(env, lmdb::access::read_write);
    if (!t)
      return tl::unexpected(t.error());
    if (auto ok = body(*t); !ok)
      return ok;
    return t->commit();
  }

  template <class Body>
  auto read(Body body) const -> decltype(body(std::declval<lmdb::txn&>())) {
    auto t = lmdb::txn::begin(env, lmdb::access::read_only);
    if (!t)
      return tl::unexpected(t.error());
    return body(*t);
  }

  template <class Decode>
  auto get(const lmdb::txn& t, MDB_dbi dbi, const char* db, std::string_view key,
           Decode decode) const
      -> expected<std::optional<typename decltype(decode(std::string_view{}))::value_type>> {
    using value_type = typename decltype(decode(std::string_view{}))::value_type;
    auto v = t.get(dbi, key);
    if (!v)
      return tl::unexpected(v.error());
    if (!*v)
      return std::optional<value_type>{};
    auto d = this->decode(db, key, **v, decode);
    if (!d)
      return tl::unexpected(d.error());
    return std::optional<value_type>{std::move(*d)};
  }
};

expected<void> skill_store::check_file(const std::filesystem::path& dir) {
  auto file = lmdb::check_data_file(dir);
  if (!file && file.error().code() == errc::damaged)
    return fail(errc::damaged, "the skill memory " + file.error().message() + damaged_hint(dir));
  if (!file)
    return tl::unexpected(file.error());
  return {};
}

expected<skill_store> skill_store::open(const std::filesystem::path& dir, int64_t map_bytes) {
  auto reg = detail::registration::claim(dir);
  if (!reg)
    return tl::unexpected(reg.error());
  auto env = lmdb::env::open(dir, map_bytes, 5);
  if (!env && env.error().code() == errc::damaged)
    return fail(errc::damaged, "the skill memory " + env.error().message() + damaged_hint(dir));
  if (!env)
    return tl::unexpected(env.error());
  auto p = std::unique_ptr<impl>(new impl{std::move(*reg), std::move(*env)});
  auto ok = p->write([&](lmdb::txn& t) -> expected<void> {
    std::pair<const char*, MDB_dbi*> dbs[] = {
        {meta_db, &p->meta}, {skills_db, &p->skills}, {stats_db, &p->stats}, {tries_db, &p->tries}};
    for (auto [name, dbi] : dbs) {
      auto d = t.open_db(name, lmdb::access::read_write);
      if (!d)
        return tl::unexpected(d.error());
      *dbi = *d;
    }
    auto h = t.get(p->meta, "store");
    if (!h)
      return tl::unexpected(h.error());
    if (!*h) {
      p->checksums = seal::rule::required;
      json::object o = header("skill_store");
      o["magic"] = skill_magic;
      o["checksum"] = seal::checksum_name;
      return p->put(t, p->meta, "store", encode::serialize(o), "writing the skill memory's header");
    }
    // The header says whether the memory's records carry checksums (record_seal.hpp): read it
    // with or without one, then hold it to what it says.
    auto opened = seal::open("store", **h, seal::rule::optional);
    if (!opened)
      return tl::unexpected(damaged_record("the skill memory at " + dir.string(), meta_db, "store",
                                           opened.error() + damaged_hint(dir)));
    auto rule = decode_with<seal::rule>(opened->body, "skill_store", [](const json::object& o) {
      if (string_field(o, "magic") != skill_magic)
        throw corrupt("magic '" + string_field(o, "magic") + "' is not '" +
                      std::string(skill_magic) + "'");
      if (!o.contains("checksum"))
        return seal::rule::optional;
      if (string_field(o, "checksum") != seal::checksum_name)
        throw corrupt("its records carry a checksum this kernelskill does not know ('" +
                      string_field(o, "checksum") + "')");
      return seal::rule::required;
    });
    if (!rule)
      return fail(errc::io, "the skill memory at " + dir.string() +
                                " is not one this kernelskill reads: " + rule.error());
    if (*rule == seal::rule::required && !opened->checked)
      return tl::unexpected(
          damaged_record("the skill memory at " + dir.string(), meta_db, "store",
                         "it names a checksum but carries none" + damaged_hint(dir)));
    p->checksums = *rule;
    return {};
  });
  if (!ok)
    return tl::unexpected(ok.error());
  return skill_store(std::move(p));
}

skill_store::skill_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
skill_store::skill_store(skill_store&&) noexcept = default;
skill_store& skill_store::operator=(skill_store&&) noexcept = default;
skill_store::~skill_store() = default;

const std::filesystem::path& skill_store::dir() const noexcept {
  return impl_->env.dir();
}

expected<std::vector<std::pair<std::string, seed_action>>>
skill_store::seed(const std::vector<engine::skill_files>& builtin, const std::string& now) {
  std::vector<stored_skill> fresh;
  for (const engine::skill_files& files : builtin) {
    auto loaded = engine::load_skill(files);
    if (!loaded)
      return tl::unexpected(loaded.error());
    stored_skill s;
    s.id = loaded->id;
    s.origin = engine::skill_origin::builtin;
    s.version = loaded->version;
    s.content_hash = loaded->content_hash;
    s.added_at = now;
    s.provenance = "built-in (" + files.dir + ")";
    s.files = files.files;
    fresh.push_back(std::move(s));
  }
  std::vector<std::pair<std::string, seed_action>> actions;
  auto ok = impl_->write([&](lmdb::txn& t) -> expected<void> {
    for (const stored_skill& s : fresh) {
      auto old = impl_->get(t, impl_->skills, skills_db, s.id, decode_skill);
      if (!old)
        return tl::unexpected(old.error());
      seed_action action = seed_action::added;
      if (*old) {
        if ((*old)->origin != engine::skill_origin::builtin)
          action = seed_action::kept_user;
        else if ((*old)->content_hash == s.content_hash)
          action = seed_action::unchanged;
        else
          action = seed_action::refreshed;
      }
      actions.emplace_back(s.id, action);
      if (action == seed_action::added || action == seed_action::refreshed)
        if (auto put =
                impl_->put(t, impl_->skills, s.id, encode_skill(s), "writing skills/" + s.id);
            !put)
          return put;
    }
    return {};
  });
  if (!ok)
    return tl::unexpected(ok.error());
  return actions;
}

expected<void> skill_store::import_skills(std::vector<stored_skill> skills,
                                          const std::string& now) {
  for (stored_skill& s : skills) {
    if (auto ok = detail::check_name("a skill id", s.id); !ok)
      return ok;
    auto loaded = validate(s);
    // A skill from outside has its expressions evaluated before it is stored: one that cannot
    // be evaluated would only ever fail in a campaign.
    if (loaded)
      if (auto evaluates = engine::check_skill_evaluates(*loaded); !evaluates)
        loaded = tl::unexpected(evaluates.error());
    if (!loaded)
      return fail(errc::invalid_input, "skill '" + s.id +
                                           "' is not valid; nothing was imported:\n" +
                                           loaded.error().message());
    if (s.origin == engine::skill_origin::builtin)
      s.origin = engine::skill_origin::user;
    s.version = loaded->version;
    s.content_hash = loaded->content_hash;
    if (s.added_at.empty())
      s.added_at = now;
  }
  return impl_->write([&](lmdb::txn& t) -> expected<void> {
    for (const stored_skill& s : skills)
      if (auto ok = impl_->put(t, impl_->skills, s.id, encode_skill(s), "writing skills/" + s.id);
          !ok)
        return ok;
    return {};
  });
}

expected<std::vector<stored_skill>> skill_store::skills() const {
  return impl_->read([&](lmdb::txn& t) -> expected<std::vector<stored_skill>> {
    std::vector<stored_skill> out;
    auto ok = t.scan(impl_->skills, "",
                     [&](std::string_view key, std::string_view value) -> expected<bool> {
                       auto d = impl_->decode(skills_db, key, value, decode_skill);
                       if (!d)
                         return tl::unexpected(d.error());
                       d->id = std::string(key);
                       out.push_back(std::move(*d));
                       return true;
                     });
    if (!ok)
      return tl::unexpected(ok.error());
    return out;
  });
}

expected<std::optional<stored_skill>> skill_store::skill(const std::string& id) const {
  if (auto ok = detail::check_name("a skill id", id); !ok)
    return tl::unexpected(ok.error());
  return impl_->read([&](lmdb::txn& t) -> expected<std::optional<stored_skill>> {
    auto s = impl_->get(t, impl_->skills, skills_db, id, decode_skill);
    if (s && *s)
      (*s)->id = id;
    return s;
  });
}

expected<engine::skill_library> skill_store::library() const {
  auto all = skills();
  if (!all)
    return tl::unexpected(all.error());
  std::vector<engine::skill> loaded;
  for (const stored_skill& s : *all) {
    auto one = validate(s);
    if (!one)
      return fail(errc::invalid_input, "the skill memory at " + dir().string() + " holds skill '" +
                                           s.id + "', which does not load:\n" +
                                           one.error().message());
    loaded.push_back(std::move(*one));
  }
  return engine::make_library(std::move(loaded));
}

expected<bool> skill_store::record_try(const std::string& run, const engine::skill_try& t) {
  if (t.outcome == engine::outcome_kind::pending)
    return fail(errc::invalid_input, "a pending try of " + t.skill + " cannot be counted");
  for (auto [what, name] : {std::pair{"a campaign's name", &run}, std::pair{"a task name", &t.task},
                            std::pair{"a skill id", &t.skill}, std::pair{"an op family", &t.family},
                            std::pair{"a GPU architecture", &t.arch}})
    if (auto ok = detail::check_name(what, *name); !ok)
      return tl::unexpected(ok.error());
  if (auto ok = detail::check_id("a node's id", t.node); !ok)
    return tl::unexpected(ok.error());
  bool counted = false;
  std::string ledger_key = r::join(run, t.task, r::number_key(t.node));
  std::string stat_key = r::join(t.skill, t.family, t.arch);
  auto ok = impl_->write([&](lmdb::txn& txn) -> expected<void> {
    auto seen = txn.get(impl_->tries, ledger_key);
    if (!seen)
      return tl::unexpected(seen.error());
    if (*seen)
      return {}; // counted before: this is a replay after a kill or a resume
    auto old = impl_->get(txn, impl_->stats, stats_db, stat_key, decode_stats);
    if (!old)
      return tl::unexpected(old.error());
    engine::skill_stats s = old->value_or(engine::skill_stats{});
    engine::add_try(s, t);
    if (auto put = impl_->put(txn, impl_->tries, ledger_key, encode_try(t), "writing a skill try");
        !put)
      return put;
    if (auto put =
            impl_->put(txn, impl_->stats, stat_key, encode_stats(s), "writing a skill statistic");
        !put)
      return put;
    counted = true;
    return {};
  });
  if (!ok)
    return tl::unexpected(ok.error());
  return counted;
}

expected<std::map<std::string, engine::skill_stats>>
skill_store::stats(const std::string& family, const std::string& arch) const {
  auto rows = all_stats();
  if (!rows)
    return tl::unexpected(rows.error());
  std::map<std::string, engine::skill_stats> out;
  for (stat_row& row : *rows)
    if (row.family == family && row.arch == arch)
      out.emplace(row.skill, std::move(row.stats));
  return out;
}

expected<std::vector<stat_row>> skill_store::all_stats() const {
  return impl_->read([&](lmdb::txn& t) -> expected<std::vector<stat_row>> {
    std::vector<stat_row> out;
    auto ok = t.scan(
        impl_->stats, "", [&](std::string_view key, std::string_view value) -> expected<bool> {
          size_t a = key.find('\0');
          size_t b = a == std::string_view::npos ? a : key.find('\0', a + 1);
          if (b == std::string_view::npos)
            return tl::unexpected(
                impl_->corrupt_record(stats_db, key, "the key is not skill/family/arch"));
          auto d = impl_->decode(stats_db, key, value, decode_stats);
          if (!d)
            return tl::unexpected(d.error());
          out.push_back({std::string(key.substr(0, a)), std::string(key.substr(a + 1, b - a - 1)),
                         std::string(key.substr(b + 1)), std::move(*d)});
          return true;
        });
    if (!ok)
      return tl::unexpected(ok.error());
    return out;
  });
}

expected<std::vector<engine::skill_try>> skill_store::tries(const std::string& run) const {
  if (auto ok = detail::check_name("a campaign's name", run); !ok)
    return tl::unexpected(ok.error());
  std::string prefix = r::join(run, "");
  return impl_->read([&](lmdb::txn& t) -> expected<std::vector<engine::skill_try>> {
    std::vector<engine::skill_try> out;
    auto ok = t.scan(impl_->tries, prefix,
                     [&](std::string_view key, std::string_view value) -> expected<bool> {
                       auto d = impl_->decode(tries_db, key, value, decode_try);
                       if (!d)
                         return tl::unexpected(d.error());
                       out.push_back(std::move(*d));
                       return true;
                     });
    if (!ok)
      return tl::unexpected(ok.error());
    return out;
  });
}

expected<std::vector<std::pair<std::string, std::string>>> skill_store::dump() const {
  using listing = std::vector<std::pair<std::string, std::string>>;
  return impl_->read([&](lmdb::txn& t) -> expected<listing> {
    listing out;
    std::pair<const char*, MDB_dbi> dbs[] = {{meta_db, impl_->meta},
                                             {skills_db, impl_->skills},
                                             {stats_db, impl_->stats},
                                             {tries_db, impl_->tries}};
    for (auto [name, dbi] : dbs) {
      // name = name: clang 14 (clang-tidy's) cannot capture a structured binding.
      auto ok = t.scan(
          dbi, "",
          [&, name = name](std::string_view key, std::string_view value) -> expected<bool> {
            auto opened = seal::open(key, value, impl_->checksums);
            out.emplace_back(r::display_key(name, key),
                             opened ? summarize(name, opened->body) : "damaged: " + opened.error());
            return true;
          });
      if (!ok)
        return tl::unexpected(ok.error());
    }
    return out;
  });
}

std::string export_skills(const std::vector<stored_skill>& skills) {
  json::array list;
  for (const stored_skill& s : skills)
    list.push_back(json::object{{"id", s.id},
                                {"origin", engine::to_string(s.origin)},
                                {"version", s.version},
                                {"content_hash", s.content_hash},
                                {"provenance", s.provenance},
                                {"files", string_map_json(s.files)}});
  json::object doc{{"format", "kernelskill-skills"}, {"version", 1}, {"skills", list}};
  return encode::serialize(doc) + "\n";
}

expected<std::vector<stored_skill>> parse_skill_export(std::string_view text) {
  std::string why;
  json::value v = parse_exact(text, why);
  if (!why.empty())
    return fail(errc::invalid_input, "not JSON: " + why);
  try {
    if (!v.is_object())
      throw corrupt("not a JSON object");
    const json::object& o = v.get_object();
    if (string_field(o, "format") != "kernelskill-skills")
      throw corrupt("'format' is not \"kernelskill-skills\"");
    if (integer_field(o, "version") != 1)
      throw corrupt("version " + std::to_string(integer_field(o, "version")) +
                    " (this kernelskill reads version 1)");
    const json::value& list = field(o, "skills");
    if (!list.is_array())
      throw corrupt("'skills' must be an array");
    std::vector<stored_skill> out;
    size_t i = 0;
    for (const json::value& item : list.get_array()) {
      if (!item.is_object())
        throw corrupt("skills[" + std::to_string(i) + "] must be an object");
      const json::object& s = item.get_object();
      stored_skill one;
      one.id = string_field(s, "id");
      auto origin = engine::parse_skill_origin(string_field(s, "origin"));
      if (!origin)
        throw corrupt("skills[" + std::to_string(i) + "].origin is unknown");
      one.origin = *origin;
      one.version = integer_field(s, "version");
      one.content_hash = string_field(s, "content_hash");
      one.provenance = string_field(s, "provenance");
      one.files = string_map(s, "files");
      out.push_back(std::move(one));
      ++i;
    }
    return out;
  } catch (const corrupt& e) {
    return fail(errc::invalid_input, std::string("not a skill export: ") + e.what());
  }
}

} // namespace ks::memory
