#include "engine/search_tree.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace ks::engine;

namespace {

/// Returns a timing with `median` ms and a 1% spread each side.
timing around(double median) {
  timing t;
  t.median_ms = median;
  t.p10_ms = median * 0.99;
  t.p90_ms = median * 1.01;
  t.trials = 30;
  return t;
}

/// Moves node `id` of `tree` to `status`, timed at `median` ms when the status says timed.
void settle(search_tree& tree, node_id id, node_status status, double median = 0) {
  node_record n = tree.node(id);
  n.status = status;
  if (median > 0) {
    n.disposition = disposition::passed;
    n.time = around(median);
  }
  REQUIRE(tree.update(n));
}

plan make_plan(std::string skill, std::map<std::string, std::string> params = {}) {
  return plan{std::move(skill), "a plan", std::move(params)};
}

/// Returns a tree: root (1 ms) -> a (0.8 ms) -> b (0.6 ms), and root -> c (rejected, 0.99).
search_tree small_tree() {
  search_tree tree;
  settle(tree, 0, node_status::accepted, 1.0);
  auto first = tree.expand(0, {make_plan("vectorize", {{"width", "4"}}), make_plan("unroll")});
  REQUIRE(first);
  settle(tree, (*first)[0], node_status::accepted, 0.8);
  settle(tree, (*first)[1], node_status::rejected, 0.99);
  auto second = tree.add_child((*first)[0], make_plan("tile", {{"bm", "64"}}));
  REQUIRE(second);
  settle(tree, *second, node_status::accepted, 0.6);
  return tree;
}

} // namespace

TEST_CASE("a new tree holds only the reference as its root", "[engine][search][tree]") {
  search_tree tree;
  CHECK(tree.size() == 1);
  CHECK(tree.candidates() == 0);
  CHECK(tree.root().id == 0);
  CHECK(tree.root().parent == no_node);
  CHECK(tree.root().depth == 0);
  CHECK(tree.root().plan == reference_plan());
  CHECK(tree.root().status == node_status::planned);
  CHECK_FALSE(tree.best_accepted());
}

TEST_CASE("an expansion makes one child per plan, sharing one expansion number",
          "[engine][search][tree]") {
  search_tree tree;
  settle(tree, 0, node_status::accepted, 1.0);
  auto ids = tree.expand(0, {make_plan("a"), make_plan("b"), make_plan("c")});
  REQUIRE(ids);
  CHECK(*ids == std::vector<node_id>{1, 2, 3});
  for (node_id id : *ids) {
    CHECK(tree.node(id).parent == 0);
    CHECK(tree.node(id).depth == 1);
    CHECK(tree.node(id).expansion == 1);
    CHECK(tree.node(id).status == node_status::planned);
  }
  CHECK(tree.total_expansions() == 1);
  CHECK(tree.expansions_of(0) == 1);
  CHECK(tree.children(0).size() == 3);
  CHECK(tree.expansion_members(1) == *ids);

  auto more = tree.add_child(0, make_plan("d"));
  REQUIRE(more);
  CHECK(tree.node(*more).expansion == 2);
  CHECK(tree.expansions_of(0) == 2);
  CHECK(tree.total_expansions() == 2);
}

TEST_CASE("only an accepted, open node can be expanded", "[engine][search][tree]") {
  search_tree tree;
  auto early = tree.add_child(0, make_plan("a"));
  REQUIRE_FALSE(early);
  CHECK(early.error().code() == errc::invalid_input);
  CHECK(early.error().message().find("planned") != std::string::npos);

  settle(tree, 0, node_status::accepted, 1.0);
  auto child = tree.add_child(0, make_plan("a"));
  REQUIRE(child);
  settle(tree, *child, node_status::rejected, 0.99);
  CHECK_FALSE(tree.add_child(*child, make_plan("b")));

  REQUIRE(tree.mark_exhausted(0));
  CHECK_FALSE(tree.add_child(0, make_plan("b")));
  CHECK_FALSE(tree.add_child(42, make_plan("b")));
}

TEST_CASE("a parent never gets the same plan twice, however it is worded",
          "[engine][search][tree]") {
  search_tree tree;
  settle(tree, 0, node_status::accepted, 1.0);
  REQUIRE(tree.add_child(0, make_plan("tile", {{"bm", "64"}})));
  plan reworded{" Tile ", "tile the rows by sixty-four", {{"bm", "64.0"}}};
  auto repeat = tree.add_child(0, reworded);
  REQUIRE_FALSE(repeat);
  CHECK(repeat.error().message().find("already tried") != std::string::npos);
  // Another parameter value is another plan.
  CHECK(tree.add_child(0, make_plan("tile", {{"bm", "128"}})));
}

