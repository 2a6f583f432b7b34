#include "gpu/child_process.hpp"
#include "gpu/compiler.hpp"
#include "gpu/content_hash.hpp"
#include "gpu/worker_sandbox.hpp"
#include "tests/test_context.hpp"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using ks::gpu::compile_request;
using ks::gpu::compile_result;
using ks::gpu::compiler;
using ks::gpu::compiler_options;

namespace {

// A small valid candidate; its kernel holds 4096 bytes of static shared memory.
const char* const relu_source = R"(#include <kernelskill/abi.h>

__global__ void relu(const float* x, float* y, long n) {
  __shared__ float tile[1024];
  long i = blockIdx.x * (long) blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n)
    y[i] = tile[threadIdx.x] > 0.f ? tile[threadIdx.x] : 0.f;
}

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  long n = ks_numel(&inputs[0]);
  relu<<<(unsigned) ((n + 1023) / 1024), 1024, 0, (cudaStream_t) cuda_stream>>>(
    (const float*) inputs[0].data, (float*) outputs[0].data, n);
  return 0;
}
)";

// Returns a minimal candidate whose only kernel is called `name`.
std::string named_source(const std::string& name) {
  return "#include <kernelskill/abi.h>\n"
         "__global__ void " +
         name +
         "(float* y) { y[threadIdx.x] = 1.f; }\n"
         "extern \"C\" int ks_forward(const ks_tensor*, int32_t, ks_tensor* out, int32_t,\n"
         "                            void* s) {\n"
         "  " +
         name +
         "<<<1, 32, 0, (cudaStream_t) s>>>((float*) out[0].data);\n"
         "  return 0;\n"
         "}\n";
}

