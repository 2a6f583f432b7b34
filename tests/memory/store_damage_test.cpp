// A damaged store is reported as damaged, naming what is damaged, and never crashes the
// process: values carry a checksum (memory/record_seal.hpp), and a data file cut short is
// refused before LMDB maps it (reading past its end would be a SIGBUS).

#include "memory/lmdb_env.hpp"
#include "memory/record_codec.hpp"
#include "memory/record_seal.hpp"
#include "memory/skill_store.hpp"
#include "memory/store.hpp"
#include "memory/write_batch.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "test_context.hpp"

using namespace ks;
using memory::store;
namespace fs = std::filesystem;
namespace r = memory::records;
namespace seal = memory::seal;

namespace {

store open_store(const fs::path& dir) {
  auto s = store::open(dir, int64_t{1} << 30);
  if (!s)
    FAIL("cannot open the store: " << s.error().message());
  return std::move(*s);
}

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  REQUIRE(out.good());
}

// Changes, in every copy of a record that holds `anchor` in `dir`/data.mdb (LMDB's
// copy-on-write leaves stale copies in freed pages), the first digit after the next
// `"median_ms":` to another digit; returns how many copies it changed.
int change_median_digit(const fs::path& dir, const std::string& anchor) {
  const fs::path file = dir / "data.mdb";
  std::string bytes = read_bytes(file);
  int changed = 0;
  for (size_t at = bytes.find(anchor); at != std::string::npos; at = bytes.find(anchor, at + 1)) {
    size_t median = bytes.find("\"median_ms\":", at);
    REQUIRE(median != std::string::npos);
    size_t digit = bytes.find_first_of("0123456789", median + 12);
    REQUIRE(digit != std::string::npos);
    bytes[digit] = bytes[digit] == '1' ? '2' : '1';
    ++changed;
  }
  write_bytes(file, bytes);
  return changed;
}

engine::node_record node(engine::node_id id, double median_ms) {
  engine::node_record n;
  n.id = id;
  n.parent = id == 0 ? engine::no_node : 0;
  n.plan = engine::plan{"tile", "tile rows", {{"bm", std::to_string(16 * (id + 1))}}};
  n.source_hash = "hash-of-node-" + std::to_string(id);
  n.status = engine::node_status::accepted;
  n.disposition = engine::disposition::passed;
  n.time = engine::summarize({median_ms, median_ms, median_ms});
  return n;
}

// Fills a store in `dir` with enough records that its data file spans many pages.
void fill_store(const fs::path& dir) {
  store s = open_store(dir);
  for (int i = 0; i < 64; ++i)
    REQUIRE(s.put_source("source-" + std::to_string(i),
                         std::string(3000, static_cast<char>('a' + i % 26))));
  REQUIRE(s.put_node("relu", node(0, 0.129), {}));
}

// Writes a store as a kernelskill before checksums did: a header without "checksum" and
// records without a seal.
void write_store_before_checksums(const fs::path& dir, const engine::node_record& n) {
  auto env = memory::lmdb::env::open(dir, int64_t{1} << 30, 16);
  REQUIRE(env);
  auto t = memory::lmdb::txn::begin(*env, memory::lmdb::access::read_write);
  REQUIRE(t);
  auto meta = t->open_db(r::meta_db, memory::lmdb::access::read_write);
  auto nodes = t->open_db(r::nodes_db, memory::lmdb::access::read_write);
  REQUIRE(meta);
  REQUIRE(nodes);
  REQUIRE(t->put(*meta, r::store_key, R"({"v":1,"type":"store","magic":"kernelskill-store"})"));
  REQUIRE(t->put(*nodes, r::join("relu", r::number_key(n.id)), r::encode(n)));
  REQUIRE(t->commit());
}

} // namespace

