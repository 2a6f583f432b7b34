#include "memory/lmdb_env.hpp"
#include "memory/record_codec.hpp"
#include "memory/record_seal.hpp"
#include "memory/store.hpp"
#include "memory/write_batch.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "test_context.hpp"

using namespace ks;
using engine::node_id;
using memory::store;

namespace {

// Returns the store in `dir`, failing the test if it cannot be opened.
store open_store(const std::filesystem::path& dir, int64_t map_bytes = int64_t{1} << 30) {
  auto s = store::open(dir, map_bytes);
  if (!s)
    FAIL("cannot open the store: " << s.error().message());
  return std::move(*s);
}

// Says whether write_behind_the_store seals what it writes with the value's checksum.
enum class sealing { sealed, raw };

// Writes each (database, key, value) of `records` with raw LMDB, in one transaction, behind
// the back of the store in `dir` (which must be closed: one handle per process). Sealed (the
// default), each value carries a matching checksum, as if the store had written it: what is
// then wrong with it is its content, which decoding must catch.
void write_behind_the_store(
    const std::filesystem::path& dir,
    const std::vector<std::tuple<const char*, std::string, std::string>>& records,
    sealing how = sealing::sealed) {
  auto env = memory::lmdb::env::open(dir, int64_t{1} << 30, 16);
  REQUIRE(env);
  auto t = memory::lmdb::txn::begin(*env, memory::lmdb::access::read_write);
  REQUIRE(t);
  for (const auto& [db, key, value] : records) {
    auto dbi = t->open_db(db, memory::lmdb::access::read_write);
    REQUIRE(dbi);
    REQUIRE(t->put(*dbi, key, how == sealing::sealed ? memory::seal::sealed(key, value) : value));
  }
  REQUIRE(t->commit());
}

// Returns the bytes of `file`.
std::string read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes `bytes` over `file`.
void write_bytes(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
  REQUIRE(out.good());
}

// Returns node `id` of a made-up tree (a binary tree, so ids have parents), with doubles
// that have no short decimal form.
engine::node_record sample_node(node_id id) {
  engine::node_record n;
  n.id = id;
  n.parent = id == 0 ? engine::no_node : (id - 1) / 2;
  n.depth = id == 0 ? 0 : 1 + static_cast<int64_t>(std::log2(static_cast<double>(id + 1))) - 1;
  n.expansion = id == 0 ? 0 : (id + 1) / 2;
  n.plan = id == 0 ? engine::reference_plan()
                   : engine::plan{"tile",
                                  "tile rows, try " + std::to_string(id),
                                  {{"bm", std::to_string(16 * id)}, {"unroll", "4"}}};
  n.source_hash = "xxh3-" + std::to_string(1000003 * id);
  n.status = engine::node_status::accepted;
  n.disposition = engine::disposition::passed;
  n.time = engine::summarize({0.1 + 0.2, 1.0 / 3.0, 2.0 / 7.0 * static_cast<double>(id + 1)});
  n.fraction_of_roofline = 0.7 / 3.0;
  n.failure_kind = id % 3 == 2 ? "wrong_result" : "";
  n.expansion_state =
      id % 4 == 3 ? engine::expansion_state::exhausted : engine::expansion_state::open;
  return n;
}

memory::node_detail sample_detail(node_id id) {
  memory::node_detail d{
      "node " + std::to_string(id) + " failed: \"quoted\"\nsecond line",
      "kernel.cu(12): warning: variable \"x\" was declared but never referenced\n",
      R"({"registers":64,"shared_bytes":49152})", R"({"max_abs_err":1e-06})"};
  d.timed_gpu = static_cast<int32_t>(id % 3) - 1; // -1 (the home), 0 and 1 all round-trip
  return d;
}

// Returns a model request's transcript as the gateway writes it (agents/transcript.hpp's
// grammar, its final newline included): request `id` of `role` for `task` ("" for none) and
// `node` (-1 for none).
std::string transcript_text(int64_t id, const std::string& role, const std::string& task,
                            int64_t node, const std::string& outcome = "ok") {
  namespace json = boost::json;
  json::object o{
      {"v", 1},
      {"type", "llm_transcript"},
      {"id", id},
      {"role", role},
      {"task", task},
      {"node", node},
      {"api", "openai"},
      {"model", "fake-model"},
      {"endpoint", "http://127.0.0.1:1/v1"},
      {"started_at", "2025-01-02T03:04:05Z"},
      {"latency_ms", 812.5},
      {"attempts",
       json::array{
           json::object{{"status", 429},
                        {"error", "HTTP 429: slow down"},
                        {"ms", 3.5},
                        {"retry_after_s", 1.0}},
           json::object{{"status", 200}, {"error", ""}, {"ms", 800.0}, {"retry_after_s", -1.0}}}},
      {"outcome", outcome},
      {"error", outcome == "ok" ? "" : "it " + outcome},
      {"messages", json::array{json::object{{"role", "user"}, {"content", "Write the kernel.\n"}}}},
      {"reply", outcome == "ok" ? "```cuda\n__global__ void k() {}\n```" : ""},
      {"finish_reason", "stop"},
      {"input_tokens", 120 + id},
      {"output_tokens", 45},
      {"cost", 0.00105}};
  return json::serialize(o) + "\n";
}

const engine::plan tile64{"tile", "tile rows by 64", {{"bm", "64"}}};
const engine::plan vectorize{"vectorize", "16-byte loads", {{"width", "16"}}};

// Returns the encoded record `text` as an older store wrote it: each field of `names` renamed
// to one no reader knows.
std::string without_fields(std::string text, std::initializer_list<std::string> names) {
  for (const std::string& name : names) {
    const std::string key = "\"" + name + "\"";
    auto at = text.find(key);
    REQUIRE(at != std::string::npos);
    text.replace(at, key.size(), "\"unused_" + name + "\"");
  }
  return text;
}

} // namespace

