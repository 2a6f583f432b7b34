#include "memory/lmdb_env.hpp"
#include "memory/record_codec.hpp"
#include "memory/skill_store.hpp"

#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "test_context.hpp"

using namespace ks;
using memory::seed_action;
using memory::skill_store;

namespace {

skill_store open_memory(const std::filesystem::path& dir) {
  auto s = skill_store::open(dir);
  if (!s)
    FAIL("cannot open the skill memory: " << s.error().message());
  return std::move(*s);
}

engine::skill_files skill_named(const std::string& id, const std::string& guidance = "do it") {
  std::string toml = "id = \"" + id +
                     "\"\ntitle = \"T\"\nversion = 1\nfamilies = [\"elementwise\"]\n"
                     "guidance = \"" +
                     guidance +
                     "\"\n[[templates]]\nname = \"t\"\nfile = \"t.cu.mustache\"\n"
                     "params = [ { name = \"n\", values = [1, 2], default = 1 } ]\n";
  return engine::skill_files{"skills/" + id,
                             {{"skill.toml", toml}, {"t.cu.mustache", "int n = {{n}};\n"}}};
}

engine::skill_try try_of(const std::string& task, int64_t node, engine::outcome_kind outcome,
                         const std::string& skill = "tiles") {
  engine::skill_try t;
  t.skill = skill;
  t.family = "elementwise";
  t.arch = "sm_90a";
  t.task = task;
  t.node = node;
  t.parent = 0;
  t.outcome = outcome;
  t.gain = outcome == engine::outcome_kind::accepted ? 0.25 : 0;
  t.reference_speedup = outcome == engine::outcome_kind::accepted ? 1.5 : 0;
  t.failure_kind = outcome == engine::outcome_kind::failed ? "compile_error" : "";
  return t;
}

} // namespace

TEST_CASE("seeding adds built-in skills, refreshes a changed one and keeps a user's",
          "[memory][skills]") {
  test::test_context ctx;
  skill_store memory = open_memory(ctx.dir() / "memory");
  auto first = memory.seed({skill_named("a"), skill_named("b")}, "t0");
  REQUIRE(first.has_value());
  CHECK(*first == std::vector<std::pair<std::string, seed_action>>{{"a", seed_action::added},
                                                                   {"b", seed_action::added}});
  // The user imports their own "b"; then the built-in "a" changes.
  memory::stored_skill mine;
  mine.id = "b";
  mine.origin = engine::skill_origin::user;
  mine.files = skill_named("b", "the user's way").files;
  REQUIRE(memory.import_skills({mine}, "t1").has_value());
  auto second = memory.seed({skill_named("a", "a better way"), skill_named("b")}, "t2");
  REQUIRE(second.has_value());
  CHECK(*second == std::vector<std::pair<std::string, seed_action>>{{"a", seed_action::refreshed},
                                                                    {"b", seed_action::kept_user}});
  auto b = memory.skill("b");
  REQUIRE(b.has_value());
  REQUIRE(b->has_value());
  CHECK((*b)->origin == engine::skill_origin::user);
  CHECK((*b)->files.at("skill.toml").find("the user's way") != std::string::npos);
  auto library = memory.library();
  REQUIRE(library.has_value());
  CHECK(library->find("a")->guidance == "a better way");
  CHECK(library->find("b")->guidance == "the user's way");
  auto third = memory.seed({skill_named("a", "a better way")}, "t3");
  REQUIRE(third.has_value());
  CHECK(third->front().second == seed_action::unchanged);
}

TEST_CASE("an import is validated whole and writes nothing when one skill is broken",
          "[memory][skills]") {
  test::test_context ctx;
  skill_store memory = open_memory(ctx.dir() / "memory");
  memory::stored_skill good{"good", engine::skill_origin::user, 1, "", "",
                            "",     skill_named("good").files};
  memory::stored_skill broken{"broken", engine::skill_origin::user, 1, "", "",
                              "",       skill_named("broken").files};
  broken.files["skill.toml"] += "unknown_key = 3\n";
  auto ok = memory.import_skills({good, broken}, "t");
  REQUIRE_FALSE(ok.has_value());
  CHECK_THAT(ok.error().message(),
             Catch::Contains("skill 'broken' is not valid; nothing was imported"));
  CHECK_THAT(ok.error().message(),
             Catch::Contains("<broken>/skill.toml:10:1: unknown key 'unknown_key'"));
  auto all = memory.skills();
  REQUIRE(all.has_value());
  CHECK(all->empty());
  // An id that disagrees with its skill.toml is refused too.
  memory::stored_skill renamed = good;
  renamed.id = "other";
  CHECK_FALSE(memory.import_skills({renamed}, "t").has_value());
}