TEST_CASE("a sealed value reads back, and a change to any of its bytes or its key is refused",
          "[memory][damage]") {
  const std::string body = R"({"v":1,"type":"source","text":"__global__ void k() {}"})";
  const std::string value = seal::sealed("hash-1", body);
  auto opened = seal::open("hash-1", value, seal::rule::required);
  REQUIRE(opened);
  CHECK(opened->body == body);
  CHECK(opened->checked);

  // Every byte, body and trailer alike, with one bit flipped: never read back.
  for (size_t i = 0; i < value.size(); ++i)
    for (unsigned char bit : {0x01, 0x10, 0x80}) {
      std::string changed = value;
      changed[i] = static_cast<char>(changed[i] ^ bit);
      auto back = seal::open("hash-1", changed, seal::rule::required);
      INFO("byte " << i << " bit " << int(bit));
      CHECK_FALSE(back);
    }
  // The same value under another key: it was not written there.
  CHECK_FALSE(seal::open("hash-2", value, seal::rule::required));
  // Cut short, it lacks its checksum or its trailer is damaged.
  CHECK_FALSE(seal::open("hash-1", value.substr(0, value.size() - 3), seal::rule::required));
  CHECK_THAT(seal::open("hash-1", body, seal::rule::required).error(),
             Catch::Contains("carries no checksum"));
  // A store written before checksums reads an unsealed value unchecked.
  auto unchecked = seal::open("hash-1", body, seal::rule::optional);
  REQUIRE(unchecked);
  CHECK(unchecked->body == body);
  CHECK_FALSE(unchecked->checked);
}

TEST_CASE("a changed digit in a stored timing is a damaged record named by its key, and check "
          "lists it",
          "[memory][damage]") {
  test::test_context ctx;
  const fs::path dir = ctx.dir() / "store";
  {
    store s = open_store(dir);
    REQUIRE(s.put_node("relu", node(0, 0.129), {}));
    REQUIRE(s.put_node("relu", node(1, 0.1), {}));
    REQUIRE(s.put_node("sum", node(0, 0.5), {}));
  }
  REQUIRE(change_median_digit(dir, "\"source_hash\":\"hash-of-node-1\"") >= 1);

  store s = open_store(dir);
  auto nodes = s.nodes("relu");
  REQUIRE_FALSE(nodes);
  CHECK(nodes.error().code() == engine::errc::damaged);
  CHECK_THAT(nodes.error().message(),
             Catch::Contains("damaged record 'nodes/relu/1' in the store at " + dir.string()) &&
                 Catch::Contains("its checksum does not match its contents"));
  CHECK(s.nodes("sum").value().size() == 1); // the rest of the store still reads

  auto listing = s.dump();
  REQUIRE(listing);
  std::map<std::string, std::string> lines(listing->begin(), listing->end());
  CHECK_THAT(lines.at("nodes/relu/1"), Catch::StartsWith("damaged: its checksum does not match"));
  CHECK_THAT(lines.at("nodes/relu/0"), Catch::StartsWith("node id=0"));
  CHECK_THAT(lines.at("meta/store"), Catch::Contains("records checksummed (xxh3-64)"));

  auto checked = s.check();
  REQUIRE(checked);
  CHECK(checked->records == 7); // the header, three nodes and their details
  REQUIRE(checked->damaged.size() == 1);
  CHECK(checked->damaged[0].first == "nodes/relu/1");
  CHECK_THAT(checked->damaged[0].second, Catch::StartsWith("damaged: its checksum"));
  CHECK(checked->unchecked == 0);
}

TEST_CASE("a value without its checksum in a store that requires one is damaged",
          "[memory][damage]") {
  test::test_context ctx;
  const fs::path dir = ctx.dir() / "store";
  { store s = open_store(dir); }
  {
    auto env = memory::lmdb::env::open(dir, int64_t{1} << 30, 16);
    REQUIRE(env);
    auto t = memory::lmdb::txn::begin(*env, memory::lmdb::access::read_write);
    REQUIRE(t);
    auto sources = t->open_db(r::sources_db, memory::lmdb::access::read_write);
    REQUIRE(sources);
    REQUIRE(t->put(*sources, "h", r::encode_source("int x;")));
    REQUIRE(t->commit());
  }
  store s = open_store(dir);
  auto source = s.source("h");
  REQUIRE_FALSE(source);
  CHECK(source.error().code() == engine::errc::damaged);
  CHECK_THAT(source.error().message(), Catch::Contains("damaged record 'sources/h'") &&
                                           Catch::Contains("carries no checksum"));
}

