#include "memory/store.hpp"
#include "report/report_writer.hpp"
#include "report/torch_baselines.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <cmath>

#include "test_context.hpp"

using namespace ks;
namespace json = boost::json;

namespace {

engine::node_record timed_node(engine::node_id id, engine::node_id parent, double median_ms) {
  engine::node_record n;
  n.id = id;
  n.parent = parent;
  n.depth = parent < 0 ? 0 : 1;
  n.expansion = parent < 0 ? 0 : 1;
  n.plan = parent < 0 ? engine::reference_plan()
                      : engine::plan{"tile", "tile by 4", {{"n", std::to_string(id)}}};
  n.source_hash = "hash" + std::to_string(id);
  n.status = engine::node_status::accepted;
  n.disposition = engine::disposition::passed;
  n.time.median_ms = n.time.p10_ms = n.time.p90_ms = median_ms;
  n.time.trials = 10;
  return n;
}

/// A store holding a finished campaign on `gpu`: relu (reference 8 ms, winner 2 ms), sum
/// (reference 2 ms, winner 1 ms) and cumsum (reference 6 ms, winner 3 ms).
memory::store campaign_store(const test::test_context& ctx, const std::string& gpu) {
  auto opened = memory::store::open(ctx.dir() / "state");
  REQUIRE(opened);
  memory::store store = std::move(*opened);
  memory::campaign_record record;
  record.started_at = "2026-11-20T10:00:00Z";
  record.runs = 1;
  record.environment = json::serialize(
      json::object{{"gpus", json::array{json::object{{"index", 0}, {"name", gpu}}}}});
  REQUIRE(store.put_campaign(record));
  struct row {
    const char* name;
    double reference_ms;
    double best_ms;
  };
  for (row r : {row{"relu", 8.0, 2.0}, row{"sum", 2.0, 1.0}, row{"cumsum", 6.0, 3.0}}) {
    memory::task_state t;
    t.name = r.name;
    t.phase = engine::task_phase::done;
    t.stop_reason = "patience";
    t.winner = 1;
    t.winner_median_ms = r.best_ms;
    t.reference_median_ms = r.reference_ms;
    REQUIRE(store.put_task(t));
    REQUIRE(store.put_node(r.name, timed_node(0, engine::no_node, r.reference_ms), {}));
    REQUIRE(store.put_node(r.name, timed_node(1, 0, r.best_ms), {}));
  }
  return store;
}

/// relu: eager 4 ms, compile 3 ms; sum: eager 1.5 ms, compile failed; cumsum absent.
report::torch_baselines baselines() {
  auto b = report::parse_torch_baselines(R"json({
    "format": "kernelskill-torch-baselines", "version": 1,
    "device": "NVIDIA H100 80GB HBM3", "torch_version": "2.11.0", "date": "2026-11-20",
    "tasks": {
      "relu": {"eager": {"median_ms": 4, "p10_ms": 4, "p90_ms": 4, "trials": 10},
               "compile": {"median_ms": 3, "p10_ms": 3, "p90_ms": 3, "trials": 10}},
      "sum": {"eager": {"median_ms": 1.5, "p10_ms": 1.5, "p90_ms": 1.5, "trials": 10},
              "compile": {"error": "BackendCompilerFailed: inductor"}}}})json",
                                         "/data/h100.json");
  REQUIRE(b);
  return *b;
}

json::object results_of(const std::filesystem::path& dir) {
  json::value v = json::parse(test::read_file(dir / "results.json"));
  REQUIRE(v.is_object());
  return v.get_object();
}

const json::object& task_of(const json::object& results, const std::string& name) {
  for (const json::value& t : results.at("tasks").get_array())
    if (t.at("name").get_string() == name)
      return t.get_object();
  FAIL("no task " << name);
  return results;
}

double number(const json::value& v) {
  return v.is_double() ? v.get_double() : static_cast<double>(v.get_int64());
}

} // namespace