compiler make_compiler(const fs::path& cache_dir, std::chrono::milliseconds timeout = 120s,
                       int32_t jobs = 0, std::string arch = "sm_90a") {
  compiler_options options;
  options.cache_dir = cache_dir;
  options.include_dir = ks::test::source_dir() / "gpu" / "include";
  options.timeout = timeout;
  options.jobs = jobs;
  options.arch = std::move(arch);
  auto made = compiler::create(options);
  if (!made)
    FAIL("cannot create the compiler: " << made.error().message());
  return std::move(*made);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("a good candidate compiles to a shared object and is then served from the cache",
          "[compiler]") {
  ks::test::test_context ctx;
  compiler cc = make_compiler(ctx.dir() / "cache");
  compile_request request{relu_source, "relu.cu", {}};

  compile_result cold = cc.compile(request);
  INFO(cold.diagnostics);
  REQUIRE(cold.ok);
  CHECK_FALSE(cold.cached);
  CHECK_FALSE(cold.timed_out);
  CHECK(cold.key == cc.key_of(request));
  CHECK(cold.key.size() == 32);
  REQUIRE(fs::is_regular_file(cold.shared_object));
  CHECK(cold.shared_object ==
        ctx.dir() / "cache" / "compile" / cold.key.substr(0, 2) / cold.key / "kernel.so");
  CHECK(ks::test::read_file(cold.shared_object.parent_path() / "kernel.cu") == relu_source);
  CHECK(fs::is_regular_file(cold.shared_object.parent_path() / "result.json"));
  CHECK(fs::is_regular_file(cold.shared_object.parent_path() / "diagnostics.txt"));

  auto nm = ks::gpu::run_to_completion({"nm", "-D", cold.shared_object.string()}, 30s);
  REQUIRE(nm);
  CHECK(contains(nm->out, " T ks_forward"));

  // Resources from -Xptxas -v, for the kernel with __shared__ float tile[1024].
  REQUIRE(cold.kernels.size() == 1);
  CHECK(cold.kernels[0].mangled == "_Z4reluPKfPfl");
  CHECK(cold.kernels[0].name == "relu(float const*, float*, long)");
  CHECK(cold.kernels[0].registers > 0);
  CHECK(cold.kernels[0].shared_bytes == int64_t{1024} * 4);
  CHECK(cold.kernels[0].spill_stores == 0);
  CHECK(cold.kernels[0].spill_loads == 0);

  compile_result hit = cc.compile(request);
  REQUIRE(hit.ok);
  CHECK(hit.cached);
  CHECK(hit.key == cold.key);
  CHECK(hit.shared_object == cold.shared_object);
  CHECK(hit.diagnostics == cold.diagnostics);
  REQUIRE(hit.kernels.size() == 1);
  CHECK(hit.kernels[0].registers == cold.kernels[0].registers);
  CHECK(hit.kernels[0].shared_bytes == 4096);
  CHECK(hit.wall_ms < cold.wall_ms / 10);

  // A compiler on the same cache whose nvcc cannot finish: a hit is served, a miss times out.
  compiler impatient = make_compiler(ctx.dir() / "cache", 1ms);
  CHECK(impatient.compile(request).cached);
  compile_request edited = request;
  edited.source += "// an edit\n";
  CHECK(impatient.key_of(edited) != cold.key);
  CHECK(impatient.compile(edited).timed_out);
  compile_request flagged = request;
  flagged.extra_flags = {"-DKS_TILE=64"};
  CHECK(impatient.key_of(flagged) != cold.key);
  CHECK(impatient.compile(flagged).timed_out);
  CHECK(contains(cc.key_dump(flagged), "flag (12 bytes): \"-DKS_TILE=64\""));
}

TEST_CASE("a syntax error gives nvcc's diagnostics verbatim, and is cached too", "[compiler]") {
  ks::test::test_context ctx;
  compiler cc = make_compiler(ctx.dir() / "cache");
  compile_request request{"#include <kernelskill/abi.h>\n"
                          "__global__ void broken(float* y) {\n"
                          "  y[0] = undefined_name;\n"
                          "}\n",
                          "broken.cu",
                          {}};
  compile_result failed = cc.compile(request);
  CHECK_FALSE(failed.ok);
  CHECK_FALSE(failed.cached);
  CHECK_FALSE(failed.timed_out);
  CHECK(failed.shared_object.empty());
  CHECK(contains(failed.diagnostics, "kernel.cu(3)"));
  CHECK(contains(failed.diagnostics, "error"));
  CHECK(contains(failed.diagnostics, "undefined_name"));

  compile_result again = cc.compile(request);
  CHECK_FALSE(again.ok);
  CHECK(again.cached);
  CHECK(again.diagnostics == failed.diagnostics);
}

TEST_CASE("diagnostics name the file a request names, at nvcc's line, cached or not, and the "
          "name is not part of the key",
          "[compiler]") {
  ks::test::test_context ctx;
  compiler cc = make_compiler(ctx.dir() / "cache");
  compile_request request{"#include <kernelskill/abi.h>\n"
                          "__global__ void broken(float* y) {\n"
                          "  y[0] = undefined_name;\n"
                          "}\n",
                          "broken.cu",
                          {}};
  request.source_name = "ops/my kernel.cu";
  compile_result fresh = cc.compile(request);
  CHECK_FALSE(fresh.ok);
  CHECK(contains(fresh.diagnostics, "ops/my kernel.cu:3: error"));
  CHECK_FALSE(contains(fresh.diagnostics, "kernel.cu(3)"));
  compile_result cached = cc.compile(request);
  CHECK(cached.cached);
  CHECK(cached.diagnostics == fresh.diagnostics);
  // Another name, the same entry: the name is not in the key.
  compile_request elsewhere = request;
  elsewhere.source_name = "other.cu";
  CHECK(cc.key_of(elsewhere) == cc.key_of(request));
  CHECK(contains(cc.compile(elsewhere).diagnostics, "other.cu:3: error"));
}

TEST_CASE("name_source_in_diagnostics rewrites nvcc's and the host compiler's positions only",
          "[compiler]") {
  using ks::gpu::name_source_in_diagnostics;
  CHECK(name_source_in_diagnostics("kernel.cu(44): error: x\n", "a/b.cu") ==
        "a/b.cu:44: error: x\n");
  CHECK(name_source_in_diagnostics("kernel.cu:12:5: error: y", "b.cu") == "b.cu:12:5: error: y");
  CHECK(name_source_in_diagnostics("1 error detected in the compilation of \"kernel.cu\".",
                                   "b.cu") == "1 error detected in the compilation of \"b.cu\".");
  // Another file that merely ends in kernel.cu is left alone.
  CHECK(name_source_in_diagnostics("my_kernel.cu(3): error", "b.cu") == "my_kernel.cu(3): error");
}

TEST_CASE("parse_ptxas_report reads registers, shared memory, stack and spills", "[compiler]") {
  const std::string report =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z4reluPKfPfl' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z4reluPKfPfl\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers, used 0 barriers, 380 bytes cmem[0]\n"
      "ptxas info    : Compile time = 1.971 ms\n"
      "ptxas info    : Compiling entry function 'tiled' for 'sm_90a'\n"
      "ptxas info    : Function properties for tiled\n"
      "    24 bytes stack frame, 16 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0]\n"
      "ptxas info    : Function properties for _Z5twicef\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
  auto kernels = ks::gpu::parse_ptxas_report(report);
  REQUIRE(kernels.size() == 2); // _Z5twicef is a device function, not a kernel
  CHECK(kernels[0].mangled == "_Z4reluPKfPfl");
  CHECK(kernels[0].name == "relu(float const*, float*, long)");
  CHECK(kernels[0].registers == 10);
  CHECK(kernels[0].shared_bytes == 0);
  CHECK(kernels[0].stack_bytes == 0);
  CHECK(kernels[1].name == "tiled"); // extern "C": nothing to demangle
  CHECK(kernels[1].mangled == "tiled");
  CHECK(kernels[1].registers == 32);
  CHECK(kernels[1].shared_bytes == 4096);
  CHECK(kernels[1].stack_bytes == 24);
  CHECK(kernels[1].spill_stores == 16);
  CHECK(kernels[1].spill_loads == 8);
  CHECK(ks::gpu::parse_ptxas_report("").empty());
  CHECK(ks::gpu::parse_ptxas_report("kernel.cu(3): error: something\n").empty());
}

TEST_CASE("ks-flags outside the whitelist are refused with the whitelist", "[compiler]") {
  SECTION("allowed flags are returned in order") {
    auto flags = ks::gpu::parse_ks_flags("// a candidate\n"
                                         "// ks-flags: -lcublas -DTILE=64 --use_fast_math\n"
                                         "  //ks-flags: -maxrregcount=64 -Xptxas=-O3,-v\n"
                                         "__global__ void k() {}\n");
    REQUIRE(flags);
    CHECK(*flags == std::vector<std::string>{"-lcublas", "-DTILE=64", "--use_fast_math",
                                             "-maxrregcount=64", "-Xptxas=-O3,-v"});
    CHECK(ks::gpu::parse_ks_flags("__global__ void k() {}\n")->empty());
  }
  SECTION("anything else names the flag and the whitelist") {
    for (const char* bad : {"-o /etc/passwd", "-Xptxas=-o,/tmp/x", "-ccbin=/bin/evil", "-l-o",
                            "-maxrregcount=lots", "-D=1", "--keep"}) {
      auto flags = ks::gpu::parse_ks_flags(std::string("// ks-flags: ") + bad + "\n");
      INFO(bad);
      REQUIRE_FALSE(flags);
      CHECK(flags.error().code() == ks::engine::errc::invalid_input);
      CHECK(contains(flags.error().message(), "-maxrregcount=<N>"));
    }
  }
  SECTION("compile refuses the source without running nvcc") {
    ks::test::test_context ctx;
    compiler cc = make_compiler(ctx.dir() / "cache");
    compile_request request{
        std::string("// ks-flags: -o /etc/passwd\n") + relu_source, "evil.cu", {}};
    compile_result result = cc.compile(request);
    CHECK_FALSE(result.ok);
    CHECK(contains(result.diagnostics, "'-o' is not allowed"));
    CHECK(contains(result.diagnostics, "-l<library>"));
    CHECK(result.wall_ms < 500);
    for (const auto& arg : cc.command_for(request))
      CHECK(arg != "/etc/passwd");
  }
  SECTION("allowed flags reach the nvcc command line") {
    ks::test::test_context ctx;
    compiler cc = make_compiler(ctx.dir() / "cache");
    auto command = cc.command_for({"// ks-flags: -lcublas\n__global__ void k() {}\n", "", {"-DX"}});
    REQUIRE(command.size() >= 2);
    CHECK(command[command.size() - 2] == "-DX");
    CHECK(command.back() == "-lcublas");
  }
}

TEST_CASE("compile_all compiles several sources and returns them in order", "[compiler]") {
  ks::test::test_context ctx;
  compiler cc = make_compiler(ctx.dir() / "cache", 120s, 3);
  std::vector<compile_request> requests = {{named_source("first"), "a.cu", {}},
                                           {named_source("second"), "b.cu", {}},
                                           {named_source("first"), "a-again.cu", {}},
                                           {named_source("third"), "c.cu", {}}};
  auto results = cc.compile_all(requests);
  REQUIRE(results.size() == 4);
  const char* names[] = {"first(float*)", "second(float*)", "first(float*)", "third(float*)"};
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(i << ": " << results[i].diagnostics);
    REQUIRE(results[i].ok);
    CHECK(results[i].key == cc.key_of(requests[i]));
    REQUIRE(results[i].kernels.size() == 1);
    CHECK(results[i].kernels[0].name == names[i]);
  }
  // The duplicate compiled once: same entry, served without its own nvcc run.
  CHECK(results[2].key == results[0].key);
  CHECK(results[2].shared_object == results[0].shared_object);
  CHECK(results[2].cached);
  CHECK_FALSE(results[0].cached);
  CHECK(results[1].key != results[0].key);
  CHECK(results[3].shared_object != results[1].shared_object);
}

