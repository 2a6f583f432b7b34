#include "config/campaign_config.hpp"
#include "config/option_table.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace ks::config;
namespace fs = std::filesystem;

namespace {

/// Returns the error of parsing `text` as c.toml, failing the test if it parsed.
error error_of(const std::string& text) {
  expected<campaign_config> parsed = parse_campaign_config(text, "c.toml");
  REQUIRE_FALSE(parsed.has_value());
  CHECK(parsed.error().code() == errc::invalid_input);
  return parsed.error();
}

/// Returns the config parsed from `text` as c.toml, failing the test with the error if any.
campaign_config config_of(const std::string& text) {
  expected<campaign_config> parsed = parse_campaign_config(text, "c.toml");
  INFO((parsed ? std::string() : parsed.error().message()));
  REQUIRE(parsed.has_value());
  return *parsed;
}

/// Returns "c.toml:LINE:COL: message".
std::string at(int line, int column, const std::string& message) {
  return "c.toml:" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

/// Checks that every section and every other field of `a` equals `b`'s (all but source).
void check_same_settings(const campaign_config& a, const campaign_config& b) {
  CHECK(a.campaign == b.campaign);
  CHECK(a.search == b.search);
  CHECK(a.gpus == b.gpus);
  CHECK(a.bench == b.bench);
  CHECK(a.agents == b.agents);
  CHECK(a.memory == b.memory);
  CHECK(a.report == b.report);
}

/// Returns the lines of `text`.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

/// A config that sets every option to something other than its default.
const std::string full_config = R"toml(gpus = [1, 0, 3]

[campaign]
tasks = ["tasks/starter/*.toml", "/abs/extra/gemm.toml"]
output = "runs/today"
wall_time_s = 7200
candidates_per_task = 200
gpu_seconds = 1800.5

[search]
branches = 8
depth = 10
policy = "greedy"
exploration = 1.25
stop_roofline_fraction = 0.75
stop_patience = 12
min_gain = 0.05
finalists = 5

[bench]
trials = 5
warmup_ms = 50
min_timing_trials = 30
max_timing_ms = 4000.0
atol = 1e-4
rtol = 2e-4
norm_rel = 3e-6
verify_timeout_s = 30
time_timeout_s = 90
compile_timeout_s = 240
sandbox = true
secret_env = ["KS_MODEL_BEARER", "HF_HUB"]

[agents]
backend = "openai"
endpoint = "http://localhost:8000/v1"
model = "qwen2.5-coder-32b"
api_key_env = "VLLM_API_KEY"
max_concurrency = 16
request_timeout_s = 300
repair_rounds = 4

[memory]
path = "../shared-memory"

[report]
torch_baselines = "baselines/h100.json"
)toml";

} // namespace

// -- defaults --------------------------------------------------------------------------------

TEST_CASE("the default file parses back to exactly the defaults", "[config]") {
  campaign_config parsed = config_of(default_config_text());
  check_same_settings(parsed, campaign_config{});
  CHECK(parsed.gpus.all);
  CHECK(parsed.search.policy == "best_first");
  CHECK_FALSE(parsed.bench.atol.has_value());
}

TEST_CASE("an empty file is a valid config that holds every default", "[config]") {
  campaign_config parsed = config_of("");
  check_same_settings(parsed, campaign_config{});
  CHECK(parsed.source == fs::absolute("c.toml").lexically_normal());
}

TEST_CASE("every declared option appears in the default file under its own section", "[config]") {
  std::vector<std::string> lines = lines_of(default_config_text());
  for (const option& o : campaign_options()) {
    INFO(label_of(o));
    std::string section;
    int64_t found = 0;
    for (const std::string& line : lines) {
      if (line.starts_with("["))
        section = line.substr(1, line.size() - 2);
      std::string key = std::string(o.key) + " = ";
      if (section == o.section && (line.starts_with(key) || line.starts_with("# " + key)))
        ++found;
    }
    CHECK(found == 1);
  }
}