TEST_CASE("results.json gives each task its torch times, speedups over them and their geomeans",
          "[report]") {
  test::test_context ctx;
  memory::store store = campaign_store(ctx, "NVIDIA H100 80GB HBM3");
  report::torch_baselines b = baselines();
  REQUIRE(report::write_campaign_outputs(store, ctx.dir() / "out", &b));
  json::object results = results_of(ctx.dir() / "out");

  const json::object& relu = task_of(results, "relu");
  CHECK(number(relu.at("torch_eager_ms")) == 4.0);
  CHECK(number(relu.at("torch_compile_ms")) == 3.0);
  CHECK(number(relu.at("speedup_vs_eager")) == Approx(2.0));
  CHECK(number(relu.at("speedup_vs_compile")) == Approx(1.5));
  CHECK(relu.at("torch_note").is_null());
  CHECK(relu.at("slower_than_torch").get_array().empty()); // 1.5x faster than either

  const json::object& sum = task_of(results, "sum");
  CHECK(number(sum.at("speedup_vs_eager")) == Approx(1.5));
  CHECK(sum.at("speedup_vs_compile").is_null());
  CHECK(sum.at("torch_note").get_string() == "compile: BackendCompilerFailed: inductor");

  const json::object& cumsum = task_of(results, "cumsum");
  CHECK(cumsum.at("torch_eager_ms").is_null());
  CHECK(cumsum.at("speedup_vs_eager").is_null());
  CHECK(cumsum.at("torch_note").get_string() == "not in the baselines file");

  const json::object& g = results.at("geomeans").get_object();
  CHECK(number(g.at("speedup")) == Approx(std::cbrt(4.0 * 2.0 * 2.0)));
  CHECK(number(g.at("speedup_vs_eager")) == Approx(std::sqrt(2.0 * 1.5)));
  CHECK(number(g.at("speedup_vs_compile")) == Approx(1.5));
  CHECK(g.at("tasks_vs_eager").get_int64() == 2);
  CHECK(g.at("tasks_vs_compile").get_int64() == 1);

  const json::object& origin = results.at("torch_baselines").get_object();
  CHECK(origin.at("file").get_string() == "/data/h100.json");
  CHECK(origin.at("device").get_string() == "NVIDIA H100 80GB HBM3");
  CHECK(origin.at("device_matches").get_bool());
  CHECK(origin.at("device_note").is_null());
}

TEST_CASE("report.md has vs eager and vs compile columns, a geomean row and what they compare",
          "[report]") {
  test::test_context ctx;
  memory::store store = campaign_store(ctx, "NVIDIA H100 80GB HBM3");
  report::torch_baselines b = baselines();
  REQUIRE(report::write_campaign_outputs(store, ctx.dir() / "out", &b));
  std::string report = test::read_file(ctx.dir() / "out" / "report.md");
  INFO(report);
  CHECK(report.find("| task | state | reference | best | speedup | vs eager | vs compile | "
                    "roofline | nodes |") != std::string::npos);
  CHECK(report.find("| relu | done | 8.000 ms | 2.000 ms | 4.00x | 2.00x | 1.50x |") !=
        std::string::npos);
  CHECK(report.find("| sum | done | 2.000 ms | 1.000 ms | 2.00x | 1.50x | - |") !=
        std::string::npos);
  CHECK(report.find("| cumsum | done | 6.000 ms | 3.000 ms | 2.00x | - | - |") !=
        std::string::npos);
  CHECK(report.find("| **geomean** | | | | 2.52x | 1.73x | 1.50x |") != std::string::npos);
  CHECK(report.find("from `/data/h100.json`, measured on NVIDIA H100 80GB HBM3") !=
        std::string::npos);
  CHECK(report.find("- torch: eager 4.000 ms (2.00x), torch.compile 3.000 ms (1.50x)") !=
        std::string::npos);
  CHECK(report.find("Slower than torch beyond the noise (the best's p10 above torch's p90): "
                    "none.") != std::string::npos);
  CHECK(report.find("Warning") == std::string::npos);
}