TEST_CASE("a compile that runs past its timeout is reported and not cached", "[compiler]") {
  ks::test::test_context ctx;
  compiler cc = make_compiler(ctx.dir() / "cache", 1ms);
  compile_request request{relu_source, "relu.cu", {}};
  compile_result result = cc.compile(request);
  CHECK_FALSE(result.ok);
  CHECK(result.timed_out);
  CHECK_FALSE(result.cached);
  CHECK(contains(result.diagnostics, "nvcc timed out after 1 ms"));
  CHECK(result.wall_ms < 10000);
  // Neither an entry nor a half-built folder is left behind.
  fs::path shard = ctx.dir() / "cache" / "compile" / result.key.substr(0, 2);
  CHECK_FALSE(fs::exists(shard / result.key));
  CHECK((!fs::exists(shard) || fs::is_empty(shard)));
}

TEST_CASE("the compiler maps architectures and explains what is missing", "[compiler]") {
  CHECK(ks::gpu::arch_for(9, 0) == "sm_90a");
  CHECK(ks::gpu::arch_for(10, 0) == "sm_100a");
  CHECK(ks::gpu::arch_for(8, 9) == "sm_89");
  CHECK(ks::gpu::arch_for(8, 0) == "sm_80");

  ks::test::test_context ctx;
  compiler ampere = make_compiler(ctx.dir() / "cache", 120s, 0, "sm_80");
  auto command = ampere.command_for({"", "", {}});
  CHECK(std::find(command.begin(), command.end(), "-gencode=arch=compute_80,code=sm_80") !=
        command.end());
  compiler hopper = make_compiler(ctx.dir() / "cache");
  command = hopper.command_for({"", "", {}});
  CHECK(std::find(command.begin(), command.end(), "-gencode=arch=compute_90a,code=sm_90a") !=
        command.end());
  CHECK(hopper.options().jobs > 0);
  CHECK(contains(hopper.nvcc_version(), "Cuda compilation tools"));
  CHECK(hopper.key_of({"x", "", {}}) != ampere.key_of({"x", "", {}}));

  compiler_options options;
  options.include_dir = ks::test::source_dir() / "gpu" / "include";
  options.arch = "hopper";
  auto bad_arch = compiler::create(options);
  REQUIRE_FALSE(bad_arch);
  CHECK(bad_arch.error().code() == ks::engine::errc::invalid_input);

  options.arch = "sm_90a";
  options.nvcc = "/nonexistent/nvcc";
  auto no_nvcc = compiler::create(options);
  REQUIRE_FALSE(no_nvcc);
  CHECK(no_nvcc.error().code() == ks::engine::errc::not_found);
  CHECK(contains(no_nvcc.error().message(), "/nonexistent/nvcc"));

  options.nvcc.clear();
  options.include_dir = ctx.dir();
  auto no_header = compiler::create(options);
  REQUIRE_FALSE(no_header);
  CHECK(no_header.error().code() == ks::engine::errc::not_found);
  CHECK(contains(no_header.error().message(), "KS_INCLUDE_DIR"));
}

