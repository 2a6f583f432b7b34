#include "report/bench_trace.hpp"
#include "report/html_report.hpp"
#include "report/html_writer.hpp"
#include "report/plot_axis.hpp"
#include "report/report_parts.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include "test_context.hpp"

namespace json = boost::json;
using namespace ks;
using Catch::Matchers::Contains;

namespace {

// A campaign of one GPU and two tasks as results.json says it: relu searched to a declared
// winner (node 3, through node 1), profiled; sum whose op has no floating-point cost.
constexpr const char* campaign_results = R"json({
  "format": "kernelskill-results", "version": 1,
  "campaign": {"started_at": "2026-11-27T10:00:00Z", "runs": 1,
    "config_text": "gpus = [0]\n[campaign]\ntasks = [\"relu.toml\"]\n",
    "environment": {"host": "box", "arch": "sm_90a", "nvcc": "nvcc 13.0",
      "gpus": [{"index": 0, "name": "Scripted GPU", "cc": "9.0", "sms": 132,
                "calibration": {"dram_gbps": 3000, "fp32_gflops": 60000}}]}},
  "torch_baselines": {"file": "b.json", "device": "NVIDIA H100", "torch_version": "2.11",
    "date": "2026-11-26", "compile_mode": "default", "device_matches": false,
    "device_note": "the baselines were measured on NVIDIA H100, not on Scripted GPU"},
  "geomeans": {"speedup": 2.0, "speedup_vs_eager": 1.5, "speedup_vs_compile": 0.9},
  "tasks": [
    {"name": "relu", "state": "done", "stop_reason": "patience", "stop_text": "",
     "reference": {"median_ms": 2.0, "roofline_floor_ms": 0.5, "flops": 1e8, "bytes": 8e8,
                   "home_gpu": 0},
     "winner": {"node": 3, "declared": true, "median_ms": 1.0, "speedup": 2.0,
                "fraction_of_roofline": 0.5, "file": "best/relu.cu",
                "lineage": [{"node": 0}, {"node": 1}, {"node": 3}]},
     "torch_eager_ms": 1.5, "torch_compile_ms": 0.9,
     "speedup_vs_eager": 1.5, "speedup_vs_compile": 0.9,
     "counts": {"accepted": 3, "rejected": 1, "compile_failed": 1}, "in_flight": 0,
     "nodes": [
       {"id": 0, "parent": null, "depth": 0, "status": "accepted", "disposition": "passed",
        "plan": {"key": "", "description": "the reference"},
        "timing": {"median_ms": 2.0, "p10_ms": 1.9, "p90_ms": 2.1, "trials": 30}},
       {"id": 1, "parent": 0, "depth": 1, "status": "accepted", "disposition": "passed",
        "plan": {"key": "vectorize(VEC=4)", "description": "float4 <loads> & stores"},
        "timing": {"median_ms": 1.4, "p10_ms": 1.3, "p90_ms": 1.5, "trials": 30}},
       {"id": 2, "parent": 0, "depth": 1, "status": "compile_failed",
        "disposition": "not_verified", "failure_kind": "compile",
        "failure_message": "error: <expected> ';'",
        "plan": {"key": "unroll(U=8)", "description": ""}, "timing": null},
       {"id": 3, "parent": 1, "depth": 2, "status": "accepted", "disposition": "passed",
        "plan": {"key": "grid_stride(B=256)", "description": ""},
        "timing": {"median_ms": 1.05, "p10_ms": 1.0, "p90_ms": 1.1, "trials": 30},
        "diagnosis": {"bound": "memory", "text": "DRAM at 91% of its peak",
          "evidence": [{"metric": "dram_throughput", "value": 91, "relation": ">=",
                        "threshold": 80}],
          "hardware": {"kernel": "relu_kernel", "dram_throughput_pct": 91}}},
       {"id": 4, "parent": 1, "depth": 2, "status": "rejected", "disposition": "passed",
        "plan": {"key": "block(B=512)", "description": ""},
        "timing": {"median_ms": 1.45, "p10_ms": 1.4, "p90_ms": 1.5, "trials": 30}}]},
    {"name": "sum", "state": "searching", "stop_reason": "", "stop_text": "",
     "reference": {"median_ms": 3.0, "roofline_floor_ms": 0, "flops": 0, "bytes": 4e8,
                   "home_gpu": 0},
     "winner": null, "counts": {}, "in_flight": 1,
     "nodes": [{"id": 0, "parent": null, "depth": 0, "status": "accepted",
                "disposition": "passed", "plan": {"key": ""},
                "timing": {"median_ms": 3.0, "p10_ms": 2.9, "p90_ms": 3.1, "trials": 30}}]}]
})json";