TEST_CASE("every record type reads back equal to what was written", "[memory]") {
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");

  memory::campaign_record campaign{"[campaign]\nname = \"night\"\n", "2025-01-02T03:04:05Z",
                                   R"({"gpus":["H100"]})", 3};
  REQUIRE(s.put_campaign(campaign));
  memory::task_state task{"23_softmax",
                          "/tasks/23_softmax.toml",
                          engine::task_phase::done,
                          "no_gain",
                          "stopped",
                          7,
                          0.123456789,
                          1.0 / 3.0,
                          0.0421};
  task.home_gpu = 1;
  task.home_load_ms = 86.5;
  task.cost_flops = 2.5e9;
  task.cost_bytes = 1.25e8;
  REQUIRE(s.put_task(task));
  REQUIRE(s.put_node("23_softmax", sample_node(5), sample_detail(5)));
  REQUIRE(s.put_source("xxh3-abc", "__global__ void k() {}\n"));
  REQUIRE(s.put_calibration("GPU-1234", R"({"launch_overhead_ms":0.0031})"));
  REQUIRE(s.add_skill_result("tile", "reduction", "H100", true, 0.25));

  CHECK(s.campaign().value() == campaign);
  CHECK(s.task("23_softmax").value() == task);
  CHECK(s.tasks().value() == std::vector<memory::task_state>{task});
  CHECK(s.nodes("23_softmax").value() == std::vector<engine::node_record>{sample_node(5)});
  CHECK(s.detail("23_softmax", 5).value() == sample_detail(5));
  CHECK(s.source("xxh3-abc").value() == "__global__ void k() {}\n");
  CHECK(s.calibration("GPU-1234").value() == R"({"launch_overhead_ms":0.0031})");
  CHECK(s.skill("tile", "reduction", "H100").value() == memory::skill_stat{1, 1, 0.25});

  // What was never written is a miss, not a failure.
  CHECK_FALSE(s.task("19_relu").value());
  CHECK_FALSE(s.detail("23_softmax", 6).value());
  CHECK_FALSE(s.source("xxh3-none").value());
  CHECK_FALSE(s.calibration("GPU-none").value());
  CHECK(s.nodes("19_relu").value().empty());
  CHECK(s.skill("tile", "reduction", "A100").value() == memory::skill_stat{});
}