TEST_CASE("a content key hashes a tag and a length before each field", "[compiler]") {
  ks::gpu::content_hasher a;
  a.update("source", "ab");
  a.update("flag", "c");
  ks::gpu::content_hasher b;
  b.update("source", "a");
  b.update("flag", "bc");
  ks::gpu::content_hasher c;
  c.update("source", "ab");
  c.update("flag", "c");
  ks::gpu::content_hasher d;
  d.update("flag", "ab");
  d.update("flag", "c");
  CHECK(a.hex_digest().size() == 32);
  CHECK(a.hex_digest() == c.hex_digest());
  CHECK(a.hex_digest() != b.hex_digest()); // bytes moved between fields
  CHECK(a.hex_digest() != d.hex_digest()); // same bytes, another tag
  CHECK(ks::gpu::content_hasher().hex_digest() != a.hex_digest());
  CHECK(a.debug_dump() == "source (2 bytes): \"ab\"\nflag (1 bytes): \"c\"\n");

  ks::gpu::content_hasher copy = a;
  copy.update("more", std::string(100, 'x'));
  CHECK(copy.hex_digest() != a.hex_digest());
  CHECK(a.hex_digest() == c.hex_digest());
  CHECK(contains(copy.debug_dump(), "more (100 bytes): \"" + std::string(64, 'x') + "...\""));
}

