// Whole campaigns through the real actors, on a machine without a GPU: the bench workers are
// ks-scripted-worker in campaign mode (it reads each candidate's KS_ macros from the kernel.cu
// the compile cache keeps beside the shared object, and times it by a model with a clear
// optimum) and nvcc is tests/actors/fake_nvcc.sh (an empty shared object and a ptxas-like
// report). Faults are injected by job number through $KS_SCRIPTED_FAULTS, counted over every
// worker of the campaign in the test's own folder. The kill -9 test runs the real kernelskill
// binary as a child and kills it at random points.

#include "actors/run_campaign.hpp"
#include "config/campaign_config.hpp"
#include "memory/store.hpp"
#include "report/report_writer.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_context.hpp"

using namespace ks;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

namespace {

/// Sets environment variables for one test and restores the previous values after it.
class scoped_env {
public:
  scoped_env() = default;
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

  ~scoped_env() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }

  /// Sets `name` to `value`.
  void set(const std::string& name, const std::string& value) {
    save(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }

private:
  void save(const std::string& name) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  }

  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// What a test campaign looks like; every number small, so that it runs in seconds.
struct campaign_setup {
  std::vector<std::string> tasks = {"19_relu", "47_sum"}; ///< quickstart manifests
  std::vector<std::string> task_files;                    ///< more manifests, by path
  std::string gpus = "[0]";
  int64_t candidates = 6;
  int64_t branches = 2;
  int64_t depth = 2;
  int64_t patience = 2;
  double verify_timeout_s = 10;
  double time_timeout_s = 10;
  std::string search_extra; ///< more lines of [search] ("profile = \"none\"\n", ...)
  std::string bench_extra;  ///< more lines of [bench] ("allow_vendor_libraries = true\n")
};

fs::path fake_nvcc() {
  return test::source_dir() / "tests" / "actors" / "fake_nvcc.sh";
}

fs::path scripted_worker() {
  return test::bin_dir() / "ks-scripted-worker";
}

std::string config_text(const campaign_setup& s) {
  std::ostringstream t;
  t << "gpus = " << s.gpus << "\n\n[campaign]\ntasks = [";
  for (size_t i = 0; i < s.tasks.size(); ++i)
    t << (i ? ", " : "") << '"'
      << (test::source_dir() / "tasks" / "quickstart" / (s.tasks[i] + ".toml")).string() << '"';
  for (const std::string& file : s.task_files)
    t << ", \"" << file << '"';
  t << "]\noutput = \"out\"\nwall_time_s = 120\ncandidates_per_task = " << s.candidates
    << "\n\n[search]\nbranches = " << s.branches << "\ndepth = " << s.depth
    << "\nstop_patience = " << s.patience << "\n"
    << s.search_extra
    << "finalists = 2\n\n[bench]\ntrials = 1\nwarmup_ms = 0\nmin_timing_trials = 10\n"
       "max_timing_ms = 1\nverify_timeout_s = "
    << s.verify_timeout_s << "\ntime_timeout_s = " << s.time_timeout_s
    << "\ncompile_timeout_s = 30\n"
    << s.bench_extra << "\n[memory]\npath = \"memory\"\n";
  return t.str();
}

config::campaign_config write_config(const test::test_context& ctx, const campaign_setup& s,
                                     const std::string& name = "campaign.toml") {
  auto path = ctx.write(name, config_text(s));
  auto loaded = config::load_campaign_config(path);
  if (!loaded)
    FAIL("the test's config does not load: " << loaded.error().message());
  return *loaded;
}

/// Puts the scripted worker in campaign mode, its counters and job log in the test's folder.
void scripted_campaign(scoped_env& env, const test::test_context& ctx, const std::string& faults,
                       int32_t devices = 1, double job_ms = 0) {
  env.set("KS_SCRIPTED_MODE", "campaign");
  env.set("KS_SCRIPTED_DEVICES", std::to_string(devices));
  env.set("KS_SCRIPTED_STATE_DIR", (ctx.dir() / "worker-state").string());
  env.set("KS_SCRIPTED_LOG", (ctx.dir() / "jobs.log").string());
  env.set("KS_SCRIPTED_FAULTS", faults);
  env.set("KS_SCRIPTED_JOB_MS", std::to_string(job_ms));
  env.set("KS_NVCC", fake_nvcc().string());
}

campaign::run_options options_for(const test::test_context& ctx) {
  campaign::run_options o;
  o.worker_executable = scripted_worker();
  o.nvcc = fake_nvcc();
  o.include_dir = test::source_dir() / "gpu" / "include";
  o.cache_dir = ctx.dir() / "cache";
  o.progress_interval_s = 0;
  return o;
}

campaign::campaign_summary run(const config::campaign_config& config,
                               const campaign::run_options& options) {
  auto summary = actors::run_campaign(config, options);
  if (!summary)
    FAIL("run_campaign failed: " << engine::to_string(summary.error().code()) << ": "
                                 << summary.error().message());
  return *summary;
}

json::value read_json(const fs::path& path) {
  std::string text = test::read_file(path);
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec)
    FAIL(path.string() << " is not JSON (" << ec.message() << "): " << text.substr(0, 400));
  return v;
}

// Returns the folder of the store that a campaign with output folder `out` keeps.
fs::path store_dir(const fs::path& out) {
  return out / "state";
}

/// The nodes of every task, as the store has them.
using tree_snapshot = std::map<std::string, std::vector<engine::node_record>>;

tree_snapshot read_trees(const fs::path& out) {
  tree_snapshot trees;
  if (!fs::exists(store_dir(out) / "data.mdb"))
    return trees; // killed before the store was created
  auto store = memory::store::open(store_dir(out));
  REQUIRE(store.has_value());
  auto tasks = store->tasks();
  REQUIRE(tasks.has_value());
  for (const memory::task_state& t : *tasks) {
    auto nodes = store->nodes(t.name);
    REQUIRE(nodes.has_value());
    trees[t.name] = *nodes;
  }
  return trees;
}

int64_t node_count(const tree_snapshot& trees) {
  int64_t n = 0;
  for (const auto& [task, nodes] : trees)
    n += static_cast<int64_t>(nodes.size());
  return n;
}