TEST_CASE("a source that is not UTF-8 reads back as it was, its diagnostics with the bad bytes "
          "as U+FFFD",
          "[memory]") {
  // A Latin-1 comment in a hand-written reference: its source and nvcc's quote of it were
  // written as they are, read back as "not JSON", and the store was reported damaged.
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  const std::string latin1 = "// r\xe9"
                             "f\xe9rence\n__global__ void k() {}\n";
  memory::node_detail detail = sample_detail(5);
  detail.diagnostics = "kernel.cu(1): error: r\xe9"
                       "f\n";
  REQUIRE(s.put_source("xxh3-latin1", latin1));
  REQUIRE(s.put_node("23_softmax", sample_node(5), detail));

  const std::string fffd = "\xef\xbf\xbd";
  CHECK(s.source("xxh3-latin1").value() == latin1);
  auto read = s.detail("23_softmax", 5);
  REQUIRE(read);
  REQUIRE(*read);
  CHECK((*read)->diagnostics == "kernel.cu(1): error: r" + fffd + "f\n");
  auto checked = s.check();
  REQUIRE(checked);
  CHECK(checked->damaged.empty());
}

TEST_CASE("a task written before homes were kept reads back with no home", "[memory]") {
  memory::task_state task{"23_softmax", "/tasks/23_softmax.toml"};
  task.home_gpu = 1;
  task.home_load_ms = 86.5;
  // An older store's value: the same record without the two fields.
  auto decoded = memory::records::decode_task(
      without_fields(memory::records::encode(task), {"home_gpu", "home_load_ms"}));
  REQUIRE(decoded);
  CHECK(decoded->name == "23_softmax");
  CHECK(decoded->home_gpu == -1);
  CHECK(decoded->home_load_ms == 0);
  CHECK(memory::records::decode_task(memory::records::encode(task)).value() == task);
}

TEST_CASE("a task written before costs were kept reads back with none", "[memory]") {
  memory::task_state task{"23_softmax", "/tasks/23_softmax.toml"};
  task.cost_flops = 2.5e9;
  task.cost_bytes = 1.25e8;
  auto decoded = memory::records::decode_task(
      without_fields(memory::records::encode(task), {"cost_flops", "cost_bytes"}));
  REQUIRE(decoded);
  CHECK(decoded->cost_flops == 0);
  CHECK(decoded->cost_bytes == 0);
  CHECK(memory::records::decode_task(memory::records::encode(task)).value() == task);
}

TEST_CASE("a task's phase is written by number and read by number or by name", "[memory]") {
  memory::task_state task{"23_softmax", "/tasks/23_softmax.toml"};
  task.phase = engine::task_phase::finals;
  std::string text = memory::records::encode(task);
  const std::string by_number = "\"phase\":2";
  REQUIRE(text.find(by_number) != std::string::npos);
  CHECK(memory::records::decode_task(text).value() == task);
  auto with_phase = [&](const std::string& field) {
    std::string changed = text;
    changed.replace(changed.find(by_number), by_number.size(), field);
    return changed;
  };
  // A record that holds the phase by name reads back the same.
  CHECK(memory::records::decode_task(with_phase("\"phase\":\"finals\"")).value() == task);
  // An unknown number or name, or another type, makes the record corrupt.
  for (std::string bad : {"\"phase\":9", "\"phase\":\"dry_run\"", "\"phase\":1.5"}) {
    INFO(bad);
    CHECK_FALSE(memory::records::decode_task(with_phase(bad)));
  }
}

TEST_CASE("a node detail written before timings could move reads back as timed at home",
          "[memory]") {
  memory::node_detail detail = sample_detail(4);
  detail.timed_gpu = 1;
  std::string text = memory::records::encode(detail);
  auto at = text.find("\"timed_gpu\"");
  REQUIRE(at != std::string::npos);
  text.replace(at, 11, "\"unused_gpu\"");
  auto decoded = memory::records::decode_detail(text);
  REQUIRE(decoded);
  CHECK(decoded->timed_gpu == -1);
  CHECK(decoded->message == detail.message);
  CHECK(memory::records::decode_detail(memory::records::encode(detail)).value() == detail);
}