TEST_CASE("in the sandbox nvcc reads no file outside the candidate's folder and the include "
          "folders",
          "[compiler][sandbox]") {
  ks::test::test_context ctx;
  // Planted beside the compile cache: the assembler's .incbin embeds any file it can open,
  // past the include check, which sees no #include.
  const std::string secret = "ks-planted-secret-5f1d";
  fs::path planted = ctx.write("secret.txt", secret + "\n");
  const std::string embeds =
      std::string(relu_source) + "asm(\".incbin \\\"" + planted.string() + "\\\"\");\n";

  compiler_options options;
  options.cache_dir = ctx.dir() / "cache";
  options.include_dir = ks::test::source_dir() / "gpu" / "include";
  options.boundary.temp_root = ctx.dir();
  options.boundary.sandbox = ks::gpu::sandbox_mode::bubblewrap;
  if (auto support = ks::gpu::probe_sandbox(options.boundary); !support)
    KS_SKIP("no sandbox here: " + support.error().message());
  auto boxed = compiler::create(options);
  REQUIRE(boxed);
  options.boundary.sandbox = ks::gpu::sandbox_mode::off;
  auto open = compiler::create(options);
  REQUIRE(open);

  // Outside the sandbox the planted file is read (the test's premise) ...
  compile_result unsandboxed = open->compile({embeds, "embeds", {}});
  INFO(unsandboxed.diagnostics);
  REQUIRE(unsandboxed.ok);
  CHECK(contains(ks::test::read_file(unsandboxed.shared_object), secret));
  // ... inside it is not there, and a candidate that needs only the system's headers and ours
  // compiles, with a key of its own (never the unsandboxed shared object from the cache).
  compile_result sandboxed = boxed->compile({embeds, "embeds", {}});
  INFO(sandboxed.diagnostics);
  CHECK_FALSE(sandboxed.ok);
  CHECK_FALSE(sandboxed.host_fault);
  CHECK(contains(sandboxed.diagnostics, "file not found"));
  CHECK_FALSE(contains(sandboxed.diagnostics, secret));
  CHECK(sandboxed.key != unsandboxed.key);
  compile_result relu = boxed->compile({relu_source, "relu", {}});
  INFO(relu.diagnostics);
  CHECK(relu.ok);
  CHECK(relu.kernels.size() == 1);
}