TEST_CASE("a store written before checksums reads its records unchecked and seals new ones",
          "[memory][damage]") {
  test::test_context ctx;
  const fs::path dir = ctx.dir() / "store";
  write_store_before_checksums(dir, node(0, 0.129));

  store s = open_store(dir);
  auto nodes = s.nodes("relu");
  REQUIRE(nodes);
  REQUIRE(nodes->size() == 1);
  CHECK(nodes->front().time.median_ms == 0.129);
  REQUIRE(s.put_node("relu", node(1, 0.1), {}));
  auto checked = s.check();
  REQUIRE(checked);
  CHECK(checked->records == 4);   // header, two nodes, one detail
  CHECK(checked->unchecked == 2); // the header and the node written before checksums
  CHECK(checked->damaged.empty());
  auto listing = s.dump().value();
  std::map<std::string, std::string> lines(listing.begin(), listing.end());
  CHECK_THAT(lines.at("meta/store"), Catch::Contains("records written before checksums"));
}

TEST_CASE("a data file cut short is refused before it is mapped, naming both sizes",
          "[memory][damage]") {
  test::test_context ctx;
  const fs::path dir = ctx.dir() / "store";
  fill_store(dir);
  const fs::path file = dir / "data.mdb";
  const auto full = static_cast<int64_t>(fs::file_size(file));
  REQUIRE(full > int64_t{16} * 4096);
  CHECK(memory::check_store_file(dir).value() == memory::store_file::present);

  // Cut in half: the header pages read, the pages they say are in use do not all exist.
  const int64_t half = full / 2;
  fs::resize_file(file, static_cast<uintmax_t>(half));
  auto checked = memory::check_store_file(dir);
  REQUIRE_FALSE(checked);
  CHECK(checked.error().code() == engine::errc::damaged);
  CHECK_THAT(checked.error().message(),
             Catch::Contains(file.string() + " is damaged: it is " + std::to_string(half) +
                             " bytes, its index says ") &&
                 Catch::Contains("cut short"));
  // Opening it fails the same way instead of taking the process down with SIGBUS.
  auto opened = store::open(dir);
  REQUIRE_FALSE(opened);
  CHECK(opened.error().code() == engine::errc::damaged);
  CHECK_THAT(opened.error().message(),
             Catch::StartsWith("the store " + file.string() + " is damaged: it is " +
                               std::to_string(half) + " bytes, its index says "));
  CHECK(static_cast<int64_t>(fs::file_size(file)) == half); // and nothing was written

  // Shorter than its header pages.
  fs::resize_file(file, 100);
  auto tiny = store::open(dir);
  REQUIRE_FALSE(tiny);
  CHECK(tiny.error().code() == engine::errc::damaged);
  CHECK_THAT(tiny.error().message(), Catch::Contains("is 100 bytes and its first header page is "
                                                     "unreadable"));

  // Emptied: nothing left to check (opening makes it a new store), and missing likewise.
  fs::resize_file(file, 0);
  CHECK(memory::check_store_file(dir).value() == memory::store_file::empty);
  fs::remove(file);
  CHECK(memory::check_store_file(dir).value() == memory::store_file::missing);
}

TEST_CASE("a data file whose header pages are not LMDB's is damaged", "[memory][damage]") {
  test::test_context ctx;
  const fs::path dir = ctx.dir() / "store";
  fill_store(dir);
  std::string bytes = read_bytes(dir / "data.mdb");
  bytes[16] = static_cast<char>(bytes[16] ^ 0x55); // the first header's magic
  write_bytes(dir / "data.mdb", bytes);
  auto opened = store::open(dir);
  REQUIRE_FALSE(opened);
  CHECK(opened.error().code() == engine::errc::damaged);
  CHECK_THAT(opened.error().message(), Catch::Contains("not an LMDB header page"));
}