TEST_CASE("a timing's doubles read back bit for bit, infinities included", "[memory]") {
  // Boost.JSON 1.81's own parser returns about 7.5% of random doubles one ulp off.
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  std::mt19937_64 rng(42);
  engine::node_record n = sample_node(1);
  n.time.samples_ms.clear();
  for (int i = 0; i < 5000; ++i) {
    double v = 0;
    uint64_t bits = rng();
    std::memcpy(&v, &bits, sizeof v);
    n.time.samples_ms.push_back(std::isfinite(v) ? v : std::ldexp(static_cast<double>(bits), -70));
  }
  n.time.samples_ms.push_back(std::numeric_limits<double>::infinity());
  n.time.samples_ms.push_back(-std::numeric_limits<double>::infinity());
  n.time.samples_ms.push_back(std::numeric_limits<double>::denorm_min());
  n.time.samples_ms.push_back(-0.0);
  REQUIRE(s.put_node("t", n, {}));
  auto back = s.nodes("t");
  REQUIRE(back);
  REQUIRE(back->size() == 1);
  REQUIRE(back->front().time.samples_ms.size() == n.time.samples_ms.size());
  CHECK(std::memcmp(back->front().time.samples_ms.data(), n.time.samples_ms.data(),
                    n.time.samples_ms.size() * sizeof(double)) == 0);

  // NaN is null on disk and NaN again when read.
  n.fraction_of_roofline = std::numeric_limits<double>::quiet_NaN();
  REQUIRE(s.put_node("t", n, {}));
  CHECK(std::isnan(s.nodes("t").value().front().fraction_of_roofline));
}

TEST_CASE("nodes come back in id order, each task its own", "[memory]") {
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  // "softmax" is a prefix of "softmax2": the separator keeps their nodes apart.
  for (node_id id : {2, 10, 1})
    REQUIRE(s.put_node("softmax", sample_node(id), sample_detail(id)));
  for (node_id id : {11, 0, 3})
    REQUIRE(s.put_node("softmax2", sample_node(id), sample_detail(id)));

  auto ids = [&](const std::string& task) {
    std::vector<node_id> out;
    std::vector<engine::node_record> nodes = s.nodes(task).value();
    for (const engine::node_record& n : nodes)
      out.push_back(n.id);
    return out;
  };
  CHECK(ids("softmax") == std::vector<node_id>{1, 2, 10});
  CHECK(ids("softmax2") == std::vector<node_id>{0, 3, 11});
  CHECK(ids("soft").empty());

  // Writing a node again replaces it.
  engine::node_record again = sample_node(2);
  again.status = engine::node_status::rejected;
  REQUIRE(s.put_node("softmax", again, memory::node_detail{"slower", "", "", ""}));
  CHECK(s.nodes("softmax").value()[1] == again);
  CHECK(s.detail("softmax", 2).value()->message == "slower");
}

TEST_CASE("a reopened store sees what was written", "[memory]") {
  test::test_context ctx;
  {
    store s = open_store(ctx.dir() / "store");
    REQUIRE(s.put_task(memory::task_state{"47_sum", "/t/47_sum.toml"}));
    REQUIRE(s.put_node("47_sum", sample_node(0), sample_detail(0)));
    REQUIRE(s.put_outcome("47_sum", 0, {tile64, 1, engine::outcome_kind::pending, "", 0}));
    REQUIRE(s.add_skill_result("tile", "reduction", "H100", false, 0));
  }
  store s = open_store(ctx.dir() / "store");
  CHECK(s.task("47_sum").value()->manifest == "/t/47_sum.toml");
  CHECK(s.nodes("47_sum").value() == std::vector<engine::node_record>{sample_node(0)});
  CHECK(s.short_term("47_sum").value().was_tried(0, tile64));
  CHECK(s.skill("tile", "reduction", "H100").value() == memory::skill_stat{1, 0, 0});
}

TEST_CASE("short-term memory rebuilds as record_outcome and record_repair left it", "[memory]") {
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  engine::short_term_memory expected;
  auto outcome = [&](node_id parent, engine::plan_outcome o) {
    expected.record_outcome(parent, o);
    REQUIRE(s.put_outcome("t", parent, o));
  };
  auto repair = [&](node_id branch, engine::repair_round r) {
    expected.record_repair(branch, r);
    REQUIRE(s.put_repair("t", branch, r));
  };

  outcome(0, {tile64, 1, engine::outcome_kind::pending, "", 0});
  outcome(0, {vectorize, 2, engine::outcome_kind::pending, "", 0});
  outcome(1, {tile64, 3, engine::outcome_kind::pending, "", 0});
  // The same plan reworded ("64.0", another description) replaces the entry in place.
  outcome(0, {engine::plan{"TILE", "block rows", {{"bm", "64.0"}}}, 1, engine::outcome_kind::failed,
              "compile_error", 0});
  outcome(0, {vectorize, 2, engine::outcome_kind::accepted, "", 0.18});
  outcome(10, {vectorize, 12, engine::outcome_kind::rejected, "", -0.01});
  repair(1, {0, "error: identifier \"tid\" is undefined", "renamed in one place", "renamed"});
  repair(1, {0, "wrong_result", "tail rows skipped", "bound the loop by rows"});
  repair(12, {0, "timeout", "a barrier inside a branch", "hoisted it"});
  repair(1, {7, "explicit round", "", ""});
  repair(1, {0, "after seven", "", "", "f00d", "beef"}); // the hashes travel too
  // Another task's memory stays apart.
  REQUIRE(s.put_outcome("t2", 0, {tile64, 1, engine::outcome_kind::pending, "", 0}));

  auto back = s.short_term("t");
  REQUIRE(back);
  CHECK(*back == expected);
  REQUIRE(back->tried_plans(0).size() == 2);
  CHECK(back->tried_plans(0)[0].outcome == engine::outcome_kind::failed);
  CHECK(back->repairs(1).back().round == 8);
  CHECK(s.short_term("none").value() == engine::short_term_memory{});
}

