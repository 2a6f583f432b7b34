// The language-model backend with a scripted client: what each role is told (the prompts carry
// the task, the GPU, the parent's measurements and diagnosis, the skills' guidance and
// anti-patterns, the short-term memory, the ABI) and how strictly its answers are read (one
// second chance with the parse error, then a typed failure).

#include "agents/backend_registry.hpp"
#include "agents/llm_backend.hpp"
#include "agents/prompt_library.hpp"
#include "agents/replay_service.hpp"
#include "agents/transcript.hpp"
#include "engine/graph_spec.hpp"
#include "engine/offline_backend.hpp"
#include "engine/retrieval.hpp"
#include "engine/skill_library.hpp"
#include "engine/task_manifest.hpp"
#include "tests/engine/graph_cases.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>

#include <deque>
#include <fstream>
#include <memory>

using namespace ks;
namespace fs = std::filesystem;

namespace {

/// Answers with scripted texts (or errors) in order and keeps every request.
class scripted_client final : public agents::model_client {
public:
  std::deque<engine::expected<std::string>> answers;
  std::vector<agents::model_request> requests;

  engine::expected<agents::model_reply> complete(const agents::model_request& r) override {
    requests.push_back(r);
    if (answers.empty())
      return engine::fail(engine::errc::internal, "the script ran out");
    auto next = std::move(answers.front());
    answers.pop_front();
    if (!next)
      return tl::unexpected(next.error());
    agents::model_reply reply;
    reply.text = *next;
    return reply;
  }
};

/// A reference with the suites' two overridable launch parameters.
const std::string relu_reference = R"(// relu: the reference
#include "kernelskill/abi.h"
#include <cuda_runtime.h>

#ifndef KS_BLOCK_THREADS
#define KS_BLOCK_THREADS 256
#endif
#ifndef KS_MAX_BLOCKS
#define KS_MAX_BLOCKS 1048576
#endif

__global__ void relu(const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

extern "C" int ks_forward(const ks_tensor* in, int32_t n_in, ks_tensor* out, int32_t n_out,
                          void* stream) {
  if (n_in != 1 || n_out != 1) return 1;
  int64_t n = ks_numel(&in[0]);
  int64_t blocks = (n + KS_BLOCK_THREADS - 1) / KS_BLOCK_THREADS;
  if (blocks > KS_MAX_BLOCKS) blocks = KS_MAX_BLOCKS;
  relu<<<(unsigned)blocks, KS_BLOCK_THREADS, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, (float*)out[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 10;
}
)";

struct fixture {
  engine::task relu;
  engine::skill_library_ptr skills;
  std::shared_ptr<scripted_client> client = std::make_shared<scripted_client>();
  std::shared_ptr<const agents::prompt_library> prompts;
  std::string reference;

  fixture() {
    // Built here rather than loaded: the manifests' format is another issue's to change.
    relu.name = "relu";
    relu.family = "elementwise";
    relu.about = "ReLU, 1024 x 2048 fp32";
    relu.inputs = {engine::tensor_spec{"x", engine::dtype::f32, {1024, 2048}}};
    relu.outputs = {engine::tensor_spec{"y", engine::dtype::f32, {1024, 2048}}};
    relu.params = {{"op", std::string("relu")}};
    relu.tol = engine::tolerance{0, 1e-6, 1e-6};
    relu.cost = engine::task_cost{2.097152e6, 1.6777216e7};
    relu.tunables = {{"KS_BLOCK_THREADS", {64, 128, 256, 512, 1024}},
                     {"KS_MAX_BLOCKS", {1024, 2048, 4096, 1048576}}};
    auto library = engine::load_skill_library(test::source_dir() / "skills");
    REQUIRE(library.has_value());
    skills = std::make_shared<const engine::skill_library>(std::move(*library));
    auto p = agents::prompt_library::load(test::source_dir() / "agents" / "prompts");
    REQUIRE(p.has_value());
    prompts = std::make_shared<const agents::prompt_library>(std::move(*p));
    reference = relu_reference;
  }

  agents::llm_backend backend() {
    engine::backend_context context{skills, "sm_90a", "/* the ABI header */"};
    return agents::llm_backend("openai", client, prompts, engine::backend_settings{}, context);
  }

  engine::planning_request planning() {
    engine::planning_request r;
    r.subject = &relu;
    r.parent = 3;
    r.parent_lineage = {engine::reference_plan(),
                        engine::plan{"custom", "halve the block", {{"idea", "halve"}}, 0, ""}};
    r.parent_source = reference;
    r.reference_source = reference;
    r.parent_time = engine::timing{0.042, 0.040, 0.045, 20, {}};
    r.parent_fraction_of_roofline = 0.61;
    r.gpu_name = "NVIDIA H100 80GB HBM3";
    r.peak_gbps = 3000;
    r.peak_gflops = 60000;
    r.diagnosis.diagnosed = true;
    r.diagnosis.bound = engine::bound_kind::memory;
    r.diagnosis.text = "DRAM-bound at 61% of the roofline";
    r.diagnosis.evidence = {{"fraction_of_roofline", 0.61, "<", 0.9}};
    r.tried = {engine::plan_outcome{
        engine::plan{
            "launch_params", "more blocks", {{"KS_MAX_BLOCKS", "4096"}}, 1, "reference_defines"},
        5, engine::outcome_kind::failed, "wrong_result", 0}};
    r.branch = {engine::ancestor_memory{
        0,
        {engine::plan_outcome{engine::plan{"custom", "unroll", {{"idea", "unroll"}}, 0, ""}, 1,
                              engine::outcome_kind::rejected, "", 0.01}}}};
    r.skills = engine::retrieve(*skills, relu, &r.diagnosis, reference, {}, {});
    r.count = 2;
    return r;
  }
};

std::string content_of(const agents::model_request& r, const std::string& role) {
  for (const agents::chat_message& m : r.messages)
    if (m.role == role)
      return m.content;
  return {};
}

const std::string kernel = "#include \"kernelskill/abi.h\"\nextern \"C\" int ks_forward(const "
                           "ks_tensor*, int32_t, ks_tensor*, int32_t, void*) { return 0; }\n";

} // namespace

TEST_CASE("the planner's prompt carries the task, the GPU and its peaks, the parent's "
          "measurements and diagnosis with evidence, the skills' guidance and anti-patterns, "
          "and what was tried on the parent and its ancestors",
          "[agents][backend]") {
  fixture f;
  engine::planning_request request = f.planning();
  REQUIRE_FALSE(request.skills.empty());
  f.client->answers.push_back(
      std::string(R"({"plans": [{"skill": "custom", "description": "vectorize loads"}]})"));
  auto plans = f.backend().propose(request);
  REQUIRE(plans.has_value());
  REQUIRE(plans->size() == 1);
  REQUIRE(f.client->requests.size() == 1);
  const agents::model_request& sent = f.client->requests[0];
  CHECK(sent.role == "planner");
  CHECK(sent.task == "relu");
  CHECK(sent.node == 3);
  std::string system = content_of(sent, "system");
  std::string prompt = content_of(sent, "user");
  CHECK_THAT(system, Catch::Contains("You are the planner of kernelskill"));
  CHECK_THAT(system, Catch::Contains("sm_90a"));
  CHECK_THAT(prompt, Catch::Contains("## Task: relu (elementwise)"));
  CHECK_THAT(prompt, Catch::Contains("- x: f32 [1024 x 2048]"));
  CHECK_THAT(prompt, Catch::Contains("op = relu"));
  CHECK_THAT(prompt, Catch::Contains("NVIDIA H100 80GB HBM3"));
  CHECK_THAT(prompt, Catch::Contains("3000 GB/s"));
  CHECK_THAT(prompt, Catch::Contains("median 0.042 ms"));
  CHECK_THAT(prompt, Catch::Contains("Diagnosis: memory-bound. DRAM-bound at 61% of the roofline"));
  CHECK_THAT(prompt, Catch::Contains("- fraction_of_roofline = 0.61 (< 0.9)"));
  CHECK_THAT(prompt, Catch::Contains("#define KS_BLOCK_THREADS 256"));
  const engine::skill* first = f.skills->find(request.skills.front().id);
  REQUIRE(first != nullptr);
  CHECK_THAT(prompt, Catch::Contains("### " + first->id + ": " + first->title));
  CHECK_THAT(prompt, Catch::Contains(first->guidance.substr(0, 40)));
  for (const auto& r : request.skills) {
    const engine::skill* s = f.skills->find(r.id);
    for (const std::string& a : s->anti_patterns)
      CHECK_THAT(prompt, Catch::Contains(a));
  }
  CHECK_THAT(prompt,
             Catch::Contains("on this kernel: launch_params/reference_defines(KS_MAX_BLOCKS=4096) "
                             "\"more blocks\" -> failed (wrong_result)"));
  CHECK_THAT(prompt,
             Catch::Contains("on its ancestor node 0: custom(idea=unroll) \"unroll\" -> rejected"));
  CHECK_THAT(prompt, Catch::Contains("Propose up to 2 distinct plans"));
}

TEST_CASE("a planner reply with an unknown skill is sent back once with the problem, and the "
          "second answer is used",
          "[agents][backend]") {
  fixture f;
  f.client->answers.push_back(
      std::string(R"({"plans": [{"skill": "magic", "description": "x"}]})"));
  f.client->answers.push_back(
      std::string(R"({"plans": [{"skill": "custom", "description": "y"}]})"));
  auto plans = f.backend().propose(f.planning());
  REQUIRE(plans.has_value());
  CHECK(plans->front().description == "y");
  REQUIRE(f.client->requests.size() == 2);
  const auto& second = f.client->requests[1].messages;
  REQUIRE(second.size() == 4);
  CHECK(second[2].role == "assistant");
  CHECK_THAT(second[3].content, Catch::Contains("unknown skill 'magic'"));
}

TEST_CASE("plans already tried on the parent are dropped; a reply of nothing else is asked "
          "again",
          "[agents][backend]") {
  fixture f;
  f.client->answers.push_back(std::string(
      R"({"plans": [{"skill": "launch_params", "template": "reference_defines", "params": {"KS_MAX_BLOCKS": 4096}, "description": "again"}]})"));
  f.client->answers.push_back(std::string(R"({"plans": []})"));
  auto plans = f.backend().propose(f.planning());
  REQUIRE(plans.has_value());
  CHECK(plans->empty());
  CHECK_THAT(f.client->requests[1].messages.back().content,
             Catch::Contains("every plan was tried on this kernel already"));
}

TEST_CASE("a coder reply without a code block, twice, fails with bad_reply", "[agents][backend]") {
  fixture f;
  f.client->answers.push_back(std::string("I would rather not."));
  f.client->answers.push_back(std::string("Still no."));
  engine::coding_request request;
  request.subject = &f.relu;
  request.plan = engine::plan{"custom", "vectorize", {{"idea", "vectorize"}}, 0, ""};
  request.parent_source = f.reference;
  request.reference_source = f.reference;
  request.node = 7;
  auto code = f.backend().write_code(request);
  REQUIRE_FALSE(code.has_value());
  CHECK(code.error().code() == engine::errc::bad_reply);
  CHECK_THAT(code.error().message(), Catch::Contains("even when asked again"));
  CHECK(f.client->requests.size() == 2);
  CHECK(f.client->requests[0].node == 7);
}

TEST_CASE("the coder's prompt carries the plan, the skill's guidance and its rendered template, "
          "the parent's source and the ABI header; the parent returned unchanged is no answer",
          "[agents][backend]") {
  fixture f;
  f.client->answers.push_back("```cuda\n" + f.reference + "```");
  f.client->answers.push_back("```cuda\n" + kernel + "```");
  engine::coding_request request;
  request.subject = &f.relu;
  request.plan = engine::plan{"launch_params",
                              "128 threads",
                              {{"KS_BLOCK_THREADS", "128"}, {"KS_MAX_BLOCKS", "1048576"}},
                              1,
                              "reference_defines"};
  request.parent_source = f.reference;
  request.reference_source = f.reference;
  auto code = f.backend().write_code(request);
  REQUIRE(code.has_value());
  CHECK(*code == kernel);
  std::string prompt = content_of(f.client->requests[0], "user");
  CHECK_THAT(prompt, Catch::Contains("Apply to the kernel below: 128 threads"));
  CHECK_THAT(prompt, Catch::Contains("#define KS_BLOCK_THREADS 128"));
  CHECK_THAT(prompt, Catch::Contains("/* the ABI header */"));
  CHECK_THAT(f.client->requests[1].messages.back().content, Catch::Contains("unchanged"));
}

TEST_CASE("a graph task's prompts list its nodes, intermediates and views; the planner sees "
          "its main node's templates and the coder a starting point composed with the other "
          "nodes' references",
          "[agents][backend][graph]") {
  fixture f;
  test::test_context ctx;
  std::string manifest = test::emulated_manifest();
  manifest.insert(manifest.find("\n[[views]]"), "\ntunables = { KS_TILE_X = [32, 64] }");
  auto graph = engine::load_task_manifest(ctx.write("g.toml", manifest));
  REQUIRE(graph.has_value());
  engine::planning_request request = f.planning();
  request.subject = &*graph;
  request.parent_source = graph->reference_source;
  request.reference_source = graph->reference_source;
  request.tried.clear();
  request.branch.clear();
  request.skills = engine::retrieve(*f.skills, *graph, nullptr, graph->reference_source, {}, {});
  REQUIRE_FALSE(request.skills.empty());
  f.client->answers.push_back(
      std::string(R"({"plans": [{"skill": "custom", "description": "fuse the epilogue"}]})"));
  REQUIRE(f.backend().propose(request).has_value());
  std::string prompt = content_of(f.client->requests.at(0), "user");
  CHECK_THAT(prompt, Catch::Contains("## Task: emulated (graph)"));
  CHECK_THAT(prompt, Catch::Contains("This task is a graph of 2 ops"));
  CHECK_THAT(prompt, Catch::Contains("The search works on node mm."));
  CHECK_THAT(prompt, Catch::Contains("- mm (matmul, the main node): C = matmul(A_flip, B)"));
  CHECK_THAT(prompt,
             Catch::Contains("- epilogue (elementwise): y = elementwise(C, bias), op = relu(C + "
                             "bias)"));
  CHECK_THAT(prompt, Catch::Contains("- C: f32 [5 x 6]"));
  CHECK_THAT(prompt, Catch::Contains("- A_flip = A_part.flip(0): [5 x 7]"));
  CHECK_THAT(prompt, Catch::Contains("- B = Bt.permute(1, 0): [7 x 6]"));
  // The matmul skills are offered with their spaces for the matmul node.
  CHECK_THAT(prompt, Catch::Contains("### matmul_tiled"));

  f.client->answers.push_back("```cuda\n" + kernel + "```");
  engine::coding_request code;
  code.subject = &*graph;
  code.plan =
      engine::plan{"launch_params", "wider tiles", {{"KS_TILE_X", "64"}}, 1, "reference_defines"};
  code.parent_source = graph->reference_source;
  code.reference_source = graph->reference_source;
  REQUIRE(f.backend().write_code(code).has_value());
  std::string coder = content_of(f.client->requests.at(1), "user");
  // The starting point: the launch parameters on the matmul node, composed.
  CHECK_THAT(coder, Catch::Contains("a candidate's source for\n// node(s) 0 (mm)"));
  size_t node = coder.find("namespace ks_node_0 {");
  size_t define = coder.find("#define KS_TILE_X 64");
  CHECK(node < define);
  CHECK(define < coder.find("} // namespace ks_node_0"));
}

TEST_CASE("a graph task's starting point gives its other heavy nodes a skill's first choice, "
          "as the offline coder does",
          "[agents][backend][graph]") {
  fixture f;
  test::test_context ctx;
  auto graph = engine::load_task_manifest(ctx.write("attention.toml", test::attention_manifest()));
  REQUIRE(graph.has_value());
  engine::planning_request request;
  request.subject = &*graph;
  request.parent_lineage = {engine::reference_plan()};
  request.reference_source = graph->reference_source;
  request.skills = engine::retrieve(*f.skills, *graph, nullptr, graph->reference_source, {}, {});
  request.count = 1;
  auto plans = engine::offline_backend(f.skills).propose(request);
  REQUIRE(plans.has_value());
  REQUIRE(plans->size() == 1);
  f.client->answers.push_back("```cuda\n" + kernel + "```");
  engine::coding_request code;
  code.subject = &*graph;
  code.plan = plans->front();
  code.parent_source = graph->reference_source;
  code.reference_source = graph->reference_source;
  REQUIRE(f.backend().write_code(code).has_value());
  std::string coder = content_of(f.client->requests.at(0), "user");
  // The starting point, before the kernel to change (the graph's reference).
  size_t start = coder.find("is a correct starting point");
  size_t parent = coder.find("## The kernel to change");
  REQUIRE(start < parent);
  std::string starting_point = coder.substr(start, parent - start);
  CHECK_THAT(
      starting_point,
      Catch::Contains("a candidate's source for\n// node(s) 0 (scores), 1 (probs), 2 (mix)"));
  // Neither the softmax nor the second matmul is its plain reference.
  for (size_t i = 1; i < 3; ++i)
    CHECK(starting_point.find(graph->graph->nodes[i].op.reference_source.substr(0, 60)) ==
          std::string::npos);
}

TEST_CASE("the repairer's prompt carries the verbatim diagnostics and the earlier rounds; its "
          "answer gives the fix",
          "[agents][backend]") {
  fixture f;
  f.client->answers.push_back(
      "```json\n{\"diagnosis\": \"typo\", \"fix_summary\": \"renamed\"}\n```\n```cuda\n" + kernel +
      "```");
  engine::repair_request request;
  request.subject = &f.relu;
  request.plan = engine::plan{"custom", "vectorize", {{"idea", "v"}}, 0, ""};
  request.source = f.reference + "KS_FAKE_COMPILE_ERROR\n";
  request.failure_kind = "compile_error";
  request.error_text = "kernel.cu(70): error: identifier \"KS_FAKE_COMPILE_ERROR\" is undefined";
  request.history = {engine::repair_round{1, "kernel.cu(3): error: expected a ';'",
                                          "missing semicolon", "added it"}};
  auto fix = f.backend().repair(request);
  REQUIRE(fix.has_value());
  CHECK(fix->source == kernel);
  CHECK(fix->diagnosis == "typo");
  std::string prompt = content_of(f.client->requests[0], "user");
  CHECK_THAT(prompt, Catch::Contains(request.error_text));
  CHECK_THAT(prompt, Catch::Contains("What the compiler said"));
  CHECK_THAT(prompt,
             Catch::Contains("Round 1: the error was: kernel.cu(3): error: expected a ';'"));
  CHECK_THAT(prompt, Catch::Contains("Fix: added it"));
}

TEST_CASE("the client's errors pass through the backend with their kind", "[agents][backend]") {
  fixture f;
  f.client->answers.push_back(engine::fail(engine::errc::transient, "429"));
  f.client->answers.push_back(engine::fail(engine::errc::budget_spent, "spent"));
  auto plans = f.backend().propose(f.planning());
  REQUIRE_FALSE(plans.has_value());
  CHECK(plans.error().code() == engine::errc::transient);
  engine::coding_request request;
  request.subject = &f.relu;
  request.plan = engine::plan{"custom", "x", {{"idea", "x"}}, 0, ""};
  auto code = f.backend().write_code(request);
  REQUIRE_FALSE(code.has_value());
  CHECK(code.error().code() == engine::errc::budget_spent);
}

TEST_CASE("a distilled skill is loaded as learned; one that does not load is shown its "
          "problems once",
          "[agents][backend]") {
  fixture f;
  f.client->answers.push_back(std::string("```toml\nid = \"Bad Id\"\n```"));
  f.client->answers.push_back(std::string(
      "```toml\nid = \"learned_relu\"\ntitle = \"t\"\nversion = 1\nfamilies = [\"elementwise\"]\n"
      "guidance = \"g\"\n[[templates]]\nname = \"w\"\nfile = \"kernel.cu.mustache\"\n"
      "params = [ { name = \"threads\", values = [128], default = 128 } ]\n```\n"
      "```cuda\n#define T {{threads}}\n```\n"));
  agents::distill_request request;
  request.subject = &f.relu;
  request.winner_source = f.reference;
  request.reference_source = f.reference;
  request.speedup = 1.2;
  request.lineage = {
      agents::lineage_step{engine::plan{"custom", "x", {{"idea", "x"}}, 0, ""}, 0.17}};
  auto skill = f.backend().distill(request);
  REQUIRE(skill.has_value());
  CHECK(skill->id == "learned_relu");
  CHECK(skill->origin == engine::skill_origin::learned);
  CHECK(skill->templates.size() == 1);
  CHECK_THAT(f.client->requests[1].messages.back().content, Catch::Contains("does not load"));
  std::string prompt = content_of(f.client->requests[0], "user");
  CHECK_THAT(prompt, Catch::Contains("1.2 times faster"));
  CHECK_THAT(prompt, Catch::Contains("{{task.NAME}}"));
}

TEST_CASE("every prompt template renders with no name left undefined", "[agents][backend]") {
  fixture f;
  engine::backend_context context{f.skills, "sm_90a", "abi"};
  CHECK(f.prompts->planner(f.planning(), context).has_value());
  engine::planning_request bare;
  bare.subject = &f.relu;
  auto rendered = f.prompts->planner(bare, context);
  REQUIRE(rendered.has_value());
  CHECK_THAT(rendered->back().content, Catch::Contains("Not measured"));
  CHECK_THAT(rendered->back().content, Catch::Contains("Nothing yet."));
  engine::coding_request c;
  c.subject = &f.relu;
  CHECK(f.prompts->coder(c, context).has_value());
  engine::repair_request r;
  r.subject = &f.relu;
  CHECK(f.prompts->repairer(r, context).has_value());
  agents::distill_request d;
  d.subject = &f.relu;
  CHECK(f.prompts->distiller(d, context).has_value());
  CHECK(f.prompts->retry("oops").has_value());
}

TEST_CASE("a prompt that names something the data lacks fails, naming it and the file",
          "[agents][backend]") {
  test::test_context ctx;
  for (const std::string& name : agents::prompt_library::file_names())
    ctx.write("prompts/" + name, test::read_file(test::source_dir() / "agents" / "prompts" / name));
  ctx.write("prompts/coder.md", "{{plan.description}} {{plan.colour}}");
  auto prompts = agents::prompt_library::load(ctx.dir() / "prompts");
  REQUIRE(prompts.has_value());
  fixture f;
  engine::coding_request c;
  c.subject = &f.relu;
  auto rendered = prompts->coder(c, engine::backend_context{});
  REQUIRE_FALSE(rendered.has_value());
  CHECK_THAT(rendered.error().message(), Catch::Contains("coder.md uses {{plan.colour}}"));
  fs::remove(ctx.dir() / "prompts" / "retry.md");
  auto missing = agents::prompt_library::load(ctx.dir() / "prompts");
  REQUIRE_FALSE(missing.has_value());
  CHECK_THAT(missing.error().message(), Catch::Contains("has no retry.md"));
}

TEST_CASE("the replay service answers the same requests with the recorded replies, once each",
          "[agents][backend]") {
  test::test_context ctx;
  agents::transcript t;
  t.id = 1;
  t.role = "coder";
  t.task = "relu";
  t.node = 2;
  t.messages = {{"user", "write it"}};
  t.reply = "recorded";
  t.input_tokens = 10;
  t.output_tokens = 4;
  REQUIRE(agents::write_transcript(ctx.dir() / "recorded", t, {}).has_value());
  agents::replay_options o;
  o.recorded = ctx.dir() / "recorded";
  o.transcripts_dir = ctx.dir() / "again";
  o.price = agents::model_price{1e6, 0};
  auto replay = agents::replay_service::open(o);
  REQUIRE(replay.has_value());
  agents::model_request same{"coder", "relu", 2, {{"user", "reworded but same node"}}, 10, 0};
  auto reply = (*replay)->complete(same);
  REQUIRE(reply.has_value());
  CHECK(reply->text == "recorded");
  CHECK(reply->cost == Approx(10));
  auto again = (*replay)->complete(same);
  REQUIRE_FALSE(again.has_value());
  CHECK_THAT(again.error().message(),
             Catch::Contains("hold no reply for the coder of task 'relu'"));
  CHECK((*replay)->stats().total.input_tokens == 10);
  CHECK(agents::read_transcripts(ctx.dir() / "again")->size() == 2);
}

TEST_CASE("make_backend makes every model backend around the client it is given",
          "[agents][backend]") {
  fixture f;
  for (const char* name : {"openai", "anthropic", "replay"}) {
    CHECK(agents::needs_model(name));
    auto without =
        agents::make_backend(name, engine::backend_settings{}, engine::backend_context{});
    REQUIRE_FALSE(without.has_value());
    CHECK_THAT(without.error().message(), Catch::Contains("needs a model service"));
    auto made = agents::make_backend(name, engine::backend_settings{}, engine::backend_context{},
                                     agents::model_wiring{f.client, f.prompts});
    REQUIRE(made.has_value());
    CHECK((*made)->name() == name);
  }
  CHECK_FALSE(agents::needs_model("offline"));
}

TEST_CASE("make_model_service refuses an api_key_env that names an unset variable, and never "
          "says the key",
          "[agents][backend]") {
  agents::service_settings s;
  s.backend = "openai";
  s.model = "m";
  s.api_key_env = "KS_TEST_SURELY_UNSET_KEY";
  ::unsetenv("KS_TEST_SURELY_UNSET_KEY");
  auto made = agents::make_model_service(s);
  REQUIRE_FALSE(made.has_value());
  CHECK_THAT(made.error().message(), Catch::Contains("KS_TEST_SURELY_UNSET_KEY, which is not set"));
  ::setenv("KS_TEST_SURELY_UNSET_KEY", "sk-value", 1);
  auto ok = agents::make_model_service(s);
  ::unsetenv("KS_TEST_SURELY_UNSET_KEY");
  REQUIRE(ok.has_value());
  s.backend = "offline";
  CHECK_FALSE(agents::make_model_service(s).has_value());
}