TEST_CASE("an imported or learned skill whose constraint cannot be evaluated is refused",
          "[memory][skills]") {
  test::test_context ctx;
  skill_store memory = open_memory(ctx.dir() / "memory");
  // Issue 27's distilled constraint: SIGFPE in every campaign on this memory before.
  memory::stored_skill fpe{"fpe", engine::skill_origin::learned, 1, "", "",
                           "",    skill_named("fpe").files};
  fpe.files["skill.toml"] += "constraints = [\"(-9223372036854775807 - 1) / (n - n - 1) != 0\"]\n";
  auto ok = memory.import_skills({fpe}, "t");
  REQUIRE_FALSE(ok.has_value());
  CHECK_THAT(ok.error().message(), Catch::Contains("skill 'fpe' is not valid"));
  CHECK_THAT(ok.error().message(), Catch::Contains("overflows"));
  CHECK_THAT(ok.error().message(), Catch::Contains("n = 1"));
  // A division by zero at one instantiation of the space (n = 2) is found by the walk.
  memory::stored_skill zero{"zero", engine::skill_origin::user, 1, "", "",
                            "",     skill_named("zero").files};
  zero.files["skill.toml"] += "constraints = [\"4 / (2 - n) > 0\"]\n";
  ok = memory.import_skills({zero}, "t");
  REQUIRE_FALSE(ok.has_value());
  CHECK_THAT(ok.error().message(), Catch::Contains("division by zero"));
  CHECK_THAT(ok.error().message(), Catch::Contains("n = 2"));
  // A constraint on task facts is left to the task: they are unknown here.
  memory::stored_skill facts{"facts", engine::skill_origin::user, 1, "", "",
                             "",      skill_named("facts").files};
  facts.files["skill.toml"] += "constraints = [\"task.cols / (task.rows - 1) > n\"]\n";
  CHECK(memory.import_skills({facts}, "t").has_value());
  auto all = memory.skills();
  REQUIRE(all.has_value());
  CHECK(all->size() == 1);
}

TEST_CASE("an export reads back and imports as the user's skills", "[memory][skills]") {
  test::test_context ctx;
  std::string text;
  {
    skill_store memory = open_memory(ctx.dir() / "one");
    REQUIRE(memory.seed({skill_named("a"), skill_named("b")}, "t0").has_value());
    auto all = memory.skills();
    REQUIRE(all.has_value());
    text = memory::export_skills(*all);
  }
  auto parsed = memory::parse_skill_export(text);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->size() == 2);
  skill_store other = open_memory(ctx.dir() / "two");
  REQUIRE(other.import_skills(*parsed, "t1").has_value());
  auto b = other.skill("b");
  REQUIRE(b.has_value());
  REQUIRE(b->has_value());
  CHECK((*b)->origin == engine::skill_origin::user);
  CHECK((*b)->files == skill_named("b").files);
  CHECK_FALSE(memory::parse_skill_export("{\"format\": \"something\"}").has_value());
  CHECK_FALSE(memory::parse_skill_export("not json").has_value());
}

TEST_CASE("a try counts once in its statistic, whatever offers it again", "[memory][skills]") {
  test::test_context ctx;
  skill_store memory = open_memory(ctx.dir() / "memory");
  CHECK(memory.record_try("run1", try_of("relu", 1, engine::outcome_kind::accepted)) == true);
  CHECK(memory.record_try("run1", try_of("relu", 1, engine::outcome_kind::accepted)) == false);
  CHECK(memory.record_try("run1", try_of("relu", 2, engine::outcome_kind::failed)) == true);
  CHECK(memory.record_try("run2", try_of("relu", 1, engine::outcome_kind::rejected)) == true);
  CHECK_FALSE(
      memory.record_try("run1", try_of("relu", 3, engine::outcome_kind::pending)).has_value());
  auto stats = memory.stats("elementwise", "sm_90a");
  REQUIRE(stats.has_value());
  REQUIRE(stats->count("tiles") == 1);
  const engine::skill_stats& s = stats->at("tiles");
  CHECK(s.tries == 3);
  CHECK(s.acceptances == 1);
  CHECK(s.compile_failures == 1);
  CHECK(s.rejections == 1);
  CHECK(s.best_speedup == Approx(1.5));
  CHECK(memory.stats("softmax", "sm_90a")->empty());
  CHECK(memory.tries("run1")->size() == 2);
}