TEST_CASE("skill statistics accumulate per skill, family and GPU", "[memory]") {
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  REQUIRE(s.add_skill_result("tile", "reduction", "H100", true, 0.25));
  REQUIRE(s.add_skill_result("tile", "reduction", "H100", false, 0));
  REQUIRE(s.add_skill_result("tile", "reduction", "H100", true, 0.5));
  REQUIRE(s.add_skill_result("tile", "reduction", "H200", true, 0.125));
  REQUIRE(s.add_skill_result("tile", "matmul", "H100", false, -0.0625));

  CHECK(s.skill("tile", "reduction", "H100").value() == memory::skill_stat{3, 2, 0.75});
  CHECK(s.skill("tile", "reduction", "H200").value() == memory::skill_stat{1, 1, 0.125});
  CHECK(s.skill("tile", "matmul", "H100").value() == memory::skill_stat{1, 0, -0.0625});
}

TEST_CASE("a corrupt value is reported with its key, not a crash", "[memory]") {
  test::test_context ctx;
  const auto dir = ctx.dir() / "store";
  {
    store s = open_store(dir);
    for (node_id id : {1, 3})
      REQUIRE(s.put_node("softmax", sample_node(id), sample_detail(id)));
    REQUIRE(s.put_node("relu", sample_node(1), sample_detail(1)));
    REQUIRE(s.add_skill_result("tile", "reduction", "H100", true, 0.25));
  }
  namespace r = memory::records;
  write_behind_the_store(
      dir, {{r::nodes_db, r::join("softmax", r::number_key(3)), "{\"v\":1,\"type\":\"no"},
            {r::skills_db, r::join("tile", "reduction", "H100"),
             R"({"v":2,"type":"skill_stat","tries":1,"successes":1,"total_gain":0.25})"}});
  store s = open_store(dir);

  auto nodes = s.nodes("softmax");
  REQUIRE_FALSE(nodes);
  CHECK(nodes.error().code() == engine::errc::io);
  CHECK_THAT(nodes.error().message(), Catch::Contains("corrupt record 'nodes/softmax/3'") &&
                                          Catch::Contains(dir.string()) &&
                                          Catch::Contains("not JSON"));
  CHECK(s.nodes("relu").value().size() == 1); // the rest of the store still reads

  auto stat = s.skill("tile", "reduction", "H100");
  REQUIRE_FALSE(stat);
  CHECK_THAT(stat.error().message(),
             Catch::Contains("skills/tile/reduction/H100") && Catch::Contains("format version 2"));
  // An increment never builds on a record it cannot read.
  CHECK_FALSE(s.add_skill_result("tile", "reduction", "H100", true, 0.25));

  // The dump lists the corrupt records among the good ones.
  auto dump = s.dump();
  REQUIRE(dump);
  std::map<std::string, std::string> lines(dump->begin(), dump->end());
  CHECK_THAT(lines.at("nodes/softmax/3"), Catch::StartsWith("corrupt: not JSON"));
  CHECK_THAT(lines.at("nodes/softmax/1"), Catch::StartsWith("node id=1 parent=0"));
  CHECK_THAT(lines.at("details/relu/1"), Catch::StartsWith("detail message=\"node 1 failed"));
  CHECK_THAT(lines.at("meta/store"), Catch::StartsWith("store header"));
  CHECK_THAT(lines.at("skills/tile/reduction/H100"), Catch::Contains("format version 2"));
}