TEST_CASE("an optional option is commented out in the default file and loads when uncommented",
          "[config]") {
  std::string text = default_config_text();
  for (std::string key : {"atol", "rtol", "norm_rel"}) {
    std::string commented = "# " + key + " = ";
    size_t where = text.find(commented);
    REQUIRE(where != std::string::npos);
    text.erase(where, 2);
  }
  campaign_config parsed = config_of(text);
  CHECK(parsed.bench.atol == 1e-5);
  CHECK(parsed.bench.rtol == 1e-5);
  CHECK(parsed.bench.norm_rel == 1e-5);
}

TEST_CASE("the default file describes every option and its accepted values", "[config]") {
  std::string text = default_config_text();
  CHECK(text.find("# Accepts an integer between 1 and 64.\nbranches = 4\n") != std::string::npos);
  CHECK(text.find("# Accepts one of \"best_first\", \"greedy\", \"breadth_first\".\n"
                  "policy = \"best_first\"\n") != std::string::npos);
  CHECK(text.find("# Accepts a number > 0 and <= 1.\nstop_roofline_fraction = 0.95\n") !=
        std::string::npos);
  for (const std::string& line : lines_of(text))
    CHECK(line.size() <= 92);
}

TEST_CASE("the option table declares each option once and only in known sections", "[config]") {
  std::set<std::pair<std::string_view, std::string_view>> seen;
  std::set<std::string_view> sections;
  for (const section_info& s : campaign_sections())
    sections.insert(s.name);
  for (const option& o : campaign_options()) {
    INFO(label_of(o));
    CHECK(seen.insert({o.section, o.key}).second);
    CHECK(sections.count(o.section) == 1);
    CHECK_FALSE(o.description.empty());
    CHECK(find_option(o.section, o.key) == &o);
  }
}

// -- a full config ---------------------------------------------------------------------------

TEST_CASE("a config that sets every option in every section loads them all", "[config]") {
  campaign_config c = config_of(full_config);
  CHECK_FALSE(c.gpus.all);
  CHECK(c.gpus.devices == std::vector<int32_t>{1, 0, 3});
  CHECK(c.campaign.tasks ==
        std::vector<std::string>{"tasks/starter/*.toml", "/abs/extra/gemm.toml"});
  CHECK(c.campaign.output == "runs/today");
  CHECK(c.campaign.wall_time_s == 7200);
  CHECK(c.campaign.candidates_per_task == 200);
  CHECK(c.campaign.gpu_seconds == 1800.5);
  CHECK(c.search.branches == 8);
  CHECK(c.search.depth == 10);
  CHECK(c.search.policy == "greedy");
  CHECK(c.search.exploration == 1.25);
  CHECK(c.search.stop_roofline_fraction == 0.75);
  CHECK(c.search.stop_patience == 12);
  CHECK(c.search.min_gain == 0.05);
  CHECK(c.search.finalists == 5);
  CHECK(c.bench.trials == 5);
  CHECK(c.bench.warmup_ms == 50);
  CHECK(c.bench.min_timing_trials == 30);
  CHECK(c.bench.max_timing_ms == 4000);
  CHECK(c.bench.atol == 1e-4);
  CHECK(c.bench.rtol == 2e-4);
  CHECK(c.bench.norm_rel == 3e-6);
  CHECK(c.bench.verify_timeout_s == 30);
  CHECK(c.bench.time_timeout_s == 90);
  CHECK(c.bench.compile_timeout_s == 240);
  CHECK(c.bench.sandbox);
  CHECK(c.bench.secret_env == std::vector<std::string>{"KS_MODEL_BEARER", "HF_HUB"});
  CHECK(c.agents.backend == "openai");
  CHECK(c.agents.endpoint == "http://localhost:8000/v1");
  CHECK(c.agents.model == "qwen2.5-coder-32b");
  CHECK(c.agents.api_key_env == "VLLM_API_KEY");
  CHECK(c.agents.max_concurrency == 16);
  CHECK(c.agents.request_timeout_s == 300);
  CHECK(c.agents.repair_rounds == 4);
  CHECK(c.memory.path == "../shared-memory");
  CHECK(c.report.torch_baselines == "baselines/h100.json");
}