// Returns the nodes of `o` with `status`, as results.json lists them.
std::vector<json::object> nodes_with(const json::object& task, const std::string& status) {
  std::vector<json::object> found;
  for (const json::value& n : task.at("nodes").as_array())
    if (n.at("status").as_string() == status.c_str())
      found.push_back(n.as_object());
  return found;
}

const json::object& task_named(const json::value& results, const std::string& name) {
  for (const json::value& t : results.at("tasks").as_array())
    if (t.at("name").as_string() == name.c_str())
      return t.as_object();
  FAIL("results.json has no task " << name);
  throw;
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

/// Starts `argv` with stdout and stderr appended to `log`; returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const fs::path& log) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_CREAT | O_WRONLY | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

/// Waits for `pid` at most `timeout`; returns its wait status, or nullopt if still running.
std::optional<int> wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid)
      return status;
    if (clock_type::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

/// Runs `argv` to the end (at most `timeout`); returns its exit code, -1 if it did not exit.
int run_to_exit(const std::vector<std::string>& argv, const fs::path& log,
                std::chrono::milliseconds timeout) {
  pid_t pid = spawn(argv, log);
  auto status = wait_for(pid, timeout);
  if (!status) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
}

std::vector<std::string> kernelskill_run(const fs::path& config) {
  return {(test::bin_dir() / "kernelskill").string(),
          "run",
          config.string(),
          "--worker",
          scripted_worker().string(),
          "--progress",
          "0"};
}

/// Returns how many lines of `path` start with `prefix`.
size_t lines_starting(const fs::path& path, const std::string& prefix) {
  size_t n = 0;
  for (const std::string& line : lines_of(path))
    n += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

/// Waits (at most a minute, however loaded the machine) until `path` holds at least `n` lines
/// that start with `prefix`: the scripted worker's job log says a job started, a campaign's
/// output says it got a signal. Fails the test if they never come.
void wait_for_lines(const fs::path& path, const std::string& prefix, size_t n) {
  auto deadline = clock_type::now() + std::chrono::minutes(1);
  while (lines_starting(path, prefix) < n && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  INFO(path.string() << ":\n" << test::read_file(path));
  REQUIRE(lines_starting(path, prefix) >= n);
}

/// Waits (at most a minute) until `text` appears in `path`.
void wait_for_text(const fs::path& path, const std::string& text) {
  auto deadline = clock_type::now() + std::chrono::minutes(1);
  while (test::read_file(path).find(text) == std::string::npos && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  INFO(path.string() << ":\n" << test::read_file(path));
  REQUIRE(test::read_file(path).find(text) != std::string::npos);
}

/// Waits (at most a minute) until every scripted worker that marked itself in `alive`
/// ($KS_SCRIPTED_ALIVE_DIR) has ended: each holds an flock on its mark while it lives.
void wait_for_workers_gone(const fs::path& alive) {
  auto deadline = clock_type::now() + std::chrono::minutes(1);
  for (;;) {
    std::error_code ec;
    size_t living = 0;
    for (const auto& mark : fs::directory_iterator(alive, ec)) {
      int fd = ::open(mark.path().c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0)
        continue;
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0)
        fs::remove(mark.path(), ec);
      else
        ++living;
      ::close(fd);
    }
    if (living == 0)
      return;
    REQUIRE(clock_type::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Checks that a finished node kept everything a later step must not change.
bool same_finished_node(const engine::node_record& before, const engine::node_record& after) {
  return before.id == after.id && before.parent == after.parent && before.depth == after.depth &&
         before.expansion == after.expansion && before.plan == after.plan &&
         before.source_hash == after.source_hash && before.status == after.status &&
         before.disposition == after.disposition && before.time == after.time &&
         before.failure_kind == after.failure_kind;
}

} // namespace

TEST_CASE("a small campaign runs to completion and writes every node, the best kernels and "
          "the report",
          "[campaign]") {
  test::test_context ctx;
  scoped_env env;
  scripted_campaign(env, ctx, "");
  campaign_setup setup;
  auto config = write_config(ctx, setup);

  campaign::campaign_summary summary = run(config, options_for(ctx));
  CHECK_FALSE(summary.interrupted);
  CHECK_FALSE(summary.resumed);
  REQUIRE(summary.tasks.size() == 2);
  CHECK(summary.candidates_verified > 0);
  CHECK(summary.candidates_timed > 0);
  bool some_gain = false;
  for (const campaign::task_summary& t : summary.tasks) {
    CAPTURE(t.name, t.stop_reason, t.nodes, t.reference_ms, t.best_ms);
    CHECK(t.nodes > 1);
    CHECK(t.nodes <= 1 + setup.candidates);
    CHECK(t.reference_ms > 0);
    CHECK(t.best_ms > 0);
    CHECK(t.best_ms <= t.reference_ms);
    CHECK_FALSE(t.stop_reason.empty());
    some_gain = some_gain || t.speedup > 1.1;
  }
  // The scripted worker's model makes 128 threads per block 20% faster than the references'
  // 256. The references are memory-bound (by their timing, and by the scripted counters alike),
  // so the offline planner tries 512 first, and 128 at the reference's next expansion (not a
  // jump from the rejected 512, which lost to its reference).
  CHECK(some_gain);

  fs::path out = ctx.dir() / "out";
  json::value results = read_json(out / "results.json");
  REQUIRE(results.at("tasks").as_array().size() == 2);
  CHECK(results.at("campaign").at("environment").is_object());
  tree_snapshot trees = read_trees(out);
  for (const campaign::task_summary& t : summary.tasks) {
    CAPTURE(t.name);
    const json::object& task = task_named(results, t.name);
    const json::array& nodes = task.at("nodes").as_array();
    CHECK(static_cast<int64_t>(nodes.size()) == t.nodes);
    CHECK(nodes.size() == trees[t.name].size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const json::object& n = nodes[i].as_object();
      CHECK(n.at("id").as_int64() == static_cast<int64_t>(i));
      CHECK(n.contains("status"));
      CHECK(n.contains("disposition"));
      CHECK(n.at("plan").at("skill").is_string());
      CHECK(n.at("final").as_bool()); // nothing is left in flight
    }
    CHECK(nodes[0].at("plan").at("skill").as_string() == "reference");
    CHECK(nodes[0].at("parent").is_null());
    // [search] profile = "parents" (the default): the reference was profiled before it was
    // expanded, and its diagnosis comes from the scripted worker's DRAM-bound counters.
    REQUIRE(nodes[0].as_object().contains("diagnosis"));
    const json::object& diagnosis = nodes[0].at("diagnosis").as_object();
    CHECK(diagnosis.at("bound").as_string() == "memory");
    CHECK(diagnosis.at("hardware").at("counters").as_bool());
    CHECK_FALSE(diagnosis.at("evidence").as_array().empty());
    REQUIRE(task.at("winner").is_object());
    const json::object& winner = task.at("winner").as_object();
    CHECK(winner.at("median_ms").as_double() > 0);
    CHECK(winner.at("lineage").as_array().size() >= 1);

    fs::path best = out / "best" / (t.name + ".cu");
    REQUIRE(fs::exists(best));
    CHECK_THAT(test::read_file(best), Contains("ks_forward"));
  }

  std::string report = test::read_file(out / "report.md");
  CHECK_THAT(report, Contains("## relu"));
  CHECK_THAT(report, Contains("## sum"));
  CHECK_THAT(report, Contains("Winning lineage"));
  CHECK_THAT(report, Contains("`reference"));
  CHECK_THAT(report, Contains("Diagnoses of the profiled nodes"));
  CHECK_THAT(report, Contains("DRAM-bound: DRAM at 72% of its peak"));
  // The planner took one plan from each skill that applies: the launch parameters and the
  // family's own skill; every candidate records its genotype.
  for (const campaign::task_summary& t : summary.tasks) {
    CAPTURE(t.name);
    std::set<std::string> skills;
    for (const json::value& v : task_named(results, t.name).at("nodes").as_array()) {
      const json::object& g = v.at("genotype").as_object();
      skills.insert(std::string(g.at("skill").as_string()));
      if (g.at("skill").as_string() != "reference")
        CHECK_FALSE(g.at("template").as_string().empty());
    }
    CHECK(skills.count("launch_params") == 1);
    CHECK(skills.size() >= 3); // the reference, launch_params and the family's skill
  }
}

TEST_CASE("profile = none runs no profile job, and a node at expand_max_fraction of its roofline "
          "is not expanded",
          "[campaign]") {
  test::test_context ctx;
  scoped_env env;
  scripted_campaign(env, ctx, "");
  campaign_setup setup;
  setup.tasks = {"47_sum"};
  // The scripted reference of sum runs at about 0.03% of its roofline: at 0.0001 it is done.
  setup.search_extra = "profile = \"none\"\nexpand_max_fraction = 0.0001\n";
  auto config = write_config(ctx, setup);

  campaign::campaign_summary summary = run(config, options_for(ctx));
  REQUIRE(summary.tasks.size() == 1);
  const campaign::task_summary& t = summary.tasks[0];
  CAPTURE(t.stop_reason);
  CHECK(t.nodes == 1);
  CHECK(t.stop_reason == "exhausted"); // its only node was not expanded
  for (const std::string& line : lines_of(ctx.dir() / "jobs.log"))
    CHECK(line.rfind("profile ", 0) != 0);
  json::value results = read_json(ctx.dir() / "out" / "results.json");
  const json::object& root = task_named(results, "sum").at("nodes").as_array()[0].as_object();
  // Its diagnosis rests on its timing: no counters.
  REQUIRE(root.contains("diagnosis"));
  const json::object& diagnosis = root.at("diagnosis").as_object();
  bool counters =
      diagnosis.contains("hardware") && diagnosis.at("hardware").at("counters").as_bool();
  CHECK_FALSE(counters);
}

TEST_CASE("a worker that crashes mid-job fails that candidate as crashed and the campaign "
          "goes on to the end",
          "[campaign]") {
  test::test_context ctx;
  scoped_env env;
  // Verify 1 is the reference against itself; verify 3 is the second candidate's.
  scripted_campaign(env, ctx, "verify#3->crash");
  campaign_setup setup;
  setup.tasks = {"19_relu"};
  auto config = write_config(ctx, setup);

  campaign::campaign_summary summary = run(config, options_for(ctx));
  REQUIRE(summary.tasks.size() == 1);
  CHECK(summary.tasks[0].best_ms > 0);

  json::value results = read_json(ctx.dir() / "out" / "results.json");
  const json::object& task = task_named(results, "relu");
  auto crashed = nodes_with(task, "crashed");
  REQUIRE(crashed.size() == 1);
  CHECK(crashed[0].at("failure_kind").as_string() == "crash");
  CHECK(crashed[0].at("id").as_int64() > 0);
  CHECK(task.at("state").as_string() == "done");
  // The campaign went on after the crash: later candidates were verified and judged.
  CHECK(nodes_with(task, "accepted").size() + nodes_with(task, "rejected").size() >= 2);
}

TEST_CASE("a worker killed from outside mid-job is the host's: the job runs again on a fresh "
          "worker and no candidate is charged, and killed twice the candidate crashed",
          "[campaign][host_fault]") {
  for (bool twice : {false, true}) {
    CAPTURE(twice);
    test::test_context ctx;
    scoped_env env;
    // Verify 1 is the reference against itself; verify 3 is the second candidate's.
    scripted_campaign(env, ctx, twice ? "verify#3->killed; verify#4->killed" : "verify#3->killed");
    campaign_setup setup;
    setup.tasks = {"19_relu"};
    auto config = write_config(ctx, setup);

    campaign::campaign_summary summary = run(config, options_for(ctx));
    CHECK(summary.host_fault.empty());
    json::value results = read_json(ctx.dir() / "out" / "results.json");
    const json::object& task = task_named(results, "relu");
    CHECK(task.at("state").as_string() == "done");
    // The killed job ran again, for the same kernel: verify 4 is verify 3 once more.
    std::vector<std::string> verifies;
    for (const std::string& line : lines_of(ctx.dir() / "jobs.log"))
      if (line.rfind("verify ", 0) == 0)
        verifies.push_back(line);
    REQUIRE(verifies.size() >= 4);
    CHECK(verifies[2] == verifies[3]);
    auto crashed = nodes_with(task, "crashed");
    if (!twice) {
      CHECK(crashed.empty());
      for (const json::value& n : task.at("nodes").as_array())
        CHECK_FALSE(n.at("failure_kind").is_string());
    } else {
      REQUIRE(crashed.size() == 1);
      CHECK(crashed[0].at("failure_kind").as_string() == "crash");
      CHECK_THAT(std::string(crashed[0].at("failure_message").as_string()),
                 Contains("the first time too"));
    }
  }
}

TEST_CASE("a GPU unavailable for a moment is the host's: the step runs again and no candidate "
          "fails",
          "[campaign][host_fault]") {
  test::test_context ctx;
  scoped_env env;
  // Verify 2 is the first candidate's: the device is unavailable, then back.
  scripted_campaign(env, ctx, "verify#2->lost");
  campaign_setup setup;
  setup.tasks = {"19_relu"};
  setup.bench_extra = "host_fault_retry_s = 0\n";
  auto config = write_config(ctx, setup);

  campaign::campaign_summary summary = run(config, options_for(ctx));
  CHECK(summary.host_fault.empty());
  json::value results = read_json(ctx.dir() / "out" / "results.json");
  const json::object& task = task_named(results, "relu");
  CHECK(task.at("state").as_string() == "done");
  for (const json::value& n : task.at("nodes").as_array()) {
    CAPTURE(json::serialize(n));
    CHECK_FALSE(n.at("failure_kind").is_string());
  }
  std::vector<std::string> verifies;
  for (const std::string& line : lines_of(ctx.dir() / "jobs.log"))
    if (line.rfind("verify ", 0) == 0)
      verifies.push_back(line);
  // The verification the device refused ran again for the same kernel.
  REQUIRE(verifies.size() >= 3);
  CHECK(std::count(verifies.begin(), verifies.end(), verifies[1]) >= 2);
}

TEST_CASE("two GPUs, one lost: it takes no more jobs, the other runs them, and no candidate "
          "fails",
          "[campaign][host_fault]") {
  test::test_context ctx;
  scoped_env env;
  // Verify 2 is the first candidate's: its GPU says the device is unavailable.
  scripted_campaign(env, ctx, "verify#2->lost", 2);
  campaign_setup setup;
  setup.gpus = "[0, 1]";
  setup.tasks = {"19_relu"};
  setup.bench_extra = "host_fault_retry_s = 0\n";
  auto config = write_config(ctx, setup);

  campaign::campaign_summary summary = run(config, options_for(ctx));
  CHECK(summary.host_fault.empty());
  json::value results = read_json(ctx.dir() / "out" / "results.json");
  const json::object& task = task_named(results, "relu");
  CHECK(task.at("state").as_string() == "done");
  for (const json::value& n : task.at("nodes").as_array()) {
    CAPTURE(json::serialize(n));
    CHECK_FALSE(n.at("failure_kind").is_string());
  }
  // Every job that started after the lost one ran on the other GPU.
  std::vector<std::string> jobs = lines_of(ctx.dir() / "jobs.log");
  size_t verifies = 0, lost_at = jobs.size();
  for (size_t i = 0; i < jobs.size() && lost_at == jobs.size(); ++i)
    if (jobs[i].rfind("verify ", 0) == 0 && ++verifies == 2)
      lost_at = i;
  REQUIRE(lost_at < jobs.size());
  std::string lost_device = jobs[lost_at].substr(7, jobs[lost_at].find(' ', 7) - 7);
  size_t after = 0;
  for (size_t i = lost_at + 1; i < jobs.size(); ++i) {
    CAPTURE(jobs[i]);
    CHECK(jobs[i].find(" " + lost_device + " ") == std::string::npos);
    ++after;
  }
  CHECK(after >= 2);
}

TEST_CASE("a full disk under nvcc is the host's: the campaign stops naming it after its "
          "retries, no candidate fails, and the resume compiles the nodes again",
          "[campaign][resume][host_fault]") {
  test::test_context ctx;
  scoped_env env;
  scripted_campaign(env, ctx, "");
  // Every compile but the first (the reference's) finds the disk full while this file is there.
  fs::path full = ctx.write("disk-full", "");
  env.set("KS_FAKE_NVCC_FULL_DISK", full.string());
  env.set("KS_FAKE_NVCC_FULL_DISK_SKIP", "1");
  campaign_setup setup;
  setup.tasks = {"19_relu"};
  // Every disk counts as short of space: the stand-in's words are believed.
  setup.bench_extra = "host_fault_retries = 2\nhost_fault_retry_s = 0\nmin_free_disk_mb = 1e9\n";
  auto config = write_config(ctx, setup);
  fs::path out = ctx.dir() / "out";

  campaign::campaign_summary first = run(config, options_for(ctx));
  CHECK_THAT(first.host_fault, Contains("No space left on device"));
  CHECK_THAT(first.host_fault, Contains("persists after 2 retries"));
  tree_snapshot stopped = read_trees(out);
  REQUIRE(stopped.at("relu").size() > 1);
  std::vector<engine::node_id> left;
  for (const engine::node_record& n : stopped.at("relu")) {
    if (n.id == 0)
      continue;
    CAPTURE(n.id);
    // Left as coded, for the resume; nothing of the fault is the node's.
    CHECK(n.status == engine::node_status::coded);
    CHECK(n.failure_kind.empty());
    left.push_back(n.id);
  }
  // The first node to give up was compiled once and retried twice.
  CHECK(lines_of(fs::path(full.string() + ".count")).size() >= 4);

  fs::remove(full);
  campaign::campaign_summary second = run(config, options_for(ctx));
  CHECK(second.resumed);
  CHECK(second.host_fault.empty());
  tree_snapshot finished = read_trees(out);
  for (engine::node_id id : left) {
    const engine::node_record& n = finished.at("relu").at(static_cast<size_t>(id));
    CAPTURE(id, engine::to_string(n.status));
    CHECK((n.status == engine::node_status::accepted || n.status == engine::node_status::rejected));
  }
  for (const engine::node_record& n : finished.at("relu")) {
    CHECK(engine::is_final(n));
    CHECK(n.status != engine::node_status::compile_failed);
  }
  json::value results = read_json(out / "results.json");
  CHECK(task_named(results, "relu").at("state").as_string() == "done");
}

TEST_CASE("a candidate that loads a vendor library fails as vendor_library, or where allowed is "
          "measured and labelled",
          "[campaign]") {
  for (bool allowed : {false, true}) {
    CAPTURE(allowed);
    test::test_context ctx;
    scoped_env env;
    // Verify 1 is the reference against itself, verify 2 the first candidate's; allowed, time
    // 2 is that candidate's timing (each job retires its worker).
    scripted_campaign(env, ctx, allowed ? "verify#2->vendor; time#2->vendor" : "verify#2->vendor");
    campaign_setup setup;
    setup.tasks = {"19_relu"};
    setup.candidates = 3;
    setup.bench_extra = allowed ? "allow_vendor_libraries = true\n" : "";
    auto config = write_config(ctx, setup);
    REQUIRE(config.bench.allow_vendor_libraries == allowed);

    campaign::campaign_summary summary = run(config, options_for(ctx));
    REQUIRE(summary.tasks.size() == 1);
    json::value results = read_json(ctx.dir() / "out" / "results.json");
    const json::object& task = task_named(results, "relu");
    std::vector<json::object> labelled, refused;
    for (const json::value& n : task.at("nodes").as_array()) {
      if (n.as_object().contains("vendor_libraries"))
        labelled.push_back(n.as_object());
      if (n.at("failure_kind").is_string() && n.at("failure_kind").as_string() == "vendor_library")
        refused.push_back(n.as_object());
    }
    if (!allowed) {
      REQUIRE(refused.size() == 1);
      CHECK(refused[0].at("status").as_string() == "failed");
      CHECK(refused[0].at("failure_message").as_string().find("libcublas.so.13") !=
            std::string::npos);
      CHECK(labelled.empty());
    } else {
      CHECK(refused.empty());
      REQUIRE(labelled.size() == 1);
      CHECK(labelled[0].at("vendor_libraries").as_array().at(0).as_string() ==
            "/usr/local/cuda/lib64/libcublas.so.13");
      CHECK(labelled[0].at("timing").is_object());
    }
    CHECK(task.at("state").as_string() == "done");
  }
}

TEST_CASE("a worker that hangs fails that candidate as timed out and the campaign goes on to "
          "the end",
          "[campaign]") {
  test::test_context ctx;
  scoped_env env;
  // Time 1 is the reference's; time 3 is the second candidate's.
  scripted_campaign(env, ctx, "time#3->hang");
  campaign_setup setup;
  setup.tasks = {"19_relu"};
  setup.time_timeout_s = 1;
  auto config = write_config(ctx, setup);

  auto start = clock_type::now();
  campaign::campaign_summary summary = run(config, options_for(ctx));
  CHECK(clock_type::now() - start < std::chrono::seconds(60));
  REQUIRE(summary.tasks.size() == 1);

  json::value results = read_json(ctx.dir() / "out" / "results.json");
  const json::object& task = task_named(results, "relu");
  auto timed_out = nodes_with(task, "timed_out");
  REQUIRE(timed_out.size() == 1);
  CHECK(timed_out[0].at("failure_kind").as_string() == "timeout");
  CHECK(task.at("state").as_string() == "done");
  CHECK(nodes_with(task, "accepted").size() + nodes_with(task, "rejected").size() >= 2);
}

TEST_CASE("a campaign killed with SIGKILL at random points resumes without losing or redoing "
          "a finished node",
          "[campaign][resume]") {
  test::test_context ctx;
  scoped_env env;
  scripted_campaign(env, ctx, "", 1, 40);
  campaign_setup setup;
  setup.candidates = 8;
  setup.depth = 3;
  setup.patience = 3;

  // The same campaign, never interrupted: how long it takes and how many nodes it makes.
  fs::create_directories(ctx.dir() / "whole");
  fs::path whole_config = ctx.write("whole/campaign.toml", config_text(setup));
  auto start = clock_type::now();
  REQUIRE(run_to_exit(kernelskill_run(whole_config), ctx.dir() / "whole.log",
                      std::chrono::seconds(120)) == 0);
  double whole_ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
  const int64_t whole_nodes = node_count(read_trees(ctx.dir() / "whole" / "out"));
  REQUIRE(whole_nodes > 3);

  fs::create_directories(ctx.dir() / "killed");
  fs::path config = ctx.write("killed/campaign.toml", config_text(setup));
  fs::path out = ctx.dir() / "killed" / "out";
  fs::path jobs_log = ctx.dir() / "jobs.log";
  fs::path alive = ctx.dir() / "workers-alive";
  env.set("KS_SCRIPTED_ALIVE_DIR", alive.string());
  // Random kill points; KS_TEST_SEED replays a failing run (the seed is in the output).
  const char* seed_text = std::getenv("KS_TEST_SEED");
  const uint32_t seed = seed_text ? static_cast<uint32_t>(std::strtoul(seed_text, nullptr, 10))
                                  : std::random_device{}();
  INFO("KS_TEST_SEED=" << seed);
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> fraction(0.02, 0.7);

  struct kill_point {
    tree_snapshot trees;  // the store right after the kill
    size_t log_lines = 0; // jobs the workers had started by then
  };
  std::vector<kill_point> kills;
  int exit_code = -1;
  for (int round = 0; round < 6 && exit_code != 0; ++round) {
    pid_t pid = spawn(kernelskill_run(config), ctx.dir() / "killed.log");
    auto delay = std::chrono::milliseconds(static_cast<int64_t>(whole_ms * fraction(random)));
    if (auto status = wait_for(pid, delay)) {
      exit_code = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
      break;
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    // The workers of the killed campaign see their stdin close and leave; a request still in
    // their pipe may start (and log) one more job first: count the log once they are gone.
    wait_for_workers_gone(alive);
    kills.push_back({read_trees(out), lines_of(jobs_log).size()});
    const tree_snapshot& now = kills.back().trees;
    if (kills.size() >= 2) {
      // Everything finished before the previous kill is still there, unchanged.
      for (const auto& [task, nodes] : kills[kills.size() - 2].trees)
        for (const engine::node_record& n : nodes) {
          if (!engine::is_final(n))
            continue;
          CAPTURE(task, n.id);
          REQUIRE(now.count(task) == 1);
          REQUIRE(n.id < static_cast<int64_t>(now.at(task).size()));
          CHECK(same_finished_node(n, now.at(task)[static_cast<size_t>(n.id)]));
        }
    }
  }
  if (exit_code != 0)
    exit_code =
        run_to_exit(kernelskill_run(config), ctx.dir() / "killed.log", std::chrono::seconds(120));
  INFO("the killed campaign's output:\n" << test::read_file(ctx.dir() / "killed.log"));
  REQUIRE(exit_code == 0);
  CHECK_FALSE(kills.empty());

  tree_snapshot final_trees = read_trees(out);
  auto store = memory::store::open(store_dir(out));
  REQUIRE(store.has_value());
  auto source_of = [&](const engine::node_record& n) {
    auto text = store->source(n.source_hash);
    return text && *text ? **text : std::string();
  };
  std::vector<std::string> jobs = lines_of(jobs_log);
  for (size_t k = 0; k < kills.size(); ++k) {
    // No finished node was lost or changed.
    std::set<std::pair<std::string, engine::node_id>> finished;
    for (const auto& [task, nodes] : kills[k].trees)
      for (const engine::node_record& n : nodes) {
        if (!engine::is_final(n))
          continue;
        CAPTURE(k, task, n.id);
        finished.emplace(task, n.id);
        REQUIRE(final_trees.count(task) == 1);
        REQUIRE(n.id < static_cast<int64_t>(final_trees.at(task).size()));
        CHECK(same_finished_node(n, final_trees.at(task)[static_cast<size_t>(n.id)]));
      }
    // Nor verified again: between this kill and the next, a source is verified at most once
    // per node that holds it and was not finished at this kill (two branches may reach the
    // same launch configuration, so a source may belong to several nodes). The worker logs
    // the kernel of every job; the compile cache keeps its source beside it.
    std::map<std::string, int64_t> unfinished_nodes_of;
    for (const auto& [task, nodes] : final_trees)
      for (const engine::node_record& n : nodes)
        if (finished.count({task, n.id}) == 0)
          ++unfinished_nodes_of[source_of(n)];
    std::map<std::string, int64_t> verifies_of;
    size_t end = k + 1 < kills.size() ? kills[k + 1].log_lines : jobs.size();
    for (size_t i = kills[k].log_lines; i < end; ++i) {
      std::istringstream fields(jobs[i]);
      std::string job, device, kernel;
      fields >> job >> device >> kernel;
      if (job == "verify")
        ++verifies_of[test::read_file(fs::path(kernel).parent_path() / "kernel.cu")];
    }
    for (const auto& [source, count] : verifies_of) {
      CAPTURE(k, source.substr(0, 200));
      CHECK(count <= unfinished_nodes_of[source]);
    }
  }
  WARN("KS_TEST_SEED=" << seed << ": killed " << kills.size()
                       << " time(s); the uninterrupted run took " << whole_ms << " ms and made "
                       << whole_nodes << " nodes");
  // The search is deterministic (the scripted times are), so a resumed campaign ends with the
  // tree an uninterrupted one makes.
  CHECK(node_count(final_trees) == whole_nodes);
  json::value results = read_json(out / "results.json");
  CHECK(results.at("campaign").at("runs").as_int64() >= 2);
}

TEST_CASE("Ctrl-C stops a campaign cleanly with exit 130 and the same command resumes it",
          "[campaign][resume]") {
  test::test_context ctx;
  scoped_env env;
  scripted_campaign(env, ctx, "", 1, 40);
  campaign_setup setup;
  setup.candidates = 8;
  setup.depth = 3;
  fs::path config = ctx.write("campaign.toml", config_text(setup));
  fs::path out = ctx.dir() / "out";

  // Interrupted once candidates are being verified (the reference's is the first verify job):
  // nodes are in the store and jobs in flight.
  pid_t pid = spawn(kernelskill_run(config), ctx.dir() / "first.log");
  wait_for_lines(ctx.dir() / "jobs.log", "verify ", 2);
  ::kill(pid, SIGINT);
  auto status = wait_for(pid, std::chrono::seconds(60));
  std::string first = test::read_file(ctx.dir() / "first.log");
  INFO(first);
  REQUIRE(status.has_value());
  REQUIRE(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 130);
  CHECK_THAT(first, Contains("stopping"));
  CHECK_THAT(first, Contains("run the same command again to resume"));
  tree_snapshot stopped = read_trees(out);
  CHECK(node_count(stopped) > 0);

  CHECK(run_to_exit(kernelskill_run(config), ctx.dir() / "second.log", std::chrono::seconds(120)) ==
        0);
  tree_snapshot finished = read_trees(out);
  for (const auto& [task, nodes] : stopped)
    for (const engine::node_record& n : nodes)
      if (engine::is_final(n)) {
        CAPTURE(task, n.id);
        CHECK(same_finished_node(n, finished.at(task).at(static_cast<size_t>(n.id))));
      }
  for (const auto& [task, nodes] : finished)
    for (const engine::node_record& n : nodes)
      CHECK(engine::is_final(n));
  json::value results = read_json(out / "results.json");
  CHECK(results.at("campaign").at("runs").as_int64() == 2);

  // A second Ctrl-C does not wait for the work in flight: the first verify job takes 30 s,
  // the first Ctrl-C comes while it runs, the second once the first is acknowledged.
  fs::path again = ctx.write("again/campaign.toml", config_text(setup));
  env.set("KS_SCRIPTED_JOB_MS", "30000");
  size_t verifies = lines_starting(ctx.dir() / "jobs.log", "verify ");
  pid = spawn(kernelskill_run(again), ctx.dir() / "third.log");
  wait_for_lines(ctx.dir() / "jobs.log", "verify ", verifies + 1);
  ::kill(pid, SIGINT);
  wait_for_text(ctx.dir() / "third.log", "stopping");
  ::kill(pid, SIGINT);
  status = wait_for(pid, std::chrono::seconds(10));
  REQUIRE(status.has_value());
  REQUIRE(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 130);
  CHECK_THAT(test::read_file(ctx.dir() / "third.log"), Contains("interrupted again"));
}

TEST_CASE("two GPUs: both bench actors do work", "[campaign]") {
  test::test_context ctx;
  scoped_env env;
  scripted_campaign(env, ctx, "", 2, 20);
  env.set("KS_BENCH_TRACE", (ctx.dir() / "trace.jsonl").string());
  campaign_setup setup;
  setup.gpus = "[0, 1]";
  setup.branches = 3;
  auto config = write_config(ctx, setup);

  campaign::campaign_summary summary = run(config, options_for(ctx));
  REQUIRE(summary.gpu_busy_share.size() == 2);

  // KS_BENCH_TRACE: one JSON line per verify, time or profile job, each with its purpose and
  // on one GPU, ending after it started; the lines of one GPU never overlap (its bench actor runs
  // one job at a time, profiles included).
  std::map<int64_t, std::vector<std::pair<double, double>>> spans;
  int64_t traced = 0, profiles = 0;
  for (const std::string& line : lines_of(ctx.dir() / "trace.jsonl")) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    INFO(line);
    REQUIRE_FALSE(ec);
    const json::object& o = v.as_object();
    if (o.contains("run_started_unix_s")) // a run's header line (report/bench_trace.hpp)
      continue;
    const json::string& kind = o.at("kind").as_string();
    CHECK((kind == "verify" || kind == "time" || kind == "profile"));
    profiles += kind == "profile" ? 1 : 0;
    const json::string& purpose = o.at("purpose").as_string();
    CHECK((purpose == "verify" || purpose == "reference_time" || purpose == "branch_time" ||
           purpose == "retime" || purpose == "final_round" || purpose == "profile" ||
           purpose == "learned_skill"));
    CHECK((kind == "profile") == (purpose == "profile"));
    CHECK_FALSE(o.at("task").as_string().empty());
    double start = o.at("start_s").to_number<double>();
    double end = o.at("end_s").to_number<double>();
    CHECK(end >= start);
    spans[o.at("gpu").as_int64()].emplace_back(start, end);
    ++traced;
  }
  CHECK(spans.size() == 2);
  // [search] profile = "parents" (the default): every expanded parent is profiled first.
  CHECK(profiles > 0);
  for (auto& [gpu, list] : spans) {
    std::sort(list.begin(), list.end());
    for (size_t i = 1; i < list.size(); ++i)
      CHECK(list[i].first >= list[i - 1].second);
  }
  int64_t bench_jobs = 0;
  for (const std::string& line : lines_of(ctx.dir() / "jobs.log"))
    bench_jobs += line.rfind("verify ", 0) == 0 || line.rfind("time ", 0) == 0 ||
                          line.rfind("profile ", 0) == 0
                      ? 1
                      : 0;
  CHECK(traced == bench_jobs);
  // The output folder's trace holds the same jobs after the run's header line, and
  // report.html draws them.
  std::vector<std::string> in_output = lines_of(ctx.dir() / "out" / "bench-trace.jsonl");
  REQUIRE_FALSE(in_output.empty());
  CHECK_THAT(in_output.front(), Contains("\"run_started_unix_s\""));
  CHECK(static_cast<int64_t>(in_output.size()) == traced + 1);
  CHECK_THAT(test::read_file(ctx.dir() / "out" / "report.html"),
             Contains("data-plot=\"timeline\""));
  CHECK(summary.gpu_busy_share[0] > 0);
  CHECK(summary.gpu_busy_share[1] > 0);

  std::map<std::string, int64_t> jobs_per_device;
  for (const std::string& line : lines_of(ctx.dir() / "jobs.log")) {
    std::istringstream fields(line);
    std::string job, device;
    fields >> job >> device;
    if (job == "verify" || job == "time")
      ++jobs_per_device[device];
  }
  CHECK(jobs_per_device["0"] > 0);
  CHECK(jobs_per_device["1"] > 0);

  // Each task's home GPU was chosen by the dispatcher and kept in its state for a resume.
  auto store = memory::store::open(store_dir(ctx.dir() / "out"));
  REQUIRE(store.has_value());
  auto tasks = store->tasks();
  REQUIRE(tasks.has_value());
  REQUIRE_FALSE(tasks->empty());
  for (const memory::task_state& t : *tasks) {
    CAPTURE(t.name);
    CHECK(t.home_gpu >= 0);
    CHECK(t.home_gpu < 2);
    CHECK(t.home_load_ms > 0);
  }
}

TEST_CASE("a task whose reference fails ends the run with exit 2 once the others are done",
          "[campaign]") {
  test::test_context ctx;
  scoped_env env;
  scripted_campaign(env, ctx, "");
  // relu again, under another name, with a reference that nvcc (the fake) rejects.
  fs::path quickstart = test::source_dir() / "tasks" / "quickstart";
  std::string manifest = test::read_file(quickstart / "19_relu.toml");
  std::string reference = test::read_file(test::source_dir() / "tests/gpu/references/relu_ref.cu");
  fs::path broken_ref = ctx.write("broken/relu_ref.cu", reference + "\n// KS_FAKE_COMPILE_ERROR\n");
  auto replace = [&](const std::string& from, const std::string& to) {
    auto at = manifest.find(from);
    REQUIRE(at != std::string::npos);
    manifest.replace(at, from.size(), to);
  };
  replace("name = \"relu\"", "name = \"broken_relu\"\nreference = \"" + broken_ref.string() + "\"");
  campaign_setup setup;
  setup.tasks = {"19_relu"};
  setup.task_files = {ctx.write("broken/broken_relu.toml", manifest).string()};
  fs::path config = ctx.write("campaign.toml", config_text(setup));

  int code = run_to_exit(kernelskill_run(config), ctx.dir() / "run.log", std::chrono::seconds(120));
  std::string log = test::read_file(ctx.dir() / "run.log");
  INFO(log);
  CHECK(code == 2);
  CHECK_THAT(log, Contains("1 task failed"));
  CHECK_THAT(log, Contains("broken_relu: the reference has no measurement"));
  // The other task ran to its end and every output was written.
  json::value results = read_json(ctx.dir() / "out" / "results.json");
  CHECK(task_named(results, "relu").at("state").as_string() == "done");
  CHECK(task_named(results, "broken_relu").at("state").as_string() == "failed");
  CHECK(fs::exists(ctx.dir() / "out" / "report.md"));
}

TEST_CASE("a dry run needs no GPU, exits 0 and prints the jobs it would run", "[campaign]") {
  test::test_context ctx;
  scoped_env env;
  env.set("KS_NVCC", fake_nvcc().string());
  env.set("KS_SCRIPTED_MODE", "campaign");
  campaign_setup setup;
  fs::path config = ctx.write("campaign.toml", config_text(setup));

  // A worker that does not exist: a dry run must never start one.
  std::vector<std::string> argv = {(test::bin_dir() / "kernelskill").string(),
                                   "run",
                                   config.string(),
                                   "--dry-run",
                                   "--worker",
                                   (ctx.dir() / "no-such-worker").string(),
                                   "--progress",
                                   "0"};
  int code = run_to_exit(argv, ctx.dir() / "dry.log", std::chrono::seconds(120));
  std::string output = test::read_file(ctx.dir() / "dry.log");
  INFO(output);
  CHECK(code == 0);
  CHECK_THAT(output, Contains("relu"));
  CHECK_THAT(output, Contains("sum"));
  CHECK_THAT(output, Contains("launch_params"));
  CHECK_THAT(output, Contains("dry run"));
}

TEST_CASE("a GPU whose stability probes go bad is reported and given up on: results.json, "
          "report.md and status say so, the other GPU is quiet, and the results are unreliable",
          "[campaign][stability]") {
  test::test_context ctx;
  scoped_env env;
  scripted_campaign(env, ctx, "", 2);
  // GPU 0's every probe splits into levels (another process's time slices); GPU 1 stays quiet.
  // A limit of 0 gives up on GPU 0 at its second probe, which follows its first at once,
  // before its first job: however little of the campaign it runs, it is given up on. (Waiting
  // for a quiet probe is the next test's.)
  env.set("KS_SCRIPTED_NOISY", "0:split:1");
  campaign_setup setup;
  setup.gpus = "[0, 1]";
  setup.bench_extra = "stability_pause_s = 0.1\nstability_limit_s = 0\n";
  auto config = write_config(ctx, setup);

  campaign::campaign_summary summary = run(config, options_for(ctx));
  for (const campaign::task_summary& t : summary.tasks) {
    CAPTURE(t.name, t.stop_text);
    CHECK_FALSE(t.failed);
  }
  // The final summary: which GPU, and that the results are unreliable.
  CHECK(summary.results_unreliable);
  std::string warnings;
  for (const std::string& w : summary.gpu_warnings)
    warnings += w + "\n";
  CAPTURE(warnings);
  CHECK_THAT(warnings, Contains("GPU 0 (Scripted GPU) was unstable from"));
  CHECK_THAT(warnings, Contains("samples split into levels up to 1.5"));
  CHECK_THAT(warnings, Contains("stayed unstable past"));
  CHECK_THAT(warnings, !Contains("GPU 1 (Scripted GPU) was unstable"));

  // results.json carries the monitor's file and its warnings.
  json::value results = read_json(ctx.dir() / "out" / "results.json");
  const json::object& stability = results.at("gpu_stability").as_object();
  CHECK(stability.at("unreliable").as_bool());
  const json::array& gpus = stability.at("runs").as_array().at(0).at("gpus").as_array();
  REQUIRE(gpus.size() == 2);
  const json::array& episodes = gpus[0].at("episodes").as_array();
  REQUIRE_FALSE(episodes.empty());
  CHECK(episodes[0].at("condition").as_string() == "split");
  CHECK(episodes[0].at("gave_up").as_bool());
  CHECK(gpus[0].at("probes").as_int64() >= 2);
  CHECK(gpus[1].at("episodes").as_array().empty());
  CHECK(gpus[1].at("state").as_string() == "quiet");
  const json::array& listed = results.at("warnings").as_array();
  REQUIRE(listed.size() == summary.gpu_warnings.size());
  CHECK(std::string(listed[0].as_string()) == summary.gpu_warnings[0]);

  CHECK_THAT(test::read_file(ctx.dir() / "out" / "report.md"), Contains("## GPU stability"));
  CHECK_THAT(test::read_file(ctx.dir() / "out" / "report.html"),
             Contains("GPU 0 (Scripted GPU) was unstable"));
  auto store = memory::store::open(store_dir(ctx.dir() / "out"));
  REQUIRE(store.has_value());
  auto status = report::describe_campaign(*store, nullptr);
  REQUIRE(status.has_value());
  CHECK_THAT(*status, Contains("warning: GPU 0 (Scripted GPU) was unstable"));
  CHECK_THAT(*status, Contains("RESULTS UNRELIABLE"));
}

TEST_CASE("a GPU noisy for a moment is unstable, then stable again: no timing made in the noise "
          "stands, and the results are not unreliable",
          "[campaign][stability]") {
  test::test_context ctx;
  scoped_env env;
  scripted_campaign(env, ctx, "");
  // Probes 2 and 3 of the only GPU take 3x the quiet time, and its timings between probe 1 and
  // probe 3 report 3x their median.
  env.set("KS_SCRIPTED_NOISY", "0:3:2-3");
  campaign_setup setup;
  setup.tasks = {"19_relu"};
  setup.bench_extra = "stability_pause_s = 0.1\n";
  auto config = write_config(ctx, setup);

  campaign::campaign_summary summary = run(config, options_for(ctx));
  CHECK_FALSE(summary.results_unreliable);
  REQUIRE(summary.tasks.size() == 1);
  const campaign::task_summary& t = summary.tasks[0];
  CAPTURE(t.stop_text);
  CHECK_FALSE(t.failed);
  // The reference's time is a quiet one (the scripted kernels take 1 to 2 ms, 3 to 6 in the
  // noise), and the winner is not slower than it.
  CHECK(t.reference_ms > 0);
  CHECK(t.reference_ms < 2.5);
  CHECK(t.best_ms <= t.reference_ms);
  json::value results = read_json(ctx.dir() / "out" / "results.json");
  const json::object& gpu = results.at("gpu_stability")
                                .at("runs")
                                .as_array()
                                .at(0)
                                .at("gpus")
                                .as_array()
                                .at(0)
                                .as_object();
  const json::array& episodes = gpu.at("episodes").as_array();
  REQUIRE(episodes.size() == 1);
  CHECK(episodes[0].at("condition").as_string() == "drifting");
  CHECK(episodes[0].at("end_s").is_number()); // it ended: stable again
  CHECK_FALSE(episodes[0].at("gave_up").as_bool());
  CHECK(episodes[0].at("worst_ratio").to_number<double>() == Approx(3).epsilon(0.01));
  CHECK(gpu.at("flagged").as_int64() == 0);
  // No node kept a time measured in the noise.
  for (const json::value& n : task_named(results, "relu").at("nodes").as_array()) {
    CAPTURE(json::serialize(n));
    if (n.at("timing").is_object())
      CHECK(n.at("timing").at("median_ms").to_number<double>() < 2.5);
  }
}