TEST_CASE("a full store says to raise memory map size and stays usable", "[memory]") {
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store", int64_t{256} * 1024);
  auto full = s.put_source("big", std::string(1 << 20, 'x'));
  REQUIRE_FALSE(full);
  CHECK(full.error().code() == engine::errc::io);
  CHECK_THAT(full.error().message(),
             Catch::Contains("the store at " + (ctx.dir() / "store").string() + " is full") &&
                 Catch::Contains("raise memory map size"));
  CHECK_FALSE(s.source("big").value());
  REQUIRE(s.put_source("small", "ok"));
  CHECK(s.source("small").value() == "ok");
}

TEST_CASE("names a key cannot hold are refused", "[memory]") {
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  CHECK(s.put_node("", sample_node(1), {}).error().code() == engine::errc::invalid_input);
  CHECK(s.put_node(std::string("a\0b", 3), sample_node(1), {}).error().code() ==
        engine::errc::invalid_input);
  CHECK(s.put_node("t", sample_node(-1), {}).error().code() == engine::errc::invalid_input);
  CHECK(s.put_source(std::string(600, 'h'), "x").error().code() == engine::errc::invalid_input);
  CHECK(s.put_task(memory::task_state{}).error().code() == engine::errc::invalid_input);
  CHECK(s.dump().value().size() == 1); // only the store header: nothing was written
}

TEST_CASE("a store folder is open at most once per process", "[memory]") {
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  auto second = store::open(ctx.dir() / "store" / ".." / "store");
  REQUIRE_FALSE(second);
  CHECK_THAT(second.error().message(), Catch::Contains("already open in this process"));
  store moved = std::move(s);
  REQUIRE(moved.put_source("h", "x"));
}

TEST_CASE("a child process inherits none of the store's files", "[memory]") {
  // The campaign spawns nvcc and bench workers while its store is open.
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  FILE* ls = popen("ls -l /proc/self/fd/", "r");
  REQUIRE(ls != nullptr);
  std::string listing;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, ls)) > 0;)
    listing.append(buf, n);
  REQUIRE(pclose(ls) == 0);
  CHECK_THAT(listing, !Catch::Contains(".mdb"));
}

TEST_CASE("every node whose put_node returned survives a kill -9, none half-written", "[memory]") {
  test::test_context ctx;
  std::mt19937 rng(std::random_device{}());
  for (int run = 0; run < 4; ++run) {
    const auto dir = ctx.dir() / ("store" + std::to_string(run));
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // The child writes nodes until it is killed, reporting each one after put_node returns.
      close(fds[0]);
      auto s = store::open(dir);
      if (!s)
        _exit(2);
      for (node_id id = 0;; ++id) {
        if (!s->put_node("t", sample_node(id), sample_detail(id)))
          _exit(3);
        if (write(fds[1], &id, sizeof id) != sizeof id)
          _exit(4);
      }
    }
    close(fds[1]);
    node_id first = -1;
    REQUIRE(read(fds[0], &first, sizeof first) == sizeof first); // it is writing
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int>(0, 100000)(rng)));
    REQUIRE(kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status)); // not an early exit of the child's own
    std::set<node_id> reported{first};
    for (node_id id; read(fds[0], &id, sizeof id) == sizeof id;)
      reported.insert(id);
    close(fds[0]);

    store s = open_store(dir);
    auto nodes = s.nodes("t");
    REQUIRE(nodes);
    INFO("run " << run << ": " << reported.size() << " reported, " << nodes->size() << " stored");
    REQUIRE(nodes->size() >= reported.size()); // the one in flight may have committed too
    for (size_t i = 0; i < nodes->size(); ++i) {
      const auto id = static_cast<node_id>(i);
      CHECK((*nodes)[i] == sample_node(id));
      CHECK(s.detail("t", id).value() == sample_detail(id)); // node and detail: one commit
    }
    // The writer lock the killed child may have held is recovered.
    REQUIRE(s.put_node("t", sample_node(1000000), {}));
  }
}