TEST_CASE("a full config written back as text parses to the same config", "[config]") {
  campaign_config c = config_of(full_config);
  campaign_config again = config_of(config_text(c));
  check_same_settings(again, c);
  CHECK(config_text(again) == config_text(c));
}

TEST_CASE("gpus set to all selects every device and a section may be left out", "[config]") {
  campaign_config c = config_of("gpus = \"all\"\n[search]\nbranches = 2\n");
  CHECK(c.gpus.all);
  CHECK(c.gpus.devices.empty());
  CHECK(c.search.branches == 2);
  CHECK(c.bench == bench_section{});
}

TEST_CASE("dotted keys at the root set options of a section", "[config]") {
  campaign_config c = config_of("search.depth = 3\nagents.repair_rounds = 0\n");
  CHECK(c.search.depth == 3);
  CHECK(c.agents.repair_rounds == 0);
}

// -- each kind of problem, at its exact position ---------------------------------------------

TEST_CASE("a TOML syntax error is reported alone at toml++'s position", "[config]") {
  error e = error_of("[search]\nbranchs = 4\nbranches = \n");
  CHECK(e.message() == at(3, 12, "Error while parsing key-value pair: expected value, saw '\\n'"));
}

TEST_CASE("an unknown key is reported at the key with a did-you-mean suggestion", "[config]") {
  CHECK(error_of("[search]\n  branchs = 4\n").message() ==
        at(2, 3, "unknown key 'branchs' in [search] (did you mean 'branches'?)"));
  CHECK(error_of("[serach]\nbranches = 4\n").message() ==
        at(1, 2, "unknown key 'serach' (did you mean 'search'?)"));
  CHECK(error_of("[bench]\nwarmup = 4\n").message() ==
        at(2, 1,
           "unknown key 'warmup' in [bench] (valid keys: trials, warmup_ms, "
           "min_timing_trials, max_timing_ms, atol, rtol, norm_rel, verify_timeout_s, "
           "time_timeout_s, compile_timeout_s, sandbox, secret_env, "
           "allow_vendor_libraries, host_fault_retries, host_fault_retry_s, "
           "min_free_disk_mb, stability_probe_s, stability_drift, stability_split, "
           "stability_pause_s, stability_limit_s)"));
}

TEST_CASE("a key in the wrong section is reported with the section it belongs in", "[config]") {
  CHECK(error_of("[campaign]\nbranches = 4\n").message() ==
        at(2, 1, "unknown key 'branches' in [campaign] (it belongs in [search])"));
  CHECK(error_of("[campaign]\ngpus = \"all\"\n").message() ==
        at(2, 1,
           "unknown key 'gpus' in [campaign] (it is a key of the root: put it above the "
           "first [section])"));
  CHECK(error_of("policy = \"greedy\"\n").message() ==
        at(1, 1, "unknown key 'policy' (it belongs in [search])"));
}

TEST_CASE("a value of the wrong type is reported at the value", "[config]") {
  CHECK(error_of("[search]\nbranches = \"4\"\n").message() ==
        at(2, 12, "'search.branches' must be an integer between 1 and 64, got \"4\""));
  CHECK(error_of("[search]\ndepth = 4.0\n").message() ==
        at(2, 9, "'search.depth' must be an integer between 1 and 100, got 4.0"));
  CHECK(error_of("[bench]\nwarmup_ms = true\n").message() ==
        at(2, 13, "'bench.warmup_ms' must be a number >= 0, got true"));
  CHECK(error_of("[campaign]\ntasks = \"tasks/*.toml\"\n").message() ==
        at(2, 9,
           "'campaign.tasks' must be a non-empty array of non-empty strings, got "
           "\"tasks/*.toml\""));
  CHECK(error_of("[campaign]\ntasks = [\"a/*.toml\", 3]\n").message() ==
        at(2, 22, "'campaign.tasks[1]' must be a non-empty string, got 3"));
  CHECK(error_of("search = 4\n").message() ==
        at(1, 10, "'search' must be a table ([search]), got 4"));
}