TEST_CASE("a refused expansion changes nothing", "[engine][search][tree]") {
  search_tree tree;
  settle(tree, 0, node_status::accepted, 1.0);
  std::vector<node_record> before = tree.nodes();
  // The second and third plans repeat each other: the whole batch is refused.
  CHECK_FALSE(tree.expand(0, {make_plan("a"), make_plan("b"), make_plan("B")}));
  CHECK_FALSE(tree.expand(0, {make_plan("a"), make_plan("")}));
  CHECK_FALSE(tree.expand(0, {}));
  CHECK(tree.nodes() == before);
  CHECK(tree.total_expansions() == 0);
}

TEST_CASE("lineage returns the plans from the root to the leaf", "[engine][search][tree]") {
  search_tree tree = small_tree();
  auto plans = tree.lineage(3);
  REQUIRE(plans);
  REQUIRE(plans->size() == 3);
  CHECK((*plans)[0] == reference_plan());
  CHECK((*plans)[1].skill == "vectorize");
  CHECK((*plans)[2].skill == "tile");
  auto ids = tree.lineage_ids(3);
  REQUIRE(ids);
  CHECK(*ids == std::vector<node_id>{0, 1, 3});
  auto root_only = tree.lineage(0);
  REQUIRE(root_only);
  CHECK(root_only->size() == 1);
  CHECK_FALSE(tree.lineage(7));
  CHECK_FALSE(tree.lineage(-1));
}

TEST_CASE("best_accepted returns the fastest accepted node", "[engine][search][tree]") {
  search_tree tree = small_tree();
  CHECK(tree.best_accepted() == node_id{3});
  CHECK(tree.speedup(3) == Approx(1.0 / 0.6));
  CHECK(tree.speedup(0) == Approx(1.0));
  // A faster node that was rejected does not count.
  auto fast = tree.add_child(3, make_plan("fast_but_rejected"));
  REQUIRE(fast);
  settle(tree, *fast, node_status::rejected, 0.1);
  CHECK(tree.best_accepted() == node_id{3});
}

TEST_CASE("expandable nodes are accepted, open and above the depth limit",
          "[engine][search][tree]") {
  search_tree tree = small_tree();
  CHECK(tree.expandable(8) == std::vector<node_id>{0, 1, 3});
  CHECK(tree.expandable(2) == std::vector<node_id>{0, 1});
  REQUIRE(tree.mark_exhausted(1));
  CHECK(tree.expandable(8) == std::vector<node_id>{0, 3});
  CHECK(tree.node(1).expansion_state == expansion_state::exhausted);
}

TEST_CASE("an update may not change a node's identity", "[engine][search][tree]") {
  search_tree tree = small_tree();
  node_record moved = tree.node(3);
  moved.parent = 2;
  CHECK_FALSE(tree.update(moved));
  node_record replanned = tree.node(3);
  replanned.plan.params["bm"] = "128";
  CHECK_FALSE(tree.update(replanned));
  node_record unknown = tree.node(3);
  unknown.id = 99;
  CHECK_FALSE(tree.update(unknown));
  node_record progress = tree.node(3);
  progress.source_hash = "abc123";
  REQUIRE(tree.update(progress));
  CHECK(tree.node(3).source_hash == "abc123");
}

TEST_CASE("a timed status needs a timing and a passing disposition", "[engine][search][tree]") {
  search_tree tree = small_tree();
  node_record n = tree.node(2);
  n.time = timing{};
  CHECK_FALSE(tree.update(n)); // rejected without a timing
  n = tree.node(2);
  n.disposition = disposition::incorrect;
  CHECK_FALSE(tree.update(n)); // rejected but incorrect
  n = tree.node(2);
  n.status = node_status::verified;
  n.disposition = disposition::not_verified;
  CHECK_FALSE(tree.update(n)); // verified without a verdict
  n.disposition = disposition::incorrect;
  n.failure_kind = "wrong_result";
  CHECK(tree.update(n));
  CHECK(is_final(tree.node(2)));
}