TEST_CASE("statistics survive a kill at any point with no try counted twice",
          "[memory][skills][crash]") {
  test::test_context ctx;
  const std::filesystem::path dir = ctx.dir() / "memory";
  // Each round a child counts tries 0 .. 399 of one campaign (as a resume would offer them all
  // again) and is killed at a random moment; the parent then checks that every statistic
  // equals its ledger, and finally offers every try once more.
  std::mt19937 random(12345);
  const int64_t total = 400;
  for (int round = 0; round < 6; ++round) {
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      auto m = skill_store::open(dir);
      if (!m)
        _exit(3);
      for (int64_t node = 0; node < total; ++node) {
        auto outcome =
            node % 3 == 0 ? engine::outcome_kind::accepted : engine::outcome_kind::rejected;
        if (!m->record_try("run", try_of("task", node, outcome, node % 2 == 0 ? "even" : "odd")))
          _exit(4);
      }
      _exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 40));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)));
    skill_store memory = open_memory(dir);
    auto ledger = memory.tries("run");
    REQUIRE(ledger.has_value());
    auto stats = memory.stats("elementwise", "sm_90a");
    REQUIRE(stats.has_value());
    int64_t counted = 0;
    for (const auto& [skill, s] : *stats)
      counted += s.tries;
    CHECK(counted == static_cast<int64_t>(ledger->size()));
  }
  skill_store memory = open_memory(dir);
  for (int64_t node = 0; node < total; ++node) {
    auto outcome = node % 3 == 0 ? engine::outcome_kind::accepted : engine::outcome_kind::rejected;
    REQUIRE(
        memory.record_try("run", try_of("task", node, outcome, node % 2 == 0 ? "even" : "odd")));
  }
  auto stats = memory.stats("elementwise", "sm_90a");
  REQUIRE(stats.has_value());
  CHECK(stats->at("even").tries == total / 2);
  CHECK(stats->at("odd").tries == total / 2);
  CHECK(stats->at("even").acceptances + stats->at("odd").acceptances == (total + 2) / 3);
}

TEST_CASE("a skill memory of another format fails to open with a message saying so",
          "[memory][skills]") {
  test::test_context ctx;
  const std::filesystem::path dir = ctx.dir() / "memory";
  {
    auto env = memory::lmdb::env::open(dir, int64_t{1} << 24, 5);
    REQUIRE(env.has_value());
    auto t = memory::lmdb::txn::begin(*env, memory::lmdb::access::read_write);
    REQUIRE(t.has_value());
    auto meta = t->open_db("meta", memory::lmdb::access::read_write);
    REQUIRE(meta.has_value());
    REQUIRE(t->put(*meta, "store", R"({"v":2,"type":"skill_store","magic":"kernelskill-skills"})"));
    REQUIRE(t->commit());
  }
  auto opened = skill_store::open(dir);
  REQUIRE_FALSE(opened.has_value());
  CHECK_THAT(opened.error().message(),
             Catch::Contains("format version 2 (this kernelskill reads version 1)"));
}

TEST_CASE("a node's genotype round-trips and a plan written before genotypes still reads",
          "[memory][skills]") {
  engine::node_record n;
  n.id = 3;
  n.parent = 1;
  n.depth = 2;
  n.expansion = 2;
  n.plan = engine::plan{"tiles", "more threads", {{"threads", "512"}}, 4, "grid"};
  auto back = memory::records::decode_node(memory::records::encode(n));
  REQUIRE(back.has_value());
  CHECK(back->plan == n.plan);
  // The same record as a store written before skills had versions and templates holds it.
  std::string old = memory::records::encode(n);
  for (const char* field : {",\"skill_version\":4", ",\"template\":\"grid\""}) {
    size_t at = old.find(field);
    REQUIRE(at != std::string::npos);
    old.erase(at, std::string(field).size());
  }
  back = memory::records::decode_node(old);
  REQUIRE(back.has_value());
  CHECK(back->plan.skill == "tiles");
  CHECK(back->plan.params == n.plan.params);
  CHECK(back->plan.skill_version == 0);
  CHECK(back->plan.template_name.empty());
}