TEST_CASE("a value out of range is reported with the allowed range", "[config]") {
  CHECK(error_of("[search]\nbranches = 0\n").message() ==
        at(2, 12, "'search.branches' must be an integer between 1 and 64, got 0"));
  CHECK(error_of("[search]\nstop_roofline_fraction = 1.5\n").message() ==
        at(2, 26, "'search.stop_roofline_fraction' must be a number > 0 and <= 1, got 1.5"));
  CHECK(error_of("[search]\nmin_gain = 1\n").message() ==
        at(2, 12, "'search.min_gain' must be a number >= 0 and < 1, got 1"));
  CHECK(error_of("[bench]\ncompile_timeout_s = 0\n").message() ==
        at(2, 21, "'bench.compile_timeout_s' must be a number > 0, got 0"));
  CHECK(error_of("[search]\nexploration = nan\n").message() ==
        at(2, 15, "'search.exploration' must be a number >= 0, got nan"));
  CHECK(error_of("[search]\nexploration = inf\n").message() ==
        at(2, 15, "'search.exploration' must be a number >= 0, got inf"));
}

TEST_CASE("a negative budget is reported", "[config]") {
  CHECK(error_of("[campaign]\nwall_time_s = -1\n").message() ==
        at(2, 15, "'campaign.wall_time_s' must be a number >= 0, got -1"));
  CHECK(error_of("[campaign]\ngpu_seconds = -0.5\n").message() ==
        at(2, 15, "'campaign.gpu_seconds' must be a number >= 0, got -0.5"));
  CHECK(error_of("[campaign]\ncandidates_per_task = -3\n").message() ==
        at(2, 23, "'campaign.candidates_per_task' must be an integer >= 1, got -3"));
  CHECK(error_of("[bench]\natol = -1e-5\n").message() ==
        at(2, 8, "'bench.atol' must be a number >= 0, got -1e-05"));
}

TEST_CASE("bench.sandbox takes a boolean and bench.secret_env variable names", "[config]") {
  CHECK_FALSE(config_of("").bench.sandbox);
  CHECK(config_of("").bench.secret_env.empty());
  CHECK(config_of("[bench]\nsecret_env = []\n").bench.secret_env.empty());
  CHECK(error_of("[bench]\nsandbox = \"yes\"\n").message() ==
        at(2, 11, "'bench.sandbox' must be true or false, got \"yes\""));
  CHECK(error_of("[bench]\nsecret_env = \"KS_TOKEN\"\n").message() ==
        at(2, 14,
           "'bench.secret_env' must be an array of environment variable names "
           "([A-Za-z_][A-Za-z0-9_]*), possibly empty, got \"KS_TOKEN\""));
  // The value is not echoed: it may be the secret itself.
  CHECK(error_of("[bench]\nsecret_env = [\"OK_NAME\", \"sk-abc123\", 7]\n").message() ==
        at(2, 26,
           "'bench.secret_env[1]' must be the name of an environment variable "
           "([A-Za-z_][A-Za-z0-9_]*), got a string that is not one (the value is not shown: it "
           "may be the secret itself)") +
            "\n" +
            at(2, 39,
               "'bench.secret_env[2]' must be the name of an environment variable "
               "([A-Za-z_][A-Za-z0-9_]*), got 7"));
}

TEST_CASE("bench.allow_vendor_libraries takes a boolean, false unless set", "[config]") {
  CHECK_FALSE(config_of("").bench.allow_vendor_libraries);
  CHECK(config_of("[bench]\nallow_vendor_libraries = true\n").bench.allow_vendor_libraries);
  CHECK(error_of("[bench]\nallow_vendor_libraries = 1\n").message() ==
        at(2, 26, "'bench.allow_vendor_libraries' must be true or false, got 1"));
}