TEST_CASE("without baselines the reports have no torch columns and results.json says null",
          "[report]") {
  test::test_context ctx;
  memory::store store = campaign_store(ctx, "NVIDIA H100 80GB HBM3");
  REQUIRE(report::write_campaign_outputs(store, ctx.dir() / "out"));
  std::string report = test::read_file(ctx.dir() / "out" / "report.md");
  CHECK(report.find("vs eager") == std::string::npos);
  CHECK(report.find("| task | state | reference | best | speedup | roofline | nodes |") !=
        std::string::npos);
  CHECK(report.find("| **geomean** | | | | 2.52x |") != std::string::npos);
  json::object results = results_of(ctx.dir() / "out");
  CHECK(results.at("torch_baselines").is_null());
  CHECK(task_of(results, "relu").at("speedup_vs_eager").is_null());
  CHECK(results.at("geomeans").at("speedup_vs_eager").is_null());

  auto status = report::describe_campaign(store);
  REQUIRE(status);
  CHECK(status->find("vs eager") == std::string::npos);
  CHECK(status->find("geomean") != std::string::npos);
}

TEST_CASE("baselines of another GPU are shown but flagged in both files and in status",
          "[report]") {
  test::test_context ctx;
  memory::store store = campaign_store(ctx, "NVIDIA H200");
  report::torch_baselines b = baselines();
  REQUIRE(report::write_campaign_outputs(store, ctx.dir() / "out", &b));
  json::object results = results_of(ctx.dir() / "out");
  const json::object& origin = results.at("torch_baselines").get_object();
  CHECK_FALSE(origin.at("device_matches").get_bool());
  CHECK(origin.at("device_note").get_string().find("this campaign runs on \"NVIDIA H200\"") !=
        std::string::npos);
  CHECK(number(task_of(results, "relu").at("speedup_vs_eager")) == Approx(2.0));
  std::string report = test::read_file(ctx.dir() / "out" / "report.md");
  CHECK(report.find("**Warning: the torch baselines in /data/h100.json were measured on") !=
        std::string::npos);

  auto status = report::describe_campaign(store, &b);
  REQUIRE(status);
  INFO(*status);
  CHECK(status->find("vs eager vs compile") != std::string::npos);
  CHECK(status->find("warning: the torch baselines") != std::string::npos);
}

TEST_CASE("a winner measured with a vendor library is labelled in results.json and report.md",
          "[report]") {
  test::test_context ctx;
  memory::store store = campaign_store(ctx, "NVIDIA H100 80GB HBM3");
  // relu's winner was verified with cuBLAS loaded, as bench.allow_vendor_libraries allows.
  memory::node_detail detail;
  detail.verify_json = R"({"passed":true,"trials":3,"vendor_libraries":)"
                       R"(["/usr/local/cuda/lib64/libcublas.so.13"]})";
  REQUIRE(store.put_node("relu", timed_node(1, 0, 2.0), detail));
  REQUIRE(report::write_campaign_outputs(store, ctx.dir()));

  json::object results = results_of(ctx.dir());
  const json::object& relu = task_of(results, "relu");
  const json::value& node = relu.at("nodes").as_array().at(1);
  REQUIRE(node.as_object().contains("vendor_libraries"));
  CHECK(node.at("vendor_libraries").as_array().at(0).as_string() ==
        "/usr/local/cuda/lib64/libcublas.so.13");
  CHECK(relu.at("winner").at("vendor_libraries").as_array().size() == 1);
  CHECK_FALSE(relu.at("nodes").as_array().at(0).as_object().contains("vendor_libraries"));
  CHECK_FALSE(task_of(results, "sum").at("winner").as_object().contains("vendor_libraries"));

  std::string report = test::read_file(ctx.dir() / "report.md");
  CHECK(report.find("(uses cublas: not its own kernels alone") != std::string::npos);
  CHECK(report.find(", uses cublas)") != std::string::npos);
}