TEST_CASE("a batch commits all its writes in order, or none of them", "[memory]") {
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  memory::write_batch batch;
  batch.put_task(memory::task_state{"t", "/t.toml"});
  batch.put_node("t", sample_node(0), sample_detail(0));
  batch.put_node("t", sample_node(1), sample_detail(1));
  batch.put_outcome("t", 0, {tile64, 1, engine::outcome_kind::pending, "", 0});
  batch.put_outcome("t", 0, {vectorize, 2, engine::outcome_kind::pending, "", 0});
  batch.put_outcome("t", 0, {tile64, 1, engine::outcome_kind::accepted, "", 0.5}); // replaces
  batch.put_repair("t", 2, {0, "error", "", ""});
  batch.put_repair("t", 2, {0, "error again", "", ""});
  batch.add_skill_result("tile", "reduction", "H100", true, 0.5);
  batch.add_skill_result("tile", "reduction", "H100", false, 0);
  batch.put_source("h", "text");
  batch.put_calibration("GPU-1", "{}");
  batch.put_campaign(memory::campaign_record{"cfg", "now", "{}", 1});
  CHECK(batch.size() == 13);
  REQUIRE(s.write(batch));

  engine::short_term_memory expected;
  expected.record_outcome(0, {tile64, 1, engine::outcome_kind::accepted, "", 0.5});
  expected.record_outcome(0, {vectorize, 2, engine::outcome_kind::pending, "", 0});
  expected.record_repair(2, {0, "error", "", ""});
  expected.record_repair(2, {0, "error again", "", ""});
  CHECK(s.short_term("t").value() == expected);
  CHECK(s.nodes("t").value().size() == 2);
  CHECK(s.skill("tile", "reduction", "H100").value() == memory::skill_stat{2, 1, 0.5});
  CHECK(s.source("h").value() == "text");
  CHECK(s.calibration("GPU-1").value() == "{}");
  CHECK(s.campaign().value()->runs == 1);

  // One bad write, last in its batch: none of the batch is written.
  memory::write_batch bad;
  bad.put_node("t", sample_node(2), sample_detail(2));
  bad.add_skill_result("tile", "reduction", "H100", true, 1);
  bad.put_calibration("GPU-2", "not json");
  auto failed = s.write(bad);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code() == engine::errc::invalid_input);
  CHECK(s.nodes("t").value().size() == 2);
  CHECK(s.skill("tile", "reduction", "H100").value() == memory::skill_stat{2, 1, 0.5});
  CHECK(s.write(memory::write_batch{})); // an empty batch is a no-op
}

TEST_CASE("model transcripts are kept per task and node as written, and a resumed run, whose "
          "request ids start again, appends rather than replaces",
          "[memory]") {
  test::test_context ctx;
  const auto dir = ctx.dir() / "store";
  const std::string planner = transcript_text(1, "planner", "relu", 0);
  const std::string coder = transcript_text(2, "coder", "relu", 3);
  const std::string failed = transcript_text(3, "coder", "relu", 3, "failed");
  const std::string of_task = transcript_text(4, "distiller", "relu", -1);
  const std::string of_none = transcript_text(5, "planner", "", -1, "refused");
  {
    store s = open_store(dir);
    for (const std::string* t : {&coder, &planner, &failed, &of_task, &of_none})
      REQUIRE(s.put_transcript(*t));
    // Ordered by node, those of no node first, then as written; the text byte for byte.
    CHECK(s.transcripts("relu").value() ==
          std::vector<memory::transcript_record>{{"relu", -1, 0, of_task},
                                                 {"relu", 0, 0, planner},
                                                 {"relu", 3, 0, coder},
                                                 {"relu", 3, 1, failed}});
    CHECK(s.transcripts("relu", 3).value() ==
          std::vector<memory::transcript_record>{{"relu", 3, 0, coder}, {"relu", 3, 1, failed}});
    CHECK(s.transcripts("_campaign").value() ==
          std::vector<memory::transcript_record>{{"_campaign", -1, 0, of_none}});
    CHECK(s.transcripts("relu", 7).value().empty());
    CHECK(s.transcripts("sum").value().empty());
  }
  // A later run whose gateway numbers requests from 1 again (its transcripts folder was
  // removed): the request ids repeat, the records do not.
  store s = open_store(dir);
  const std::string again = transcript_text(2, "coder", "relu", 3);
  REQUIRE(s.put_transcript(again));
  CHECK(s.transcripts("relu", 3).value() ==
        std::vector<memory::transcript_record>{
            {"relu", 3, 0, coder}, {"relu", 3, 1, failed}, {"relu", 3, 2, again}});

  // inspect's lines: where each is kept, and role, model, outcome, tokens and latency.
  auto dump = s.dump();
  REQUIRE(dump);
  std::map<std::string, std::string> lines(dump->begin(), dump->end());
  CHECK(lines.at("transcripts/relu/3/0") == "transcript role=coder model=fake-model outcome=ok "
                                            "tokens=122+45 latency_ms=812.5 cost=0.00105 "
                                            "request=2");
  CHECK_THAT(lines.at("transcripts/relu/3/1"), Catch::Contains("outcome=failed"));
  CHECK_THAT(lines.at("transcripts/relu/-1/0"), Catch::StartsWith("transcript role=distiller"));
  CHECK_THAT(lines.at("transcripts/_campaign/-1/0"), Catch::Contains("outcome=refused"));
}