TEST_CASE("an unknown policy or backend is reported with the valid names", "[config]") {
  CHECK(error_of("[search]\npolicy = \"best-first\"\n").message() ==
        at(2, 10,
           "'search.policy' must be one of \"best_first\", \"greedy\", \"breadth_first\", "
           "got \"best-first\" (did you mean \"best_first\"?)"));
  CHECK(error_of("[search]\npolicy = \"random\"\n").message() ==
        at(2, 10,
           "'search.policy' must be one of \"best_first\", \"greedy\", \"breadth_first\", "
           "got \"random\""));
  CHECK(error_of("[agents]\nbackend = \"claude\"\n").message() ==
        at(2, 11,
           "'agents.backend' must be one of \"offline\", \"openai\", \"anthropic\", "
           "\"replay\", got \"claude\""));
}

TEST_CASE("gpus must be all or a list of distinct non-negative integers", "[config]") {
  const std::string accepted =
      "'gpus' must be \"all\" or a non-empty array of distinct device numbers (integers >= 0)";
  CHECK(error_of("gpus = \"All\"\n").message() ==
        at(1, 8, accepted + ", got \"All\" (did you mean \"all\"?)"));
  CHECK(error_of("gpus = 0\n").message() == at(1, 8, accepted + ", got 0"));
  CHECK(error_of("gpus = []\n").message() == at(1, 8, accepted + ", got []"));
  CHECK(error_of("gpus = [0, -1]\n").message() ==
        at(1, 12,
           "'gpus[1]' must be a device number (an integer between 0 and 2147483647), "
           "got -1"));
  CHECK(error_of("gpus = [\"0\"]\n").message() ==
        at(1, 9,
           "'gpus[0]' must be a device number (an integer between 0 and 2147483647), "
           "got \"0\""));
  CHECK(error_of("gpus = [4294967296]\n").message() ==
        at(1, 9,
           "'gpus[0]' must be a device number (an integer between 0 and 2147483647), "
           "got 4294967296"));
  CHECK(error_of("gpus = [0, 1, 0]\n").message() ==
        at(1, 15, "device 0 is listed twice in 'gpus' (first at 1:9)"));
}

TEST_CASE("a model backend without a model is reported at the backend", "[config]") {
  CHECK(error_of("[agents]\nbackend = \"anthropic\"\n").message() ==
        at(2, 11,
           "agents.backend \"anthropic\" needs 'agents.model' (the model name the "
           "endpoint serves)"));
}

TEST_CASE("an endpoint must be an http URL and an api key never appears in the error", "[config]") {
  CHECK(error_of("[agents]\nendpoint = \"localhost:8000\"\n").message() ==
        at(2, 12,
           "'agents.endpoint' must be an http:// or https:// URL, or \"\", got "
           "\"localhost:8000\""));
  error e = error_of("[agents]\napi_key_env = \"sk-secret-123\"\n");
  CHECK(e.message().find("sk-secret-123") == std::string::npos);
  CHECK(e.message().starts_with(at(2, 15,
                                   "'agents.api_key_env' must be the name of an "
                                   "environment variable")));
}

// -- several problems ------------------------------------------------------------------------

TEST_CASE("several problems are reported together one a line in source order", "[config]") {
  error e = error_of(R"toml(gpus = [0, 0]
[search]
policy = "greedy"
branchs = 4
depth = 0
[bench]
trials = "three"
[campaign]
wall_time_s = -60
)toml");
  CHECK(e.message() ==
        at(1, 12, "device 0 is listed twice in 'gpus' (first at 1:9)") + "\n" +
            at(4, 1, "unknown key 'branchs' in [search] (did you mean 'branches'?)") + "\n" +
            at(5, 9, "'search.depth' must be an integer between 1 and 100, got 0") + "\n" +
            at(7, 10, "'bench.trials' must be an integer between 1 and 1000, got \"three\"") +
            "\n" + at(9, 15, "'campaign.wall_time_s' must be a number >= 0, got -60"));
}