TEST_CASE("a skill memory cut short or with a changed record is damaged, saying what to do",
          "[memory][damage][skills]") {
  test::test_context ctx;
  const fs::path dir = ctx.dir() / "memory";
  auto skill = [](const std::string& id) {
    std::string toml = "id = \"" + id +
                       "\"\ntitle = \"T\"\nversion = 1\nfamilies = [\"elementwise\"]\n"
                       "guidance = \"unroll by 4\"\n[[templates]]\nname = \"t\"\nfile = "
                       "\"t.cu.mustache\"\nparams = [ { name = \"n\", values = [1, 2], default "
                       "= 1 } ]\n";
    return engine::skill_files{
        "skills/" + id,
        {{"skill.toml", toml}, {"t.cu.mustache", std::string(5000, ' ') + "int n = {{n}};\n"}}};
  };
  {
    auto s = memory::skill_store::open(dir);
    REQUIRE(s);
    std::vector<engine::skill_files> skills;
    for (int i = 0; i < 40; ++i)
      skills.push_back(skill("skill_" + std::to_string(i)));
    REQUIRE(s->seed(skills, "2025-01-01T00:00:00Z"));
  }
  const fs::path file = dir / "data.mdb";

  SECTION("a changed byte in a skill") {
    std::string bytes = read_bytes(file);
    int changed = 0;
    for (size_t at = bytes.find("unroll by 4"); at != std::string::npos;
         at = bytes.find("unroll by 4", at + 1), ++changed)
      bytes[at + 10] = '8';
    REQUIRE(changed >= 1);
    write_bytes(file, bytes);
    auto s = memory::skill_store::open(dir);
    REQUIRE(s);
    auto all = s->skills();
    REQUIRE_FALSE(all);
    CHECK(all.error().code() == engine::errc::damaged);
    CHECK_THAT(
        all.error().message(),
        Catch::Contains("damaged record 'skills/skill_0' in the skill memory at " + dir.string()) &&
            Catch::Contains("its checksum does not match") && Catch::Contains("move it aside"));
    auto listing = s->dump().value();
    std::map<std::string, std::string> lines(listing.begin(), listing.end());
    CHECK_THAT(lines.at("skills/skill_0"), Catch::StartsWith("damaged: "));
  }
  SECTION("cut short") {
    const auto half = fs::file_size(file) / 2;
    fs::resize_file(file, half);
    auto s = memory::skill_store::open(dir);
    REQUIRE_FALSE(s);
    CHECK(s.error().code() == engine::errc::damaged);
    CHECK_THAT(s.error().message(),
               Catch::StartsWith("the skill memory " + file.string() + " is damaged: it is " +
                                 std::to_string(half) + " bytes, its index says ") &&
                   Catch::Contains("move it aside (mv " + dir.string()));
  }
}

TEST_CASE("check cost", "[.][memory][bench]") {
  // Not a test of speed (CI machines are shared): run it by hand to see what checking every
  // record before a resume costs (memory/record_seal.hpp, actors/campaign_store.cpp).
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  const int count = 2000;
  memory::write_batch batch;
  for (int i = 0; i < count; ++i) {
    batch.put_source("source-" + std::to_string(i),
                     std::string(100'000, static_cast<char>('a' + i % 26)));
    batch.put_node("t", node(i, 0.1 + i), {});
  }
  REQUIRE(s.write(batch));
  const auto bytes = fs::file_size(ctx.dir() / "store" / "data.mdb");
  auto start = std::chrono::steady_clock::now();
  auto checked = s.check();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(checked);
  CHECK(checked->damaged.empty());
  std::printf("check: %lld records, %.0f MB, %.0f ms (%.0f MB/s)\n",
              static_cast<long long>(checked->records), static_cast<double>(bytes) / 1e6, ms,
              static_cast<double>(bytes) / 1e3 / ms);
}