report::report_input campaign_input() {
  report::report_input input;
  input.results = json::parse(campaign_results).as_object();
  input.winner_sources["relu"] = "__global__ void relu() { if (a < b && c > d) {} }\n";
  report::trace_run run;
  run.started_unix_s = 1.8e9;
  run.gpus = 2;
  run.jobs = {{0, "verify", "verify", "relu", "#0", 0.0, 0.5, true},
              {0, "time", "reference_time", "relu", "#0", 0.5, 1.5, true},
              {1, "time", "branch_time", "relu", "#1", 0.7, 1.2, false}};
  input.trace = {run};
  return input;
}

// Returns the <svg> elements of `html` whose data-plot is `kind`, each as its text.
std::vector<std::string> plots_of(const std::string& html, const std::string& kind) {
  std::vector<std::string> out;
  const std::string open = "<svg class=\"plot\" data-plot=\"" + kind + "\"";
  for (size_t at = html.find(open); at != std::string::npos; at = html.find(open, at + 1))
    out.push_back(html.substr(at, html.find("</svg>", at) - at));
  return out;
}

int64_t count_of(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("report.html is one file that fetches nothing and escapes what it quotes", "[report]") {
  std::string html = report::render_report_html(campaign_input());
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_THAT(html, Contains("<html lang=\"en\">"));
  CHECK_THAT(html, Contains("http-equiv=\"Content-Security-Policy\" "
                            "content=\"default-src &#39;none&#39;"));
  // No address to fetch: no src, no external href, no url().
  CHECK_FALSE(std::regex_search(html, std::regex(R"((src=|url\(|href="(?!#)|https?:))")));
  // What comes from outside is text: the plan's description, the compiler's message, the
  // source.
  CHECK_THAT(html, Contains("float4 &lt;loads&gt; &amp; stores"));
  CHECK_THAT(html, Contains("error: &lt;expected&gt; &#39;;&#39;"));
  CHECK_THAT(html, Contains("if (a &lt; b &amp;&amp; c &gt; d)"));
  CHECK_FALSE(html.find("<loads>") != std::string::npos);
}

TEST_CASE("report.html draws a roofline per GPU with each task's four times", "[report]") {
  std::string html = report::render_report_html(campaign_input());
  std::vector<std::string> rooflines = plots_of(html, "roofline");
  REQUIRE(rooflines.size() == 1);
  const std::string& plot = rooflines.front();
  // relu: reference, best, eager and compile; sum has no flops and is named instead.
  CHECK(count_of(plot, "class=\"point m-reference\"") == 1);
  CHECK(count_of(plot, "class=\"point m-best\"") == 1);
  CHECK(count_of(plot, "class=\"point m-eager\"") == 1);
  CHECK(count_of(plot, "class=\"point m-compile\"") == 1);
  CHECK_THAT(plot, Contains("class=\"ceiling\""));
  CHECK_THAT(plot, Contains("relu, best kernel: 1.000 ms, 100 GFLOP/s at 0.125 FLOP/byte"));
  CHECK_THAT(plot, Contains("aria-labelledby=\"roofline-gpu0-title roofline-gpu0-desc\""));
  CHECK_THAT(html, Contains("Not on a roofline (no floating-point work, or no cost in "
                            "results.json): sum."));
}

TEST_CASE("the roofline writes a task's name only where it covers no other name", "[report]") {
  report::report_input input = campaign_input();
  // Three tasks at relu's place: three points, one name; the ceilings keep their names.
  json::array& tasks = input.results["tasks"].as_array();
  for (const char* name : {"relu_again", "relu_once_more"}) {
    json::object copy = tasks.front().as_object();
    copy["name"] = name;
    tasks.push_back(copy);
  }
  std::string plot = plots_of(report::render_report_html(input), "roofline").front();
  CHECK(count_of(plot, "class=\"point m-best\"") == 3);
  CHECK(count_of(plot, "class=\"point-label\"") == 1);
  CHECK(count_of(plot, "class=\"ceiling-label\"") == 2);
}

TEST_CASE("a task's tree shows every node and highlights the winning lineage", "[report]") {
  std::string html = report::render_report_html(campaign_input());
  std::vector<std::string> trees = plots_of(html, "tree");
  REQUIRE(trees.size() == 2);
  const std::string& relu = trees.front();
  CHECK(count_of(relu, "class=\"point node") == 5);
  CHECK(count_of(relu, "class=\"point node g-accepted lineage\"") == 3);
  CHECK(count_of(relu, "class=\"point node g-failed\"") == 1);
  CHECK(count_of(relu, "class=\"edge lineage\"") == 2);
  // Hover (a title) and click (a link to the node's row) both say the node's plan and time.
  CHECK_THAT(relu, Contains("<title>node 3: grid_stride(B=256); accepted, 1.050 ms (1.90x the "
                            "reference)</title>"));
  CHECK_THAT(relu, Contains("href=\"#task-relu-n3\""));
  CHECK_THAT(html, Contains("<tr id=\"task-relu-n3\""));
}

TEST_CASE("a task's progress, spread, diagnosis and source are in its section", "[report]") {
  std::string html = report::render_report_html(campaign_input());
  std::vector<std::string> progress = plots_of(html, "progress");
  REQUIRE(progress.size() == 2);
  CHECK(count_of(progress.front(), "class=\"point ") == 4); // the four timed nodes of relu
  CHECK_THAT(progress.front(), Contains("class=\"best-so-far\""));
  std::vector<std::string> spread = plots_of(html, "spread");
  REQUIRE(spread.size() == 2);
  // The reference and the three accepted candidates, the winner's final median beside it.
  CHECK(count_of(spread.front(), "class=\"point spread") == 3);
  CHECK(count_of(spread.front(), "class=\"point final\"") == 1);
  CHECK_THAT(html, Contains("<strong>memory</strong>: DRAM at 91% of its peak"));
  CHECK_THAT(html, Contains("The winner&#39;s source (best/relu.cu)"));
}

TEST_CASE("the spread plot shows each finalist's rounds in the finals, from the bench trace",
          "[report]") {
  report::report_input input = campaign_input();
  // Two runs: the first's finals were cut short, the resume's count; jobs that are no final
  // round, failed, or carry a label of another form are not rounds.
  report::trace_run first;
  first.jobs = {{0, "time", "final_round", "relu", "relu#3 (final)", 1, 2, true, 9.0}};
  report::trace_run resume;
  resume.jobs = {{0, "time", "final_round", "relu", "relu#3 (final)", 1, 2, true, 1.01},
                 {1, "time", "final_round", "relu", "relu#0 (final)", 2, 3, true, 2.02},
                 {0, "time", "final_round", "relu", "relu#3 (final)", 3, 4, true, 0.99},
                 {1, "time", "final_round", "relu", "relu#0 (final)", 4, 5, false, 0},
                 {0, "time", "branch_time", "relu", "relu#3", 5, 6, true, 1.5},
                 {0, "time", "final_round", "relu", "relu#x (final)", 6, 7, true, 1.5}};
  input.trace = {first, resume};
  auto rounds = report::final_rounds_of(input.trace);
  REQUIRE(rounds.count("relu") == 1);
  REQUIRE(rounds["relu"].size() == 3);
  CHECK(rounds["relu"][0].node == 3);
  CHECK(rounds["relu"][0].ms == 1.01);
  CHECK(rounds["relu"][1].node == 0);
  CHECK(rounds["relu"][1].gpu == 1);
  std::string html = report::render_report_html(input);
  std::vector<std::string> spread = plots_of(html, "spread");
  REQUIRE_FALSE(spread.empty());
  // The winner (node 3) and the reference each get their rounds' ticks, named in a tooltip.
  CHECK(count_of(spread.front(), "class=\"point round\"") == 2);
  CHECK_THAT(spread.front(), Contains("node 3 (winner): 2 rounds in the finals: "));
  CHECK_THAT(spread.front(), Contains("as ticks under its bar"));
  // Without a trace the plot says nothing of rounds.
  input.trace.clear();
  std::string plain = report::render_report_html(input);
  CHECK(count_of(plots_of(plain, "spread").front(), "class=\"point round\"") == 0);
}

TEST_CASE("the speedup table sorts by data and ends with the geomeans", "[report]") {
  std::string html = report::render_report_html(campaign_input());
  CHECK_THAT(html, Contains("<table class=\"sortable\" id=\"speedups\">"));
  CHECK_THAT(html, Contains("<td class=\"num\" data-sort=\"2\">2.00x</td>"));
  CHECK_THAT(html, Contains("<th scope=\"row\">geomean</th>"));
  CHECK_THAT(html, Contains("<td class=\"num\">1.50x</td>"));
  // The baselines came from another card: a warning at the top.
  CHECK_THAT(html, Contains("Torch baselines: the baselines were measured on NVIDIA H100"));
}

TEST_CASE("the timeline has a lane per GPU and each GPU's busy and idle time", "[report]") {
  std::string html = report::render_report_html(campaign_input());
  std::vector<std::string> timelines = plots_of(html, "timeline");
  REQUIRE(timelines.size() == 1);
  CHECK(count_of(timelines.front(), "class=\"point job") == 3);
  CHECK(count_of(timelines.front(), "class=\"lane\"") == 2);
  CHECK_THAT(timelines.front(), Contains("class=\"point job p-branch_time not-ok\""));
  // GPU 0 worked 1.5 s of the 1.5 s run, GPU 1 0.5 s.
  CHECK_THAT(html, Contains("<th scope=\"row\">GPU 1</th><td>1</td><td>0.5 s</td><td>1 s</td>"));
}

TEST_CASE("a campaign with no trace and no timing yet still renders, saying so", "[report]") {
  report::report_input input;
  input.results = json::object{{"format", "kernelskill-results"}, {"tasks", json::array{}}};
  std::string html = report::render_report_html(input);
  CHECK_THAT(html, Contains("No roofline: no task has been timed"));
  CHECK_THAT(html, Contains("No bench job in the bench trace"));
  CHECK(plots_of(html, "roofline").empty());
}

TEST_CASE("a dry run's report shows each task's reference and candidates as a tree", "[report]") {
  report::dry_run_task relu;
  relu.name = "relu";
  relu.lines = {"relu: reference compiled for sm_90a"};
  engine::node_record root;
  root.id = 0;
  root.status = engine::node_status::compiled;
  relu.nodes.push_back(root);
  for (int64_t i = 1; i <= 3; ++i) {
    engine::node_record n;
    n.id = i;
    n.parent = 0;
    n.depth = 1;
    n.plan.skill = "vectorize";
    n.status = i == 2 ? engine::node_status::compile_failed : engine::node_status::compiled;
    relu.nodes.push_back(n);
  }
  report::dry_run_facts facts;
  facts.arch = "sm_90a";
  report::report_input input;
  input.results = report::dry_run_document(facts, {relu});
  std::string html = report::render_report_html(input);
  std::vector<std::string> trees = plots_of(html, "tree");
  REQUIRE(trees.size() == 1);
  CHECK(count_of(trees.front(), "class=\"point node") == 4);
  CHECK(count_of(trees.front(), "g-failed") == 1);
  CHECK_THAT(html, Contains("<h1>kernelskill dry run</h1>"));
  CHECK_THAT(html, Contains("relu: reference compiled for sm_90a"));
  // Its table counts candidates: three, two compiled, one not.
  CHECK_THAT(html, Contains("<td class=\"num\" data-sort=\"3\">3</td><td class=\"num\" "
                            "data-sort=\"2\">2</td><td class=\"num\" data-sort=\"1\">1</td>"));
  CHECK(plots_of(html, "roofline").empty());
  CHECK(plots_of(html, "progress").empty());
}

TEST_CASE("write_report_html reads results.json, the winners' sources and the trace", "[report]") {
  test::test_context ctx;
  const std::filesystem::path out = ctx.dir() / "out";
  std::filesystem::create_directories(out / "best");
  std::ofstream(out / "results.json") << campaign_results;
  std::ofstream(out / "best" / "relu.cu") << "// the winner of relu\n";
  std::ofstream(out / report::bench_trace_file)
      << report::trace_run_header(1.8e9, 1) << "\n"
      << R"({"gpu": 0, "kind": "time", "purpose": "branch_time", "task": "relu", )"
      << R"("label": "#1", "start_s": 0.1, "end_s": 0.4, "queued_ms": 0, "ok": true})"
      << "\n"
      << R"({"gpu": 0, "kind": "ti)"; // a line cut short by a kill
  REQUIRE(report::write_report_html(out));
  std::string html = test::read_file(out / "report.html");
  CHECK_THAT(html, Contains("// the winner of relu"));
  CHECK(count_of(html, "class=\"point job") == 1);

  auto missing = report::write_report_html(ctx.dir() / "nothing");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == engine::errc::not_found);
}

TEST_CASE("the bench trace reader splits runs at their headers and skips broken lines",
          "[report]") {
  test::test_context ctx;
  const std::filesystem::path file = ctx.dir() / "trace.jsonl";
  std::ofstream(file) << R"({"gpu": 0, "kind": "verify", "start_s": 0, "end_s": 1})"
                      << "\n"
                      << report::trace_run_header(100, 2) << "\n"
                      << R"({"gpu": 1, "kind": "time", "start_s": 0, "end_s": 2, "ok": false})"
                      << "\nnot json\n";
  std::vector<report::trace_run> runs = report::read_bench_trace(file);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].started_unix_s == 0);
  CHECK(runs[0].jobs.size() == 1);
  CHECK(runs[1].started_unix_s == 100);
  CHECK(runs[1].gpus == 2);
  REQUIRE(runs[1].jobs.size() == 1);
  CHECK_FALSE(runs[1].jobs[0].ok);
  CHECK(report::read_bench_trace(ctx.dir() / "none").empty());
}

TEST_CASE("axes widen to round ticks and place values inside the frame", "[report]") {
  report::axis log = report::log_axis(0.3, 4000, 0, 100);
  CHECK(log.lo == Approx(0.1));
  CHECK(log.hi == Approx(10000));
  CHECK(log.ticks().size() == 6);
  CHECK(log.at(0.1) == Approx(0));
  CHECK(log.at(10000) == Approx(100));
  CHECK(log.at(1e9) == Approx(100)); // clamped
  report::axis linear = report::linear_axis(0, 7.3, 300, 0);
  CHECK(linear.lo == 0);
  CHECK(linear.hi == Approx(8));
  CHECK(linear.at(4) == Approx(150));
  CHECK(linear.ticks().front() == 0);
}

TEST_CASE("the writer escapes attribute values and closes what it opened", "[report]") {
  report::markup m;
  m.open("p", {{"title", "a \"quoted\" <b>"}}).text("x < y\x01").open("span");
  CHECK(m.depth() == 2);
  CHECK(m.take() == "<p title=\"a &quot;quoted&quot; &lt;b&gt;\">x &lt; y <span></span></p>");
}