// -- files and paths -------------------------------------------------------------------------

TEST_CASE("relative paths are resolved against the config file's folder", "[config]") {
  ks::test::test_context ctx;
  fs::path file = ctx.write("configs/c.toml", R"toml([campaign]
tasks = ["../tasks/*.toml", "/abs/one.toml"]
output = "out"
[memory]
path = "../mem"
)toml");
  fs::create_directories(ctx.dir() / "elsewhere");
  fs::current_path(ctx.dir() / "elsewhere"); // the working directory must not matter
  expected<campaign_config> loaded = load_campaign_config(file);
  INFO((loaded ? std::string() : loaded.error().message()));
  REQUIRE(loaded.has_value());
  CHECK(loaded->source == file);
  CHECK(loaded->campaign.output == "out");
  CHECK(loaded->output_dir() == ctx.dir() / "configs" / "out");
  CHECK(loaded->memory.path == "../mem");
  CHECK(loaded->memory_dir() == ctx.dir() / "mem");
  CHECK(loaded->task_patterns() ==
        std::vector<fs::path>{ctx.dir() / "tasks" / "*.toml", "/abs/one.toml"});
}

TEST_CASE("the torch baselines file resolves against the config's folder and empty means none",
          "[config]") {
  ks::test::test_context ctx;
  fs::path file = ctx.write("configs/c.toml", "[report]\ntorch_baselines = \"../b/h100.json\"\n");
  expected<campaign_config> loaded = load_campaign_config(file);
  INFO((loaded ? std::string() : loaded.error().message()));
  REQUIRE(loaded.has_value());
  CHECK(loaded->torch_baselines_file() == ctx.dir() / "b" / "h100.json");
  CHECK(campaign_config{}.report.torch_baselines.empty());
  CHECK(campaign_config{}.torch_baselines_file().empty());
}

TEST_CASE("a torch baselines path that is not a string is reported at its value", "[config]") {
  expected<campaign_config> parsed =
      parse_campaign_config("[report]\ntorch_baselines = 3\n", "c.toml");
  REQUIRE_FALSE(parsed.has_value());
  CHECK(parsed.error().message().rfind("c.toml:2:19: ", 0) == 0);
  CHECK(parsed.error().message().find("report.torch_baselines") != std::string::npos);
}

TEST_CASE("a config named by a relative path resolves against its folder too", "[config]") {
  ks::test::test_context ctx;
  ctx.write("sub/c.toml", "[memory]\npath = \"m\"\n");
  expected<campaign_config> loaded = load_campaign_config("sub/c.toml");
  REQUIRE(loaded.has_value());
  CHECK(loaded->source == ctx.dir() / "sub" / "c.toml");
  CHECK(loaded->memory_dir() == ctx.dir() / "sub" / "m");
}

TEST_CASE("a problem in a loaded file names the file as given", "[config]") {
  ks::test::test_context ctx;
  ctx.write("c.toml", "\n[search]\ndepth = -2\n");
  expected<campaign_config> loaded = load_campaign_config("c.toml");
  REQUIRE_FALSE(loaded.has_value());
  CHECK(loaded.error().code() == errc::invalid_input);
  CHECK(loaded.error().message() ==
        at(3, 9, "'search.depth' must be an integer between 1 and 100, got -2"));
}

TEST_CASE("a missing config file is not_found and a folder is an io error", "[config]") {
  ks::test::test_context ctx;
  expected<campaign_config> missing = load_campaign_config("nope.toml");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code() == errc::not_found);
  CHECK(missing.error().message() == "nope.toml: config file not found");
  fs::create_directories(ctx.dir() / "dir.toml");
  expected<campaign_config> folder = load_campaign_config("dir.toml");
  REQUIRE_FALSE(folder.has_value());
  CHECK(folder.error().code() == errc::io);
  CHECK(folder.error().message() == "dir.toml: is a folder, not a config file");
}