TEST_CASE("where bubblewrap may make no pid namespace, nvcc still compiles in the sandbox, which "
          "shows no /proc",
          "[compiler][sandbox]") {
  ks::test::test_context ctx;
  std::string real_bwrap;
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"})
    if (::access((std::string(dir) + "/bwrap").c_str(), X_OK) == 0) {
      real_bwrap = std::string(dir) + "/bwrap";
      break;
    }
  if (real_bwrap.empty())
    KS_SKIP("no bwrap installed (apt-get install bubblewrap)");
  // A bwrap that refuses a pid namespace as a container does that forbids mounting a fresh
  // /proc, and is the real one otherwise.
  fs::path fake = ctx.write("bwrap", "#!/bin/sh\n"
                                     "for a in \"$@\"; do\n"
                                     "  if [ \"$a\" = --unshare-pid ]; then\n"
                                     "    echo 'bwrap: Can'\\''t mount proc on /newroot/proc: "
                                     "Operation not permitted' >&2; exit 1\n"
                                     "  fi\n"
                                     "done\n"
                                     "exec " +
                                         real_bwrap + " \"$@\"\n");
  fs::permissions(fake, fs::perms::owner_all);

  compiler_options options;
  options.cache_dir = ctx.dir() / "cache";
  options.include_dir = ks::test::source_dir() / "gpu" / "include";
  options.boundary.temp_root = ctx.dir();
  options.boundary.sandbox = ks::gpu::sandbox_mode::bubblewrap;
  options.boundary.bwrap = fake.string();
  auto support = ks::gpu::probe_sandbox(options.boundary);
  if (!support)
    KS_SKIP("no sandbox here: " + support.error().message());
  REQUIRE_FALSE(support->pid_namespace); // the fake's refusal took the fallback
  auto boxed = compiler::create(options);
  INFO((boxed ? std::string() : boxed.error().message()));
  REQUIRE(boxed);

  compile_result relu = boxed->compile({relu_source, "relu", {}});
  INFO(relu.diagnostics);
  CHECK(relu.ok);
  CHECK(relu.kernels.size() == 1);
  // The host's /proc would show every process's environment: the sandbox has none at all.
  const std::string reads_proc =
      std::string(relu_source) + "asm(\".incbin \\\"/proc/self/environ\\\"\");\n";
  compile_result proc = boxed->compile({reads_proc, "reads_proc", {}});
  INFO(proc.diagnostics);
  CHECK_FALSE(proc.ok);
  CHECK_FALSE(proc.host_fault);
  CHECK(contains(proc.diagnostics, "file not found"));
}

TEST_CASE("a sandbox that nvcc cannot run in fails the compiler's creation, saying why",
          "[compiler][sandbox]") {
  ks::test::test_context ctx;
  compiler_options options;
  options.cache_dir = ctx.dir() / "cache";
  options.include_dir = ks::test::source_dir() / "gpu" / "include";
  auto open = compiler::create(options);
  REQUIRE(open);
  options.boundary.temp_root = ctx.dir();
  options.boundary.sandbox = ks::gpu::sandbox_mode::bubblewrap;
  if (auto support = ks::gpu::probe_sandbox(options.boundary); !support)
    KS_SKIP("no sandbox here: " + support.error().message());
  // An nvcc that needs a file the sandbox does not show (beside its toolkit's folder, which it
  // shows): it runs outside, and not inside.
  ctx.write("outside", "");
  fs::path nvcc = ctx.write("toolkit/bin/nvcc", "#!/bin/sh\n"
                                                "[ -e '" +
                                                    (ctx.dir() / "outside").string() +
                                                    "' ] || { echo 'needs a file outside' >&2; "
                                                    "exit 7; }\n"
                                                    "exec '" +
                                                    open->options().nvcc.string() + "' \"$@\"\n");
  fs::permissions(nvcc, fs::perms::owner_all);
  options.nvcc = nvcc;
  auto boxed = compiler::create(options);
  REQUIRE_FALSE(boxed);
  CHECK(boxed.error().code() == ks::engine::errc::subprocess);
  INFO(boxed.error().message());
  CHECK(contains(boxed.error().message(),
                 "bench.sandbox = true but nvcc cannot run in bubblewrap's sandbox on this host"));
  CHECK(contains(boxed.error().message(), "needs a file outside"));
  // Nothing is left in the cache of the try.
  CHECK(fs::is_empty(ctx.dir() / "cache" / "compile" / "sandbox"));
}