TEST_CASE("counts per status and disposition add up", "[engine][search][tree]") {
  search_tree tree = small_tree();
  auto extra = tree.expand(3, {make_plan("x"), make_plan("y"), make_plan("z")});
  REQUIRE(extra);
  node_record broken = tree.node((*extra)[0]);
  broken.status = node_status::compile_failed;
  broken.failure_kind = "compile_error";
  REQUIRE(tree.update(broken));
  node_record coded = tree.node((*extra)[1]);
  coded.status = node_status::coded;
  REQUIRE(tree.update(coded));

  CHECK(tree.count(node_status::accepted) == 3);
  CHECK(tree.count(node_status::rejected) == 1);
  CHECK(tree.count(node_status::compile_failed) == 1);
  CHECK(tree.count(node_status::coded) == 1);
  CHECK(tree.count(node_status::planned) == 1);
  CHECK(tree.count(disposition::passed) == 4);
  CHECK(tree.count(disposition::not_verified) == 3);
  CHECK(tree.in_flight() == 2);
  auto all = tree.counts();
  int64_t total = 0;
  for (int64_t c : all)
    total += c;
  CHECK(total == tree.size());
  CHECK(all[static_cast<size_t>(node_status::accepted)] == 3);
}

TEST_CASE("a tree rebuilt from its records equals the original", "[engine][search][tree]") {
  search_tree tree = small_tree();
  REQUIRE(tree.mark_exhausted(1));
  auto rebuilt = search_tree::from_records(tree.nodes());
  REQUIRE(rebuilt);
  CHECK(rebuilt->nodes() == tree.nodes());
  CHECK(rebuilt->total_expansions() == tree.total_expansions());
  CHECK(rebuilt->expansions_of(0) == tree.expansions_of(0));
  CHECK(rebuilt->expansions_of(1) == 1);
  CHECK(std::vector<node_id>(rebuilt->children(0).begin(), rebuilt->children(0).end()) ==
        std::vector<node_id>{1, 2});
  CHECK(rebuilt->expandable(8) == tree.expandable(8));
  // It keeps growing where the original stopped.
  auto next = rebuilt->add_child(3, make_plan("next"));
  REQUIRE(next);
  CHECK(rebuilt->node(*next).expansion == 3);
}

TEST_CASE("from_records refuses records that break the tree's invariants",
          "[engine][search][tree]") {
  const std::vector<node_record> good = small_tree().nodes();
  CHECK_FALSE(search_tree::from_records({}));

  std::vector<node_record> gap = good;
  gap[2].id = 5;
  CHECK_FALSE(search_tree::from_records(gap));

  std::vector<node_record> orphan = good;
  orphan[1].parent = 3; // a parent created after its child
  CHECK_FALSE(search_tree::from_records(orphan));

  std::vector<node_record> too_deep = good;
  too_deep[3].depth = 5;
  CHECK_FALSE(search_tree::from_records(too_deep));

  std::vector<node_record> twin = good;
  twin[2].plan = twin[1].plan; // two children of the root with one plan
  auto refused = search_tree::from_records(twin);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message().find("node 2") != std::string::npos);

  std::vector<node_record> untimed = good;
  untimed[3].time = timing{};
  CHECK_FALSE(search_tree::from_records(untimed));
}

TEST_CASE("persisted enums keep their numbers and names", "[engine][search][tree]") {
  CHECK(static_cast<int>(node_status::planned) == 0);
  CHECK(static_cast<int>(node_status::compile_failed) == 3);
  CHECK(static_cast<int>(node_status::timed_out) == 8);
  CHECK(static_cast<int>(node_status::accepted) == 10);
  CHECK(static_cast<int>(disposition::incorrect) == 2);
  CHECK(static_cast<int>(expansion_state::exhausted) == 1);
  for (int32_t i = 0; i < status_count; ++i) {
    auto s = static_cast<node_status>(i);
    CHECK(parse_node_status(to_string(s)) == s);
  }
  CHECK(parse_disposition("passed") == disposition::passed);
  CHECK_FALSE(parse_node_status("finished"));
}

TEST_CASE("plans compare by skill and canonical parameters, never by description",
          "[engine][search][plan]") {
  plan a{"vectorize", "load 16 bytes per thread", {{"width", "16"}, {"unroll", "2"}}};
  plan b{" Vectorize", "wider loads", {{"unroll", "2.0"}, {"width", "016"}}};
  plan c{"vectorize", "load 16 bytes per thread", {{"width", "8"}, {"unroll", "2"}}};
  CHECK(plan_key(a) == "vectorize(unroll=2,width=16)");
  CHECK(same_plan(a, b));
  CHECK_FALSE(same_plan(a, c));
  CHECK_FALSE(a == b); // equality of values still sees the wording
  CHECK(plan_key(plan{"x", "", {{"mode", " fast "}}}) == "x(mode=fast)");
  CHECK(plan_key(plan{"x", "", {{"v", "1e1"}}}) == plan_key(plan{"x", "", {{"v", "10"}}}));
  CHECK(plan_key(plan{"x", "", {{"v", "10abc"}}}) == "x(v=10abc)");
}