TEST_CASE("a text that is no model transcript is refused, saying what is wrong, and nothing is "
          "written",
          "[memory]") {
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  const std::string good = transcript_text(1, "coder", "relu", 3);
  auto without = [&](const std::string& field) {
    auto o = boost::json::parse(good).as_object();
    o.erase(field);
    return boost::json::serialize(o);
  };
  auto with = [&](const std::string& field, boost::json::value v) {
    auto o = boost::json::parse(good).as_object();
    o[field] = std::move(v);
    return boost::json::serialize(o);
  };
  const std::pair<std::string, std::string> bad[] = {
      {"{\"v\":1,\"type\":\"llm_transcript\",", "not JSON"},
      {with("type", "node"), "type 'node' where 'llm_transcript' belongs"},
      {with("v", 2), "format version 2"},
      {without("role"), "missing field 'role'"},
      {with("node", "3"), "field 'node' must be an integer"},
      {with("node", -2), "field 'node' must be a node id >= 0 or -1 (none), not -2"},
      {with("input_tokens", 1.5), "field 'input_tokens' must be an integer"},
      {with("messages", boost::json::array{1}), "'a message' must be an object"},
      {with("task", boost::json::string("re\0lu", 5)), "contains a NUL byte"}};
  for (const auto& [text, why] : bad) {
    CAPTURE(text);
    auto put = s.put_transcript(text);
    REQUIRE_FALSE(put);
    CHECK(put.error().code() == engine::errc::invalid_input);
    CHECK_THAT(put.error().message(), Catch::Contains(why));
  }
  CHECK(s.dump().value().size() == 1); // only the store header
  REQUIRE(s.put_transcript(good));
  CHECK(s.transcripts("relu").value().size() == 1);
  CHECK_FALSE(s.transcripts("relu", -2));
}

TEST_CASE("a transcript under another request's key reads as corrupt, naming its key", "[memory]") {
  test::test_context ctx;
  const auto dir = ctx.dir() / "store";
  { store s = open_store(dir); }
  namespace r = memory::records;
  write_behind_the_store(dir,
                         {{r::transcripts_db, r::join("relu", r::node_key(3), r::number_key(0)),
                           transcript_text(1, "coder", "sum", 3)}});
  store s = open_store(dir);
  auto read = s.transcripts("relu");
  REQUIRE_FALSE(read);
  CHECK(read.error().code() == engine::errc::io);
  CHECK_THAT(read.error().message(), Catch::Contains("corrupt record 'transcripts/relu/3/0'") &&
                                         Catch::Contains("holds the transcript of task 'sum'"));
}

TEST_CASE("put_node cost", "[.][memory][bench]") {
  // Not a test of speed (CI machines are shared): run it by hand to see what a write costs.
  test::test_context ctx;
  store s = open_store(ctx.dir() / "store");
  const int count = 500;
  auto start = std::chrono::steady_clock::now();
  for (node_id id = 0; id < count; ++id)
    REQUIRE(s.put_node("t", sample_node(id), sample_detail(id)));
  auto write_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      count;
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i)
    REQUIRE(s.nodes("t").value().size() == count);
  auto read_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      20;
  memory::write_batch batch;
  for (node_id id = count; id < node_id{2} * count; ++id)
    batch.put_node("t", sample_node(id), sample_detail(id));
  start = std::chrono::steady_clock::now();
  REQUIRE(s.write(batch));
  auto batch_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      count;
  std::printf("put_node: %.1f us per call (one commit + fsync each); in a batch of %d: %.1f us "
              "per node; nodes() of %d: %.0f us\n",
              write_us, count, batch_us, count, read_us);
}
